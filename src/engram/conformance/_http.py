"""The runner's own small HTTP client: every exchange is logged so checks judge what was seen.

The conformance package does not use ``engram.runtime`` (an import-linter contract): a bug the SDK
hides must not hide from the probe. Responses are parsed with the strict I-JSON parser, so a
provider that emits duplicate members or non-finite numbers fails on the wire rather than being
coerced. A provider that cannot be reached raises :class:`engram.errors.RemoteError`
(docs/spec/conformance-bundle.md, "Provider runner").
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import httpx

from engram.core.canonical import Json, parse_strict
from engram.errors import EngramError, RemoteError
from engram.fetch import ASKED_ENCODINGS, read_capped_async

USER_AGENT = "engram-conformance"


@dataclass(frozen=True)
class Exchange:
    """One request the suite sent and what came back."""

    method: str
    path: str
    status: int
    body: Json
    parse_error: str | None
    judged: bool = True
    """False for the suite's own administration (engram's admin API used to set up a probe):
    such answers are no evidence about the page's error shape."""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


MAX_PROBE_ANSWER = 64 << 20
"""Bytes of one provider answer the probe reads (decoded); a larger one stops the run."""


@dataclass
class ProbeClient:
    """An async HTTP client bound to one provider base URL, recording each exchange."""

    http: httpx.AsyncClient
    base_url: str
    log: list[Exchange] = field(default_factory=list)
    deadline: float = 120.0
    """Seconds one exchange may take in all (a provider that drips is cut off here)."""

    async def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        params: dict[str, str] | None = None,
        json_body: object = None,
        judged: bool = True,
    ) -> Exchange:
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        headers["Accept-Encoding"] = ASKED_ENCODINGS
        url = self.base_url.rstrip("/") + path
        what = f"the answer to {method} {path}"
        try:
            # The fetch discipline (docs/spec/limits.md §1): one deadline, a capped body.
            async with asyncio.timeout(self.deadline):
                request = self.http.build_request(
                    method, url, headers=headers, params=params, json=json_body
                )
                response = await self.http.send(request, stream=True)
                try:
                    content = await read_capped_async(response, MAX_PROBE_ANSWER, what)
                finally:
                    await response.aclose()
        except (httpx.HTTPError, httpx.InvalidURL, TimeoutError) as e:
            # No answer is not a disposition of any requirement: the run stops here, and
            # nothing (no report, no bundle) claims to describe a host that was not observed.
            detail = (
                f"no complete answer within {self.deadline:g} s"
                if isinstance(e, TimeoutError)
                else f"{type(e).__name__} {' '.join(str(e).split())[:200]}"
            )
            raise RemoteError(
                f"cannot reach the provider at {self.base_url} ({method} {path}): {detail}".rstrip()
            ) from e
        body: Json = None
        problem: str | None = None
        if content:
            try:
                body = parse_strict(content)
            except EngramError as e:
                problem = e.message
        exchange = Exchange(method, path, response.status_code, body, problem, judged)
        self.log.append(exchange)
        return exchange

    async def get(
        self, path: str, *, token: str | None = None, params: dict[str, str] | None = None
    ) -> Exchange:
        return await self.request("GET", path, token=token, params=params)

    async def post(
        self, path: str, body: object, *, token: str | None = None, judged: bool = True
    ) -> Exchange:
        return await self.request("POST", path, token=token, json_body=body, judged=judged)


__all__ = ["USER_AGENT", "Exchange", "ProbeClient"]
