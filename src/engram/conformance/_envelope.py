"""Judging Engram exports, key lists and error bodies on their own terms (no SDK involved).

Spec: Engram v0.1 Conformance §"Test Fixtures" (the minimal export's fields), §"Tier 3 — Full"
(keys, kid, Ed25519 over canonical JSON) and §"Error Code Reference" (the error shape).
Every function returns a list of problems (empty when the value conforms) so that a check can
name exactly what was wrong in its row's detail.

Exact where the page is exact (the envelope's members, ``alg: "Ed25519"``, the signed bytes),
liberal where it is open: ``system_prompt_injection`` may be left out when ``beliefs`` is there
to build it from (Tier 1: "or builds equivalent from beliefs array"); base64url may keep its
``=`` pad (RFC 4648 §3.2); a belief is any object (docs/spec/conformance-bundle.md).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from engram.core.canonical import Json, JsonArray, JsonObject, canonicalize
from engram.core.clock import parse_instant
from engram.core.context_wire import SENSITIVE_CATEGORIES
from engram.core.encoding import b64url_decode
from engram.core.keys import PublicKey
from engram.errors import EngramError

ENVELOPE_FIELDS: dict[str, type | tuple[type, ...]] = {
    "engram_version": str,
    "issued_at": str,
    "expires_at": str,
    "kid": str,
    "issuer": dict,
    "subject": dict,
    "scope": str,
    "signature": str,
    "identity": dict,
    "corrections": list,
    "evolution": list,
}
"""The minimal valid export's members that every export must carry, with their JSON type."""
PROMPT_SOURCES: dict[str, type] = {"beliefs": list, "system_prompt_injection": str}
"""At least one of these: the injection, or the beliefs a runtime builds it from."""
KEY_FIELDS = ("kid", "alg", "public_key", "created_at", "expires_at")
ERROR_CODES: dict[str, int] = {
    "unauthorized": 401,
    "token_expired": 401,
    "forbidden": 403,
    "user_not_found": 404,
    "belief_not_found": 404,
    "invalid_scope": 400,
    "invalid_request": 400,
    "rate_limited": 429,
    "unsupported_version": 400,
    "server_error": 500,
}
MAX_LIFETIME = timedelta(hours=24)


def envelope_problems(body: Json) -> list[str]:
    """Fields of the minimal valid export that are missing or of the wrong type."""
    if not isinstance(body, dict):
        return ["the body is not a JSON object"]
    problems = []
    for name, kind in ENVELOPE_FIELDS.items():
        if name not in body:
            problems.append(f"{name} is missing")
        elif not isinstance(body[name], kind):
            problems.append(f"{name} is {type(body[name]).__name__}, not {_kind(kind)}")
    for name, kind in PROMPT_SOURCES.items():
        if name in body and not isinstance(body[name], kind):
            problems.append(f"{name} is {type(body[name]).__name__}, not {_kind(kind)}")
    if not any(name in body for name in PROMPT_SOURCES):
        problems.append("neither beliefs nor system_prompt_injection is present")
    return problems


def instant(body: Json, name: str) -> datetime | None:
    """The RFC 3339 instant at ``body[name]``, or None when absent or malformed."""
    value = body.get(name) if isinstance(body, dict) else None
    if not isinstance(value, str):
        return None
    try:
        return parse_instant(value)
    except EngramError:
        return None


def lifetime_problem(body: Json) -> str | None:
    """Why ``expires_at`` is not within (issued_at, issued_at + 24 h], or None when it is."""
    issued, expires = instant(body, "issued_at"), instant(body, "expires_at")
    if issued is None or expires is None:
        return "issued_at or expires_at is missing or not an RFC 3339 instant"
    if expires <= issued:
        return f"expires_at {expires.isoformat()} is not after issued_at {issued.isoformat()}"
    if expires - issued > MAX_LIFETIME:
        return f"expires_at is {expires - issued} after issued_at (more than 24 h)"
    return None


def key_list(body: Json) -> JsonArray | None:
    """The key list of /.well-known/engram-keys: ``{"keys": [...]}`` or a bare list."""
    keys = body.get("keys") if isinstance(body, dict) else None
    if isinstance(keys, list):
        return list(keys)
    if isinstance(body, list):
        return list(body)
    return None


def key_problems(key: Json) -> list[str]:
    """Why one published key lacks the fields Tier 3 requires."""
    if not isinstance(key, dict):
        return ["a key entry is not an object"]
    label = key.get("kid", "?")
    problems = [f"key {label}: {name} is missing" for name in KEY_FIELDS if key.get(name) is None]
    if key.get("alg") not in (None, "Ed25519"):
        problems.append(f"key {label}: alg is {key.get('alg')!r}, not 'Ed25519'")
    raw = key.get("public_key")
    if isinstance(raw, str):
        try:
            if len(b64url_decode(raw, allow_padding=True)) != 32:
                problems.append(f"key {label}: public_key is not 32 bytes")
        except EngramError:
            problems.append(f"key {label}: public_key is not base64url")
    for name in ("created_at", "expires_at"):
        if key.get(name) is not None and instant(key, name) is None:
            problems.append(f"key {label}: {name} is not an RFC 3339 instant")
    return problems


def signature_problem(document: Json, keys: JsonObject) -> str | None:
    """Verify ``document['signature']`` under the published key its ``kid`` names.

    The signed bytes are recomputed here with engram's canonicaliser over the document minus
    ``signature`` (RFC 8785), never taken from the provider.
    """
    if not isinstance(document, dict):
        return "the document is not a JSON object"
    kid, signature = document.get("kid"), document.get("signature")
    if not isinstance(kid, str) or not isinstance(signature, str):
        return "kid or signature is missing"
    key = keys.get(kid)
    if key is None:
        return f"kid {kid!r} is not in /.well-known/engram-keys"
    unsigned = {k: v for k, v in document.items() if k != "signature"}
    try:
        raw = key.get("public_key") if isinstance(key, dict) else None
        if not isinstance(raw, str):
            return f"the published key {kid!r} has no public_key string"
        public = PublicKey.from_raw(b64url_decode(raw, allow_padding=True))
        public.verify(b64url_decode(signature, allow_padding=True), canonicalize(unsigned))
    except EngramError as e:
        return f"signature does not verify under {kid}: {e.message}"
    return None


def error_shape_problem(status: int, body: Json) -> str | None:
    """Why a non-2xx body is not ``{"error": {"code", "message", "status"}}`` as tabled."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return f"HTTP {status}: body has no error object"
    code, message, wire_status = error.get("code"), error.get("message"), error.get("status")
    if not isinstance(code, str) or not isinstance(message, str) or wire_status != status:
        return f"HTTP {status}: error needs string code and message and status {status}"
    expected = ERROR_CODES.get(code)
    if expected is None:
        return f"HTTP {status}: error.code {code!r} is not in the spec's table"
    if expected != status:
        return f"HTTP {status}: error.code {code!r} belongs with HTTP {expected}"
    return None


def _kind(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names: dict[type, str] = {dict: "object", list: "array", str: "string"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


__all__ = [
    "ENVELOPE_FIELDS",
    "ERROR_CODES",
    "KEY_FIELDS",
    "MAX_LIFETIME",
    "PROMPT_SOURCES",
    "SENSITIVE_CATEGORIES",
    "envelope_problems",
    "error_shape_problem",
    "instant",
    "key_list",
    "key_problems",
    "lifetime_problem",
    "signature_problem",
]
