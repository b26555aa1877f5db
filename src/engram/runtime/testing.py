"""``FakeProvider``: an Engram v0.1 provider in a box, for the tests of code that uses the SDK.

In the manner of ``httpx.MockTransport``: a test makes a provider with a subject and beliefs,
gives the real :class:`~engram.runtime.EngramClient` (or :class:`~engram.runtime.AsyncEngramClient`)
its :meth:`FakeProvider.transport`, and the client discovers, fetches the key list, verifies the
signature and expiry and checks the scope exactly as it does against a real provider. Nothing
listens on a socket; nothing is mocked inside the SDK.

The exports are signed as the spec requires (docs/spec/context-export.md and
docs/spec/keys-and-signatures.md): Ed25519 under a throwaway key made for each provider, over
the RFC 8785 bytes (:func:`engram.core.canonical.canonicalize`) of the envelope without
``signature``, base64url; the key is published at ``/.well-known/engram-keys`` under its
``kid``. Setting :attr:`FakeProvider.fault` serves one broken export on purpose, so a test can
check its code refuses it. docs/spec/runtime.md, "Testing with FakeProvider".

Built from ``engram.core`` and httpx only, like the rest of ``engram.runtime``.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Literal

import httpx

from engram.core.canonical import Json, JsonObject, parse_strict
from engram.core.clock import Clock, SystemClock, format_instant
from engram.core.context_wire import is_sensitive
from engram.core.jsonio import dumps_text
from engram.core.keys import PrivateKey
from engram.core.signing import sign_document
from engram.errors import CanonicalJsonError
from engram.runtime._client import AsyncEngramClient, EngramClient
from engram.runtime._config import RuntimeConfig

Fault = Literal["expired", "tampered", "wrong-scope", "unknown-kid"]
"""A broken export :class:`FakeProvider` can serve instead of a good one:

- ``expired``: correctly signed, its ``expires_at`` already past (``ExportExpired``);
- ``tampered``: a belief changed after signing (``SignatureInvalid``);
- ``wrong-scope``: correctly signed, labelled with another scope than the one asked for
  (``ScopeMismatch``);
