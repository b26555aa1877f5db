"""Verification of signed exports and diffs: pure, no I/O, time as a parameter.

Engram v0.1 conformance, runtime requirements: "Rejects exports where expires_at is in the past"
(Tier 1), "Selects key by matching kid in envelope", "Verifies Ed25519 signature on every
received export", "Rejects exports where signature verification fails" (Tier 3). The checks run
in a fixed order and each failure raises its own class from :mod:`engram.errors`, with a message
a runtime can log as it is (docs/spec/runtime.md, "Verification"):

1. the body is I-JSON and a JSON object                        -> MalformedExport
2. ``engram_version`` is one this SDK reads                    -> UnsupportedVersion
3. ``kid`` is present, pinned (when the runtime pins kids)     -> MalformedExport / KeyNotPinned
4. ``kid`` names a key in the published key list               -> UnknownKeyId
5. ``signature`` verifies: Ed25519 over the RFC 8785 bytes of the envelope without
   ``signature``, base64url with or without its ``=`` pad     -> SignatureInvalid
6. ``issued_at``/``expires_at`` are RFC 3339 instants          -> MalformedExport
7. ``expires_at`` <= ``issued_at`` + 24 h                      -> ExpiryTooLong
8. ``issued_at`` <= now + clock skew                           -> MalformedExport
9. the key had not expired when the document was issued        -> KeyExpired
10. now < ``expires_at`` (no skew: never used past it)         -> ExportExpired

The signature is checked before anything inside the envelope is believed, so a tampered
timestamp reads as a bad signature rather than as a confusing expiry. A published key that
cannot be read (bad base64url, wrong length, an unreadable ``expires_at``) is not an outage:
only documents signed under it are refused, as ``SignatureInvalid``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from engram.core.canonical import Json, JsonObject, canonicalize, parse_object, parse_strict
from engram.core.clock import format_instant, parse_instant
from engram.core.encoding import b64url_decode
from engram.core.keys import KEY_ID_PREFIX, SIGNATURE_BYTES, PublicKey
from engram.core.signing import SIGNATURE_FIELD
from engram.errors import (
    CanonicalJsonError,
    EngramError,
    ExpiryTooLong,
    ExportExpired,
    InvalidRequest,
    KeyExpired,
    KeyNotPinned,
    MalformedExport,
    SignatureInvalid,
    UnknownKeyId,
    UnsupportedVersion,
)
from engram.runtime._config import SUPPORTED_VERSIONS

#: Engram v0.1, Tier 1: "expires_at is no more than 24 hours after issued_at".
MAX_LIFETIME = timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class PublishedKey:
    """One Ed25519 entry of ``/.well-known/engram-keys``.

    ``problem`` says why an entry cannot verify anything (then ``public_key`` is None): a
    document signed under it is refused as ``SignatureInvalid`` naming the reason.
    """

    kid: str
    public_key: PublicKey | None
    created_at: datetime | None
    expires_at: datetime | None
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Verified:
    """A signed document that passed every check; ``document`` still carries ``signature``."""

    document: JsonObject
    kid: str
    issued_at: datetime
    expires_at: datetime


def parse_document(body: bytes, what: str) -> JsonObject:
    """Parse a response body strictly (duplicates, NaN, lone surrogates refused)."""
    return parse_object(body, what=what, error=MalformedExport)


def parse_key_list(
    body: bytes,
    *,
    pinned_kids: frozenset[str] | None = None,
    pinned_sha256: str | None = None,
) -> dict[str, PublishedKey]:
    """Read ``/.well-known/engram-keys``: ``{"keys": [{kid, alg, public_key, ...}, ...]}``.

    The spec says only "returns Ed25519 public key list", so a bare JSON array is read too.
    Entries of another ``alg`` or without a ``kid`` are skipped (nothing can select them). An
    Ed25519 entry that cannot be read, or a kid listed twice, is kept as unusable
    (:attr:`PublishedKey.problem`): the list's other keys still verify.

    Pinning (docs/spec/runtime.md, "Key pinning"): with ``pinned_sha256`` the list's RFC 8785
    bytes must hash to it; with ``pinned_kids`` only those kids are read, and a kid written as
    engram's ``ed25519:<hex SHA-256 of the DER>`` must be the hash of the key it names.
    """
    try:
        value = parse_strict(body)
    except CanonicalJsonError as e:
        raise MalformedExport(f"the key list is not I-JSON: {e.message}") from e
    if (
        pinned_sha256 is not None
        and hashlib.sha256(canonicalize(value)).hexdigest() != pinned_sha256
    ):
        raise KeyNotPinned(
            "the key list does not hash to the pinned digest: refusing a substituted key list"
        )
    entries = value.get("keys") if isinstance(value, dict) else value
    if not isinstance(entries, list):
        raise MalformedExport(
            'the key list is neither a JSON array nor an object with a "keys" array'
        )
    keys: dict[str, PublishedKey] = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("alg") != "Ed25519":
            continue
        kid = entry.get("kid")
        if not isinstance(kid, str) or not kid:
            continue
        if pinned_kids is not None and kid not in pinned_kids:
            continue
        key = _published(kid, entry, pinned_kids is not None)
        if kid in keys:
            key = PublishedKey(kid, None, None, None, f"kid {kid!r} is published twice")
        keys[kid] = key
    return keys


def _published(kid: str, entry: Mapping[str, Json], pinned: bool) -> PublishedKey:
    raw = entry.get("public_key")
    try:
        if not isinstance(raw, str):
            raise InvalidRequest("public_key is not a string")
        public_key = PublicKey.from_raw(b64url_decode(raw, allow_padding=True))
        created = _optional_instant(entry.get("created_at"))
        expires = _optional_instant(entry.get("expires_at"))
    except EngramError as e:
        return PublishedKey(kid, None, None, None, f"its entry is unusable: {e.message}")
    if pinned and _content_addressed(kid) and kid != public_key.key_id:
        return PublishedKey(kid, None, None, None, "the key does not hash to its pinned kid")
    return PublishedKey(kid, public_key, created, expires)


def _content_addressed(kid: str) -> bool:
    digest = kid.removeprefix(KEY_ID_PREFIX)
    return (
        kid.startswith(KEY_ID_PREFIX)
        and len(digest) == 64
        and all(c in "0123456789abcdef" for c in digest)
    )


def _optional_instant(value: Json) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"not an RFC 3339 date-time: {value!r}")
    return parse_instant(value)


def check_version(document: Mapping[str, Json], what: str) -> None:
    """Step 2: refuse a protocol version this SDK cannot read (before trusting anything else)."""
    version = document.get("engram_version")
    if not isinstance(version, str):
        raise MalformedExport(f"{what} has no engram_version")
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(sorted(SUPPORTED_VERSIONS))
        raise UnsupportedVersion(
            f"{what} has engram_version {version!r}; this runtime reads {supported}"
        )


def kid_of(document: Mapping[str, Json], what: str) -> str:
    """The envelope's ``kid``; a missing one is malformed, not merely unknown."""
    kid = document.get("kid")
    if not isinstance(kid, str) or not kid:
        raise MalformedExport(f"{what} has no kid naming its signing key")
    return kid


