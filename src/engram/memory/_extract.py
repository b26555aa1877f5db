"""Facts from a conversation, written by an OpenAI-compatible chat model (optional).

Beyond engram.ote.v1 (issue 29). :func:`engram.memory.record_conversation` keeps every turn as a
memory; with an extractor it also records the facts a model finds in the new turns, each citing
the turns it came from. The request is the one ``ChatDistiller`` sends (``POST
/v1/chat/completions``, ``temperature: 0``, one user message; docs/llm-and-embeddings.md), asking
for a JSON object ``{"facts": ["...", ...]}``. Rules: docs/spec/memory-conversations.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from engram.errors import RemoteError
from engram.memory._chat import ChatModel

if TYPE_CHECKING:  # httpx costs 70 ms to import: only a remote stage needs it
    import httpx

MAX_FACTS = 50  # per window; more is an answer that is not what was asked for
MAX_FACT_CHARS = 2_000
WINDOW_TURNS = 40  # turns sent in one request
WINDOW_CHARS = 24_000  # characters of turns sent in one request
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?|\n?\s*```\s*$")


class FactExtractor(Protocol):
    name: str

    def extract(self, lines: Sequence[str]) -> list[str]:
        """The facts stated in ``lines`` (one conversation turn each, in order)."""
        ...


def windows(lines: Sequence[str]) -> list[range]:
    """Consecutive spans of ``lines`` of at most WINDOW_TURNS lines and WINDOW_CHARS characters
    (a longer line is a window of its own)."""
    out: list[range] = []
    start, size = 0, 0
    for i, line in enumerate(lines):
        if i > start and (i - start == WINDOW_TURNS or size + len(line) > WINDOW_CHARS):
            out.append(range(start, i))
            start, size = i, 0
        size += len(line)
    if start < len(lines):
        out.append(range(start, len(lines)))
    return out


def parse_facts(content: str, where: str) -> list[str]:
    """The facts of a model's answer: ``{"facts": [...]}`` or a bare list, in a code fence or
    not; anything else is a :class:`RemoteError`."""
    try:
        value: Any = json.loads(_FENCE.sub("", content.strip()))
    except (ValueError, RecursionError) as e:
        raise RemoteError(f"{where}: the answer is not the JSON asked for") from e
    if isinstance(value, dict):
        value = value.get("facts")
    if not isinstance(value, list) or not all(isinstance(f, str) for f in value):
        raise RemoteError(f'{where}: expected {{"facts": [strings]}} in the answer')
    if len(value) > MAX_FACTS:
        raise RemoteError(f"{where}: more than {MAX_FACTS} facts in one answer")
    facts: list[str] = []
    for fact in value:
        text = " ".join(fact.split())
        if text and text not in facts:
            facts.append(text[:MAX_FACT_CHARS])
    return facts


class ChatFactExtractor:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint lists a conversation's facts."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._model = ChatModel(endpoint, model, timeout, transport)
        self.url = self._model.url
        self.model = model
        self.name = f"llm:{model}"

    def extract(self, lines: Sequence[str]) -> list[str]:
        prompt = (
            "List the facts worth remembering that this conversation states about its "
            "speakers and the world: one short, self-contained sentence each, naming who "
            "(never 'I' or 'you') and when if the conversation says. Answer with JSON only: "
            '{"facts": ["...", "..."]}; {"facts": []} when there is none.\n\n' + "\n".join(lines)
        )
        return parse_facts(self._model.complete(prompt, "fact extraction"), self.url)


__all__ = [
    "MAX_FACTS",
    "ChatFactExtractor",
    "FactExtractor",
    "parse_facts",
    "windows",
]