- ``unknown-kid``: signed by a key the key list does not publish (``UnknownKeyId``).
"""
FAULTS: tuple[Fault, ...] = ("expired", "tampered", "wrong-scope", "unknown-kid")
SCOPES = ("full", "professional", "identity")
"""The scopes the fake serves: ``professional`` leaves out health and financial beliefs,
``identity`` every belief (engram's own provider registry)."""
DEFAULT_TOKEN = "fake-provider-token"  # noqa: S105 - a test double's token, not a secret
DEFAULT_URL = "https://provider.test"
SUBJECT_ID = "00000000-0000-4000-8000-000000000001"


class FakeProvider:
    """A provider that serves one subject's signed export through an ``httpx.MockTransport``.

    ``beliefs``: JSON objects as a provider would export them (``category`` and ``statement``
    at least; an ``id`` is given to each one that has none). ``lifetime``: how long an export
    is valid (at most 24 h, as the spec allows). ``clock``: the provider's time, shared with the
    clients :meth:`client` and :meth:`async_client` make, so a test can move both at once.
    Every request the transport answered is kept in :attr:`requests`, every correction
    proposed in :attr:`corrections`.
    """

    def __init__(
        self,
        beliefs: Iterable[Mapping[str, Json]] = (),
        *,
        display_name: str = "Test User",
        timezone: str = "UTC",
        subject_id: str = SUBJECT_ID,
        token: str = DEFAULT_TOKEN,
        base_url: str = DEFAULT_URL,
        lifetime: timedelta = timedelta(hours=1),
        clock: Clock | None = None,
        fault: Fault | None = None,
    ) -> None:
        if not timedelta(0) < lifetime <= timedelta(hours=24):
            raise ValueError("lifetime must be more than 0 and at most 24 hours (Engram v0.1)")
        self.display_name = display_name
        self.timezone = timezone
        self.subject_id = subject_id
        self.token = token
        self.base_url = base_url.rstrip("/")
        self.lifetime = lifetime
        self.clock: Clock = clock or SystemClock()
        self.fault: Fault | None = fault
        self.key = PrivateKey.generate()
        """The throwaway signing key; its public half is the one key the key list publishes."""
        self.beliefs: list[JsonObject] = []
        self.requests: list[httpx.Request] = []
        self.corrections: list[JsonObject] = []
        self._lock = threading.Lock()
        for belief in beliefs:
            self.add_belief(belief)

    @property
    def kid(self) -> str:
        """The signing key's id: ``ed25519:`` + hex SHA-256 of its DER public key."""
        return self.key.public_key().key_id

    def add_belief(self, belief: Mapping[str, Json]) -> str:
        """Add one belief to the subject's context; returns its id."""
        entry: JsonObject = copy.deepcopy(dict(belief))
        ident = entry.get("id")
        if not isinstance(ident, str) or not ident:
            ident = f"belief-{len(self.beliefs) + 1}"
            entry["id"] = ident
        self.beliefs.append(entry)
        return ident

    # -- what a test hands the SDK --------------------------------------------------------

    def transport(self) -> httpx.MockTransport:
        """An httpx transport answering as this provider (for sync and async clients alike)."""
        return httpx.MockTransport(self.handle)

    def config(
        self,
        *,
        scope: str | None = None,
        runtime_id: str = "engram-runtime",
        pinned_kids: frozenset[str] | None = None,
    ) -> RuntimeConfig:
        """A :class:`RuntimeConfig` for this provider's URL and token (``dataclasses.replace``
        sets any other member)."""
        return RuntimeConfig(
            self.base_url, self.token, runtime_id=runtime_id, scope=scope, pinned_kids=pinned_kids
        )

    def client(self, config: RuntimeConfig | None = None) -> EngramClient:
        """The real blocking client, talking to this provider on its clock."""
        return EngramClient(config or self.config(), transport=self.transport(), clock=self.clock)

    def async_client(self, config: RuntimeConfig | None = None) -> AsyncEngramClient:
        """The real async client, talking to this provider on its clock."""
        return AsyncEngramClient(
            config or self.config(), transport=self.transport(), clock=self.clock
        )

    # -- the documents --------------------------------------------------------------------

    def discovery(self) -> JsonObject:
        return {
            "engram_version": "0.1",
            "issuer": {"name": "engram FakeProvider", "url": self.base_url},
            "scopes_supported": [*SCOPES],
        }

    def key_list(self) -> JsonObject:
        now = self.clock.now()
        return {
            "keys": [
                {
                    "kid": self.kid,
                    "alg": "Ed25519",
                    "public_key": self.key.public_key().b64url,
                    "created_at": format_instant(now - timedelta(days=1)),
                    "expires_at": format_instant(now + timedelta(days=30)),
                }
            ]
        }

    def export(self, scope: str = "full") -> JsonObject:
        """The signed export served for ``scope`` now (broken as :attr:`fault` says)."""
        if scope not in SCOPES:
            raise ValueError(f"FakeProvider serves the scopes {', '.join(SCOPES)}, not {scope!r}")
        now = self.clock.now()
        issued = now - self.lifetime - timedelta(minutes=1) if self.fault == "expired" else now
        label = scope
        if self.fault == "wrong-scope":
            label = "professional" if scope == "full" else "full"
        key = PrivateKey.generate() if self.fault == "unknown-kid" else self.key
        document = sign_document(self._envelope(label, issued, key), key)
        if self.fault == "tampered":
            document = _tampered(document)
        return document

    def _envelope(self, scope: str, issued: datetime, key: PrivateKey) -> JsonObject:
        return {
            "engram_version": "0.1",
            "issued_at": format_instant(issued),
            "expires_at": format_instant(issued + self.lifetime),
            "kid": key.public_key().key_id,
            "issuer": {"name": "engram FakeProvider", "url": self.base_url},
            "subject": {"id": self.subject_id, "display_name": self.display_name},
            "scope": scope,
            "identity": {
                "display_name": self.display_name,
                "timezone": self.timezone,
                "created_at": format_instant(issued - timedelta(days=1)),
                "last_updated": format_instant(issued),
            },
            "beliefs": [*self._in_scope(scope)],
            "corrections": [],
            "evolution": [],
        }

    def _in_scope(self, scope: str) -> list[JsonObject]:
        if scope == "identity":
            return []
        kept = [b for b in self.beliefs if scope != "professional" or not is_sensitive(b)]
        return copy.deepcopy(kept)

    # -- the transport's handler ----------------------------------------------------------

    def handle(self, request: httpx.Request) -> httpx.Response:
        """Answer one request as the provider would (the ``httpx.MockTransport`` handler)."""
        with self._lock:
            self.requests.append(request)
        path = request.url.path
        if request.method == "GET" and path == "/.well-known/engram":
            return _json(200, self.discovery())
        if request.method == "GET" and path == "/.well-known/engram-keys":
            return _json(200, self.key_list())
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return _error(401, "unauthorized", "Token missing or invalid")
        if request.method == "GET" and path == "/v1/context":
            scope = request.url.params.get("scope", "full")
            if scope not in SCOPES:
                return _error(400, "invalid_scope", f"unknown scope {scope!r}")
            return _json(200, self.export(scope))
        if request.method == "GET" and path == "/v1/context/diff":
            # A runtime answered this way fetches the full export instead (a correct answer).
            return _error(400, "invalid_request", "this fake provider serves no diffs")
        if request.method == "POST" and path == "/v1/context/correct":
            return self._correct(request)
        return _error(404, "invalid_request", f"no route {request.method} {path}")

    def _correct(self, request: httpx.Request) -> httpx.Response:
        try:
            body = parse_strict(request.content)
        except CanonicalJsonError as e:
            return _error(400, "invalid_request", f"the body is not I-JSON: {e.message}")
        if not isinstance(body, dict):
            return _error(400, "invalid_request", "the body is not a JSON object")
        for member in ("belief_id", "new_value", "runtime_id"):
            value = body.get(member)
            if not isinstance(value, str) or not value:
                return _error(400, "invalid_request", f"{member} is required")
        if not any(b.get("id") == body["belief_id"] for b in self.beliefs):
            return _error(404, "belief_not_found", f"no belief {body['belief_id']!r}")
        with self._lock:
            ident = f"corr-{len(self.corrections) + 1}"
            self.corrections.append({**body, "id": ident})
        return _json(202, {"id": ident, "status": "pending_user_confirmation"})


def _tampered(document: JsonObject) -> JsonObject:
    """``document`` with one member changed after signing (the signature no longer covers it)."""
    changed = copy.deepcopy(document)
    beliefs = changed.get("beliefs")
    if isinstance(beliefs, list) and beliefs and isinstance(beliefs[0], dict):
        beliefs[0]["statement"] = f"{beliefs[0].get('statement', '')} (altered in transit)"
    else:
        changed["beliefs"] = [{"id": "forged", "category": "general", "statement": "Forged"}]
    return changed


def _json(status: int, body: Json) -> httpx.Response:
    return httpx.Response(
        status,
        content=dumps_text(body).encode("utf-8"),
        headers={"Content-Type": "application/json"},
    )


def _error(status: int, code: str, message: str) -> httpx.Response:
    return _json(status, {"error": {"code": code, "message": message, "status": status}})


__all__ = [
    "DEFAULT_TOKEN",
    "DEFAULT_URL",
    "FAULTS",
    "SCOPES",
    "SUBJECT_ID",
    "FakeProvider",
    "Fault",
]