def verify_signed(
    document: JsonObject,
    keys: Mapping[str, PublishedKey],
    *,
    now: datetime,
    clock_skew: timedelta,
    what: str = "export",
    pinned_kids: frozenset[str] | None = None,
) -> Verified:
    """Run checks 2-10 on a parsed envelope; raise on the first failure, return it verified.

    ``keys`` is the key list as last fetched; an :class:`UnknownKeyId` or :class:`KeyExpired`
    tells the caller to refetch it once and call again.
    """
    check_version(document, what)
    kid = kid_of(document, what)
    if pinned_kids is not None and kid not in pinned_kids:
        raise KeyNotPinned(f"{what} is signed with kid {kid!r}, which this runtime does not pin")
    key = keys.get(kid)
    if key is None:
        raise UnknownKeyId(
            f"{what} is signed with kid {kid!r}, which the provider does not publish"
        )
    _check_signature(document, key, what)
    issued_at = _instant(document, "issued_at", what)
    expires_at = _instant(document, "expires_at", what)
    if expires_at <= issued_at:
        raise MalformedExport(f"{what} expires_at {_fmt(expires_at)} is not after issued_at")
    if expires_at - issued_at > MAX_LIFETIME:
        raise ExpiryTooLong(
            f"{what} expires_at {_fmt(expires_at)} is more than 24 h after issued_at "
            f"{_fmt(issued_at)}"
        )
    if issued_at > now + clock_skew:
        raise MalformedExport(
            f"{what} issued_at {_fmt(issued_at)} lies beyond the clock-skew allowance "
            f"({int(clock_skew.total_seconds())} s) in the future (now {_fmt(now)})"
        )
    if key.expires_at is not None and issued_at >= key.expires_at:
        raise KeyExpired(
            f"{what} issued at {_fmt(issued_at)} is signed with kid {kid!r}, whose key expired "
            f"at {_fmt(key.expires_at)}"
        )
    check_fresh(expires_at, now, what)
    return Verified(document, kid, issued_at, expires_at)


def _check_signature(document: JsonObject, key: PublishedKey, what: str) -> None:
    """Step 5: every way this can fail means "do not use this document": SignatureInvalid."""
    prefix = f"{what} signature is invalid under kid {key.kid!r}"
    if key.public_key is None:
        raise SignatureInvalid(f"{prefix}: the published key {key.problem}")
    signature = document.get(SIGNATURE_FIELD)
    if not isinstance(signature, str) or not signature:
        raise SignatureInvalid(f"{what} carries no signature")
    try:
        raw = b64url_decode(signature, allow_padding=True)
    except InvalidRequest as e:
        raise SignatureInvalid(f"{prefix}: the signature is not base64url ({e.message})") from e
    if len(raw) != SIGNATURE_BYTES:
        raise SignatureInvalid(f"{prefix}: an Ed25519 signature is {SIGNATURE_BYTES} bytes")
    try:
        signed = canonicalize({k: v for k, v in document.items() if k != SIGNATURE_FIELD})
    except CanonicalJsonError as e:  # pragma: no cover - a parsed document is always I-JSON
        raise SignatureInvalid(f"{prefix}: the envelope has no canonical form") from e
    try:
        key.public_key.verify(raw, signed)
    except SignatureInvalid as e:
        raise SignatureInvalid(f"{prefix}: {e.message}") from e


def check_fresh(expires_at: datetime, now: datetime, what: str = "export") -> None:
    """Step 8, also used before every use of a cached export: ``now`` must be before expiry."""
    if now >= expires_at:
        raise ExportExpired(f"{what} expired at {_fmt(expires_at)} (now {_fmt(now)})")


def _instant(document: Mapping[str, Json], name: str, what: str) -> datetime:
    value = document.get(name)
    if value is None:
        raise MalformedExport(f"{what} has no {name}")
    if not isinstance(value, str):
        raise MalformedExport(f"{what} {name} is not a date-time string")
    try:
        return parse_instant(value)
    except InvalidRequest as e:
        raise MalformedExport(f"{what} {name}: {e.message}") from e


def _fmt(moment: datetime) -> str:
    return format_instant(moment)


__all__ = [
    "MAX_LIFETIME",
    "PublishedKey",
    "Verified",
    "check_fresh",
    "check_version",
    "kid_of",
    "parse_document",
    "parse_key_list",
    "verify_signed",
]
