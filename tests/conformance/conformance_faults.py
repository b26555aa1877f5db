"""A real engram provider with switchable faults, for the provider runner's fault matrix.

The provider is ``engram.provider.create_app`` over a real store; a fault is applied by an httpx
transport that sits between the runner and the in-process app and changes requests or
responses the way a faulty provider would, re-signing with the provider's own active key
where the fault is about content rather than about the signature. Each fault names the
requirement ids it must fail (issue 5, "The runner must catch real faults").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx

from engram.context import confirm_correction
from engram.context.internals import DemoSubject, seed_demo
from engram.core.canonical import canonicalize, parse_strict
from engram.core.clock import Clock, format_instant, parse_instant
from engram.core.encoding import b64url_encode
from engram.core.keys import PrivateKey
from engram.provider import ProviderConfig, create_app
from engram.store import Store
from engram.store.keys import KeyStore


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


C = "engram.context."
FAULTS: dict[str, frozenset[str]] = {
    "unauthenticated-200": frozenset({C + "p1.unauthenticated-401", C + "checklist"}),
    "expires-missing": frozenset(
        {
            C + "p1.export-200",
            C + "p1.expires-at-present",
            C + "p1.expires-within-24h",
            C + "checklist",
        }
    ),
    "expires-too-long": frozenset({C + "p1.expires-within-24h"}),
    "signature-other-bytes": frozenset({C + "p3.signature-verifies"}),
    "kid-unpublished": frozenset({C + "p3.kid-published", C + "p3.signature-verifies"}),
    "invalid-scope-accepted": frozenset({C + "p3.invalid-scope-400"}),
    "sensitive-in-professional": frozenset({C + "p3.scope-professional"}),
    "corrections-applied": frozenset({C + "p2.correction-not-applied"}),
    "diff-without-tombstones": frozenset({C + "p2.diff-tombstones"}),
    "wrong-error-shape": frozenset({C + "error-shape"}),
    "runtime-id-optional": frozenset({C + "p2.runtime-id-required"}),
}
"""Fault name -> the requirement ids the runner must fail, and no others."""

BASE_URL = "http://provider.test"


@dataclass
class FaultyProvider:
    """The real provider plus a transport that injects ``faults`` (names from :data:`FAULTS`)."""

    store: Store
    clock: Clock
    faults: frozenset[str] = frozenset()
    demo: DemoSubject = field(init=False)

    def __post_init__(self) -> None:
        unknown = self.faults - FAULTS.keys()
        assert not unknown, f"unknown faults {unknown}"
        self.app = create_app(ProviderConfig(public_url=BASE_URL), self.store, self.clock)
        self.demo = seed_demo(self.store, self.clock)
        self.inner = httpx.ASGITransport(app=self.app)

    @property
    def token(self) -> str:
        return self.demo.token

    def transport(self) -> httpx.AsyncBaseTransport:
        return _FaultTransport(self) if self.faults else self.inner

    def signing_key(self) -> PrivateKey:
        _, key = KeyStore(self.store).ensure_active(self.clock.now(), timedelta(days=90))
        return key


class _FaultTransport(httpx.AsyncBaseTransport):
    def __init__(self, provider: FaultyProvider) -> None:
        self.p = provider
        self.on = provider.faults

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        forwarded = self._request(request)
        response = await self.p.inner.handle_async_request(forwarded)
        body = await response.aread()
        # Responses are judged by what the runner asked for, not what reached the provider.
        status, body = self._response(request, response.status_code, body)
        # aread() decoded the body: its old length and Content-Encoding no longer describe it.
        dropped = ("content-length", "content-encoding")
        headers = [(k, v) for k, v in response.headers.items() if k.lower() not in dropped]
        return httpx.Response(status, headers=headers, content=body, request=forwarded)

    def _request(self, request: httpx.Request) -> httpx.Request:
        url, headers, content = request.url, dict(request.headers), request.content
        if "unauthenticated-200" in self.on and request.url.path.startswith("/v1/"):
            # Every request is served as the demo subject, token or no token.
            headers["authorization"] = f"Bearer {self.p.token}"
        if "invalid-scope-accepted" in self.on and url.params.get("scope") == "invalid":
            url = url.copy_remove_param("scope")
        if "sensitive-in-professional" in self.on and url.params.get("scope") == "professional":
            url = url.copy_remove_param("scope")
        if "runtime-id-optional" in self.on and request.url.path == "/v1/context/correct":
            body = parse_strict(content) if content else {}
            if isinstance(body, dict) and "runtime_id" not in body:
                content = canonicalize({**body, "runtime_id": "anonymous"})
        headers.pop("content-length", None)
        return httpx.Request(request.method, url, headers=headers, content=content)

    def _response(self, request: httpx.Request, status: int, body: bytes) -> tuple[int, bytes]:
        path = request.url.path
        if status >= 400:
            if "wrong-error-shape" in self.on:
                error = _parsed(body)["error"]
                return status, canonicalize({"error": {k: error[k] for k in ("code", "message")}})
            return status, body
        if path == "/v1/context/correct" and "corrections-applied" in self.on:
            answer = _parsed(body)
            confirm_correction(self.p.store, self.p.clock, self.p.demo.subject.id, answer["id"])
            return status, body
        if path == "/v1/context":
            return status, self._export(request, _parsed(body))
        if path == "/v1/context/diff" and "diff-without-tombstones" in self.on:
            return status, self._resign(_parsed(body), lambda d: d.update(tombstones=[]))
        if path == "/v1/context/diff" and "signature-other-bytes" in self.on:
            return status, self._resign(_parsed(body), other_bytes=True)
        return status, body

    def _export(self, request: httpx.Request, doc: dict[str, Any]) -> bytes:
        edits: list[Callable[[dict[str, Any]], None]] = []
        if "expires-missing" in self.on:
            edits.append(lambda d: d.pop("expires_at"))
        if "expires-too-long" in self.on:
            issued = parse_instant(doc["issued_at"])
            edits.append(
                lambda d: d.update(expires_at=format_instant(issued + timedelta(hours=48)))
            )
        if "kid-unpublished" in self.on:
            edits.append(lambda d: d.update(kid="ed25519:" + "0" * 64))
        if "sensitive-in-professional" in self.on and request.url.params.get("scope"):
            # The request for scope=professional reached the provider as a full export.
            edits.append(lambda d: d.update(scope="professional"))

        def apply(d: dict[str, Any]) -> None:
            for edit in edits:
                edit(d)

        return self._resign(doc, apply, other_bytes="signature-other-bytes" in self.on)

    def _resign(
        self,
        doc: dict[str, Any],
        edit: Callable[[dict[str, Any]], None] | None = None,
        *,
        other_bytes: bool = False,
    ) -> bytes:
        unsigned = {k: v for k, v in doc.items() if k != "signature"}
        if edit is not None:
            edit(unsigned)
        signed = dict(unsigned, issuer={"name": "someone else", "url": BASE_URL})
        preimage = canonicalize(signed if other_bytes else unsigned)
        signature = b64url_encode(self.p.signing_key().sign(preimage))
        return canonicalize({**unsigned, "signature": signature})


__all__ = ["BASE_URL", "FAULTS", "FaultyProvider"]
