"""The verifier on the spec's own fixtures (Engram v0.1 "Test Fixtures"), signed with a test key.

These pin each check of docs/spec/runtime.md "Verification" to its own error class; the tests
against the real provider (test_runtime_client.py) show the same on real exports.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engram.core.canonical import Json, JsonObject
from engram.core.keys import PrivateKey
from engram.core.signing import sign_document
from engram.errors import (
    ExpiryTooLong,
    ExportExpired,
    MalformedExport,
    SignatureInvalid,
    UnknownKeyId,
    UnsupportedVersion,
)
from engram.runtime import ContextView, PublishedKey
from engram.runtime.internals import verify_signed

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
SKEW = timedelta(seconds=60)
KEY = PrivateKey.generate()
KEYS = {"test-key-001": PublishedKey("test-key-001", KEY.public_key(), None, None)}


def minimal_export(**changes: Json) -> dict[str, Any]:
    """The spec's "Minimal valid export", with ``changes`` applied, signed by KEY."""
    document: dict[str, Any] = {
        "engram_version": "0.1",
        "issued_at": "2026-01-01T10:00:00Z",
        "expires_at": "2026-01-01T22:00:00Z",
        "kid": "test-key-001",
        "issuer": {"name": "Test Provider", "url": "https://example.com"},
        "subject": {"id": "550e8400-e29b-41d4-a716-446655440000", "display_name": "Test User"},
        "scope": "full",
        "identity": {
            "display_name": "Test User",
            "timezone": "UTC",
            "created_at": "2026-01-01T00:00:00Z",
            "last_updated": "2026-01-01T00:00:00Z",
        },
        "beliefs": [],
        "corrections": [],
        "evolution": [],
        "system_prompt_injection": "User: Test User (UTC).",
    }
    document.update(changes)
    return sign_document(document, KEY)


def verify(document: dict[str, Any], now: datetime = NOW) -> ContextView:
    return ContextView.from_export(verify_signed(document, KEYS, now=now, clock_skew=SKEW))


@pytest.mark.req("engram.context.r3.verify-every-export", "engram.context.r3.select-kid")
def test_the_minimal_fixture_verifies_and_injects_its_prompt() -> None:
    view = verify(minimal_export())
    assert view.system_prompt() == "User: Test User (UTC)."
    assert view.kid == "test-key-001"
    assert view.expires_at == datetime(2026, 1, 1, 22, 0, 0, tzinfo=UTC)


@pytest.mark.req("engram.context.r1.reject-expired")
def test_the_expired_fixture_is_rejected() -> None:
    # The spec's "Expired export (runtimes must reject)": expires_at 2020-01-01. Signed but old,
    # so it fails the lifetime check first; moved inside 24 h it fails on expiry.
    with pytest.raises(MalformedExport, match="not after issued_at"):
        verify(minimal_export(expires_at="2020-01-01T00:00:00Z"))
    with pytest.raises(ExportExpired, match="expired at 2026-01-01T22:00:00Z"):
        verify(minimal_export(), now=datetime(2026, 1, 2, 0, 0, 0, tzinfo=UTC))


@pytest.mark.req("engram.context.r1.reject-expired")
def test_an_export_is_refused_from_the_second_it_expires() -> None:
    expires = datetime(2026, 1, 1, 22, 0, 0, tzinfo=UTC)
    assert verify(minimal_export(), now=expires - timedelta(microseconds=1)).expires_at == expires
    with pytest.raises(ExportExpired):
        verify(minimal_export(), now=expires)


@pytest.mark.req("engram.runtime.expiry-too-long")
def test_more_than_24_hours_of_life_is_refused() -> None:
    with pytest.raises(ExpiryTooLong, match="more than 24 h"):
        verify(minimal_export(expires_at="2026-01-02T10:00:01Z"))
    assert verify(minimal_export(expires_at="2026-01-02T10:00:00Z")).kid == "test-key-001"


@pytest.mark.req("engram.runtime.unsupported-version")
def test_an_unsupported_version_is_refused_before_the_signature_is_read() -> None:
    with pytest.raises(UnsupportedVersion, match=r"'0\.2'"):
        verify(minimal_export(engram_version="0.2"))


@pytest.mark.req("engram.context.r3.select-kid")
def test_a_kid_that_is_not_published_is_refused() -> None:
    with pytest.raises(UnknownKeyId, match="'other-key'"):
        verify(minimal_export(kid="other-key"))


@pytest.mark.req("engram.context.r3.reject-bad-signature")
def test_an_edited_member_or_a_foreign_signature_is_refused() -> None:
    edited = minimal_export()
    edited["system_prompt_injection"] = "User: Mallory (UTC)."
    with pytest.raises(SignatureInvalid):
        verify(edited)
    foreign = sign_document(minimal_export(), PrivateKey.generate())
    with pytest.raises(SignatureInvalid):
        verify(foreign)
    unsigned = {k: v for k, v in minimal_export().items() if k != "signature"}
    with pytest.raises(SignatureInvalid, match="no signature"):
        verify(unsigned)


@pytest.mark.req("engram.runtime.never-hold-unverified")
def test_an_export_issued_beyond_the_skew_allowance_is_refused() -> None:
    early = NOW - timedelta(hours=2, seconds=61)  # issued_at 10:00 lies 61 s ahead of this clock
    early_but_forgiven = NOW - timedelta(hours=2, seconds=59)
    assert verify(minimal_export(), now=early_but_forgiven).kid == "test-key-001"
    with pytest.raises(MalformedExport, match="clock-skew"):
        verify(minimal_export(), now=early)


@pytest.mark.req("engram.context.r1.inject")
def test_an_empty_injection_is_rebuilt_from_the_beliefs() -> None:
    belief: JsonObject = {
        "id": "b1",
        "category": "preference",
        "statement": "Prefers short answers",
        "confidence": 0.9,
        "version": 1,
    }
    view = verify(minimal_export(system_prompt_injection="", beliefs=[belief]))
    assert view.system_prompt() == (
        "User: Test User (UTC).\n"
        "Known about the user (scope full):\n"
        "- [preference] Prefers short answers (confidence 0.90)"
    )
