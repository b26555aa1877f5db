"""Verification of signed exports and diffs: pure, no I/O, time as a parameter.

Engram v0.1 conformance, runtime requirements: "Rejects exports where expires_at is in the past"
(Tier 1), "Selects key by matching kid in envelope", "Verifies Ed25519 signature on every
received export", "Rejects exports where signature verification fails" (Tier 3). The checks run
in a fixed order and each failure raises its own class from :mod:`engram.errors`, with a message
a runtime can log as it is (docs/spec/runtime.md, "Verification"):

1. the body is I-JSON and a JSON object                        -> MalformedExport
2. ``engram_version`` is one this SDK reads                    -> UnsupportedVersion
3. ``kid`` names a key in the published key list               -> UnknownKeyId
4. ``signature`` verifies: Ed25519 over the RFC 8785 bytes of the envelope without
   ``signature`` (:func:`engram.core.signing.verify_document`) -> SignatureInvalid
5. ``issued_at``/``expires_at`` are RFC 3339 instants          -> MalformedExport
6. ``expires_at`` <= ``issued_at`` + 24 h                      -> ExpiryTooLong
7. ``issued_at`` <= now + clock skew                           -> MalformedExport
8. now < ``expires_at`` (no skew: an export is never used past it) -> ExportExpired

The signature is checked before anything inside the envelope is believed, so a tampered
timestamp reads as a bad signature rather than as a confusing expiry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from engram.core.canonical import JsonValue, parse_object, parse_strict
from engram.core.clock import format_instant, parse_instant
from engram.core.keys import PublicKey
from engram.core.signing import verify_document
from engram.errors import (
    CanonicalJsonError,
    EngramError,
    ExpiryTooLong,
    ExportExpired,
    InvalidRequest,
    MalformedExport,
    RemoteError,
    SignatureInvalid,
    UnknownKeyId,
    UnsupportedVersion,
)
from engram.runtime._config import SUPPORTED_VERSIONS

#: Engram v0.1, Tier 1: "expires_at is no more than 24 hours after issued_at".
MAX_LIFETIME = timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class PublishedKey:
    """One entry of ``/.well-known/engram-keys`` that this SDK can verify with."""

    kid: str
    public_key: PublicKey
    created_at: datetime | None
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class Verified:
    """A signed document that passed every check; ``document`` still carries ``signature``."""

    document: dict[str, JsonValue]
    kid: str
    issued_at: datetime
    expires_at: datetime


def parse_document(body: bytes, what: str) -> dict[str, JsonValue]:
    """Parse a response body strictly (duplicates, NaN, lone surrogates refused)."""
    return parse_object(body, what=what, error=MalformedExport)


def parse_key_list(body: bytes) -> dict[str, PublishedKey]:
    """Read ``/.well-known/engram-keys``: ``{"keys": [{kid, alg, public_key, ...}, ...]}``.

    The spec says only "returns Ed25519 public key list", so a bare JSON array is read too.
    Keys of another ``alg`` are skipped (a later protocol may add algorithms); an Ed25519 entry
    that cannot be read makes the whole list unusable, because a provider that publishes a
    broken key is not one to trust half of.
    """
    try:
        value = parse_strict(body)
    except CanonicalJsonError as e:
        raise RemoteError(f"the key list is not I-JSON: {e.message}") from e
    entries = value.get("keys") if isinstance(value, dict) else value
    if not isinstance(entries, list):
        raise RemoteError('the key list is neither a JSON array nor an object with a "keys" array')
    keys: dict[str, PublishedKey] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or entry.get("alg") != "Ed25519":
            continue
        kid, raw = entry.get("kid"), entry.get("public_key")
        if not isinstance(kid, str) or not kid or not isinstance(raw, str):
            raise RemoteError(f"key list entry {index} has no kid or public_key string")
        try:
            public_key = PublicKey.from_b64url(raw)
            created = _optional_instant(entry.get("created_at"))
            expires = _optional_instant(entry.get("expires_at"))
        except EngramError as e:
            raise RemoteError(f"key {kid!r} in the key list is unusable: {e.message}") from e
        keys[kid] = PublishedKey(kid, public_key, created, expires)
    return keys


def _optional_instant(value: JsonValue) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"not an RFC 3339 date-time: {value!r}")
    return parse_instant(value)


def check_version(document: Mapping[str, JsonValue], what: str) -> None:
    """Step 2: refuse a protocol version this SDK cannot read (before trusting anything else)."""
    version = document.get("engram_version")
    if not isinstance(version, str):
        raise MalformedExport(f"{what} has no engram_version")
    if version not in SUPPORTED_VERSIONS:
        supported = ", ".join(sorted(SUPPORTED_VERSIONS))
        raise UnsupportedVersion(
            f"{what} has engram_version {version!r}; this runtime reads {supported}"
        )


def kid_of(document: Mapping[str, JsonValue], what: str) -> str:
    """The envelope's ``kid``; a missing one is malformed, not merely unknown."""
    kid = document.get("kid")
    if not isinstance(kid, str) or not kid:
        raise MalformedExport(f"{what} has no kid naming its signing key")
    return kid


def verify_signed(
    document: dict[str, JsonValue],
    keys: Mapping[str, PublishedKey],
    *,
    now: datetime,
    clock_skew: timedelta,
    what: str = "export",
) -> Verified:
    """Run checks 2-8 on a parsed envelope; raise on the first failure, return it verified.

    ``keys`` is the key list as last fetched; an :class:`UnknownKeyId` tells the caller to
    refetch it once and call again.
    """
    check_version(document, what)
    kid = kid_of(document, what)
    key = keys.get(kid)
    if key is None:
        raise UnknownKeyId(
            f"{what} is signed with kid {kid!r}, which the provider does not publish"
        )
    signature = document.get("signature")
    if not isinstance(signature, str) or not signature:
        raise SignatureInvalid(f"{what} carries no signature")
    try:
        verify_document(document, key.public_key)
    except SignatureInvalid as e:
        # verify_document also refuses a signature that is not canonical base64url and an
        # envelope with no canonical form; all of them mean "do not use this export".
        raise SignatureInvalid(f"{what} signature is invalid under kid {kid!r}: {e.message}") from e
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
    check_fresh(expires_at, now, what)
    return Verified(document, kid, issued_at, expires_at)


def check_fresh(expires_at: datetime, now: datetime, what: str = "export") -> None:
    """Step 8, also used before every use of a cached export: ``now`` must be before expiry."""
    if now >= expires_at:
        raise ExportExpired(f"{what} expired at {_fmt(expires_at)} (now {_fmt(now)})")


def _instant(document: Mapping[str, JsonValue], name: str, what: str) -> datetime:
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
