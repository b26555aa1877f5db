"""One OpenAI-compatible chat model: the request the distiller and the fact extractor send.

docs/llm-and-embeddings.md: ``POST /v1/chat/completions`` with ``temperature: 0`` and one user
message, through ``engram.fetch`` (a deadline and a byte cap), the answer's first choice's text
returned; every failure is one :class:`~engram.errors.RemoteError` line naming the endpoint and
what was being done. ``ChatDistiller`` and ``ChatFactExtractor`` differ only in their prompt and
in how they read the text, so both hold one of these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram.errors import RemoteError

if TYPE_CHECKING:  # httpx costs 70 ms to import: only a remote stage needs it
    import httpx


class ChatModel:
    """``model`` at ``endpoint`` (a base URL, with or without ``/v1``)."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        base = endpoint.rstrip("/")
        self.url = (base[:-3] if base.endswith("/v1") else base) + "/v1/chat/completions"
        self.model = model
        from engram.fetch import model_fetcher

        self._client = model_fetcher(self.url, timeout, transport)

    def complete(self, prompt: str, doing: str) -> str:
        """The model's answer to ``prompt``; ``doing`` names the task in an error line."""
        from engram.fetch import FetchError, post_json

        request = {
            "model": self.model,
            "temperature": 0,
            "messages": [{"role": "user", "content": prompt}],
        }
        try:
            body: Any = post_json(self._client, self.url, request)
            content = body["choices"][0]["message"]["content"]
        except FetchError as e:
            raise RemoteError(f"{self.url}: {doing} failed: {e.message}") from e
        except (KeyError, IndexError, TypeError) as e:
            raise RemoteError(f"{self.url}: {doing} failed: {type(e).__name__}") from e
        if not isinstance(content, str):
            raise RemoteError(f"{self.url}: no text in the response")
        return content


__all__ = ["ChatModel"]
