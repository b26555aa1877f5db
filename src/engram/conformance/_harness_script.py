"""What the harness's scripted provider serves in each scenario: signed, expired, tampered and
unknown-kid exports, and diffs with tombstones, all built and signed here with engram.core.

Spec: Engram v0.1 Conformance §"Test Fixtures" (minimal valid export, expired export) and §"Tier 3 —
Full" (keys, kid, Ed25519 over canonical JSON). Every document carries a per-run marker so the
judge can tell from the LLM's request log exactly which document's content reached the prompt.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from engram.conformance._harness_servers import Answer, Request, Route, completion, error
from engram.core.canonical import JsonObject, canonicalize
from engram.core.clock import Clock, format_instant
from engram.core.encoding import b64url_encode
from engram.core.keys import PrivateKey

ExportMode = Literal["valid", "expired", "tampered", "unknown-kid", "short"]
DiffMode = Literal["none", "tombstone", "tampered"]
SCOPES = ("full", "professional")
KID = "harness-key"
DECOY_KID = "harness-decoy"
UNPUBLISHED_KID = "harness-unpublished"
KEEP_ID = "belief-keep"
DOOMED_ID = "belief-doomed"


@dataclass
class Script:
    """The documents of one scenario, built fresh (new marker, new instants) for each run."""

    clock: Clock
    token: str
    export_mode: ExportMode = "valid"
    diff_mode: DiffMode = "none"
    marker: str = field(default_factory=lambda: "m" + secrets.token_hex(6))
    keys: dict[str, PrivateKey] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for kid in (DECOY_KID, KID, UNPUBLISHED_KID):
            self.keys.setdefault(kid, PrivateKey.generate())
        self.issued = self.clock.now().replace(microsecond=0)

    @property
    def keep_statement(self) -> str:
        return f"Prefers green tea ({self.marker}-keep)"

    @property
    def doomed_statement(self) -> str:
        return f"Lives in Lisbon ({self.marker}-doomed)"

    @property
    def forged_statement(self) -> str:
        return f"Owes the harness money ({self.marker}-forged)"

    def discovery(self, base_url: str) -> JsonObject:
        return {
            "engram_version": "0.1",
            "issuer": {"name": "engram conformance harness", "url": base_url},
            "endpoints": {
                "context": base_url + "/v1/context",
                "diff": base_url + "/v1/context/diff",
                "correct": base_url + "/v1/context/correct",
                "keys": base_url + "/.well-known/engram-keys",
            },
            "scopes_supported": list(SCOPES),
        }

    def key_list(self) -> JsonObject:
        # The decoy comes first: a runtime that takes the first key instead of matching the
        # envelope's kid fails to verify the valid export and so injects nothing.
        return {"keys": [self._key_wire(DECOY_KID), self._key_wire(KID)]}

    def _key_wire(self, kid: str) -> JsonObject:
        return {
            "kid": kid,
            "alg": "Ed25519",
            "public_key": self.keys[kid].public_key().b64url,
            "created_at": format_instant(self.issued - timedelta(days=1)),
            "expires_at": format_instant(self.issued + timedelta(days=30)),
        }

    def _window(self) -> tuple[datetime, datetime]:
        if self.export_mode == "expired":
            return self.issued - timedelta(hours=3), self.issued - timedelta(hours=1)
        if self.export_mode == "short":
            # Inside any sensible refresh margin, so the runtime syncs on its next turn.
            return self.issued, self.issued + timedelta(seconds=120)
        return self.issued, self.issued + timedelta(hours=12)

    def export(self, scope: str) -> JsonObject:
        issued, expires = self._window()
        beliefs = [
            _belief(KEEP_ID, "preference", self.keep_statement, issued),
            _belief(DOOMED_ID, "general", self.doomed_statement, issued),
        ]
        injection = "\n".join(
            [
                f"User: Harness User (UTC). [{self.marker}]",
                f"Known about the user (scope {scope}):",
                *(f"- [{b['category']}] {b['statement']}" for b in beliefs),
            ]
        )
        document: JsonObject = {
            "engram_version": "0.1",
            "issued_at": format_instant(issued),
            "expires_at": format_instant(expires),
            "kid": UNPUBLISHED_KID if self.export_mode == "unknown-kid" else KID,
            "issuer": {"name": "engram conformance harness", "url": "http://127.0.0.1"},
            "subject": {
                "id": "00000000-0000-4000-8000-000000000001",
                "display_name": "Harness User",
            },
            "scope": scope,
            "identity": {
                "display_name": "Harness User",
                "timezone": "UTC",
                "created_at": format_instant(issued - timedelta(days=1)),
                "last_updated": format_instant(issued),
            },
            "beliefs": [*beliefs],
            "corrections": [],
            "evolution": [],
            "system_prompt_injection": injection,
        }
        return self._sign(document, tamper=self.export_mode == "tampered")

    def diff(self, since: str, scope: str) -> JsonObject:
        issued, expires = self.issued, self.issued + timedelta(seconds=120)
        document: JsonObject = {
            "engram_version": "0.1",
            "issued_at": format_instant(issued),
            "expires_at": format_instant(expires),
            "kid": KID,
            "subject": {"id": "00000000-0000-4000-8000-000000000001"},
            "scope": scope,
            "since": since,
            "cursor": format_instant(issued) + "#1",
            "changes": [],
            "tombstones": [],
        }
        if self.diff_mode == "tampered":
            document["changes"] = [
                _belief("belief-forged", "general", self.forged_statement, issued)
            ]
        else:
            deleted = format_instant(issued)
            document["tombstones"] = [
                {"id": DOOMED_ID, "deleted": True, "deleted_at": deleted, "version": 2}
            ]
        return self._sign(document, tamper=self.diff_mode == "tampered")

    def _sign(self, document: JsonObject, *, tamper: bool) -> JsonObject:
        kid = document["kid"]
        assert isinstance(kid, str)  # every document the script builds names its KID
        key = self.keys[kid]
        signed = dict(document)
        if tamper:
            # A signature over other bytes: sign a copy that differs in one member.
            signed = dict(document, issued_at=format_instant(self.issued - timedelta(seconds=1)))
        return dict(document, signature=b64url_encode(key.sign(canonicalize(signed))))

    # -- routes ----------------------------------------------------------------------------

    def provider_route(self, base_url: str) -> Route:
        def route(request: Request) -> Answer:
            if request.path == "/.well-known/engram":
                return 200, self.discovery(base_url)
            if request.path == "/.well-known/engram-keys":
                return 200, self.key_list()
            if request.headers.get("authorization") != f"Bearer {self.token}":
                return error(401, "unauthorized", "Token missing or invalid")
            scope = request.query.get("scope", "full")
            if scope not in SCOPES:
                return error(400, "invalid_scope", f"unknown scope {scope!r}")
            if request.method == "GET" and request.path == "/v1/context":
                return 200, self.export(scope)
            if request.method == "GET" and request.path == "/v1/context/diff":
                if self.diff_mode == "none" or "since" not in request.query:
                    return error(400, "invalid_request", "no diff is offered in this scenario")
                return 200, self.diff(request.query["since"], scope)
            if request.method == "POST" and request.path == "/v1/context/correct":
                body = request.body if isinstance(request.body, dict) else {}
                if not isinstance(body.get("runtime_id"), str) or not body.get("runtime_id"):
                    return error(400, "invalid_request", "runtime_id is required")
                return 202, {"id": f"corr-{request.seq}", "status": "pending_user_confirmation"}
            return error(404, "invalid_request", f"no route {request.method} {request.path}")

        return route


def llm_route(request: Request) -> Answer:
    if request.method == "POST" and request.path.endswith("/chat/completions"):
        return completion(request)
    if request.method == "GET" and request.path.endswith("/models"):
        return 200, {"object": "list", "data": [{"id": "harness", "object": "model"}]}
    return error(404, "invalid_request", f"no route {request.method} {request.path}")


def _belief(ident: str, category: str, statement: str, at: datetime) -> JsonObject:
    return {
        "id": ident,
        "category": category,
        "statement": statement,
        "confidence": 0.9,
        "source": "harness",
        "created_at": format_instant(at),
        "updated_at": format_instant(at),
        "version": 1,
    }


__all__ = [
    "DECOY_KID",
    "DOOMED_ID",
    "KEEP_ID",
    "KID",
    "UNPUBLISHED_KID",
    "DiffMode",
    "ExportMode",
    "Script",
    "llm_route",
]
