"""Signatures over canonical JSON, checked with cryptography directly on hand-written bytes."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from engram.core.canonical import JsonObject
from engram.core.keys import PrivateKey
from engram.core.signing import sign_document, sign_json, verify_document, verify_json
from engram.errors import CanonicalJsonError, SignatureInvalid, VerificationError

EXPORT: JsonObject = {
    "engram_version": "0.1",
    "issued_at": "2026-01-01T10:00:00Z",
    "expires_at": "2026-01-01T22:00:00Z",
    "kid": "test-key-001",
    "issuer": {"name": "Test Provider", "url": "https://example.com"},
    "subject": {"id": "550e8400-e29b-41d4-a716-446655440000", "display_name": "Test User"},
    "scope": "full",
    "beliefs": [],
}
# The RFC 8785 bytes of EXPORT, written out by hand: members sorted, no whitespace.
EXPORT_JCS = (
    b'{"beliefs":[],"engram_version":"0.1","expires_at":"2026-01-01T22:00:00Z",'
    b'"issued_at":"2026-01-01T10:00:00Z","issuer":{"name":"Test Provider",'
    b'"url":"https://example.com"},"kid":"test-key-001","scope":"full",'
    b'"subject":{"display_name":"Test User","id":"550e8400-e29b-41d4-a716-446655440000"}}'
)


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.mark.req("engram.core.signature-over-jcs")
def test_sign_json_signs_the_canonical_bytes() -> None:
    key = PrivateKey.generate()
    signature = sign_json(EXPORT, key)
    assert "=" not in signature
    raw_public = Ed25519PublicKey.from_public_bytes(key.public_key().raw)
    raw_public.verify(_b64url_decode(signature), EXPORT_JCS)  # raises if not over those bytes


@pytest.mark.req("engram.core.signature-over-jcs")
def test_verification_ignores_member_order_but_not_content() -> None:
    key = PrivateKey.generate()
    signature = sign_json(EXPORT, key)
    reordered = dict(reversed(list(EXPORT.items())))
    verify_json(reordered, signature, key.public_key())
    with pytest.raises(SignatureInvalid):
        verify_json({**EXPORT, "scope": "professional"}, signature, key.public_key())
    with pytest.raises(SignatureInvalid):
        verify_json(EXPORT, signature, PrivateKey.generate().public_key())


@pytest.mark.req("engram.core.signature-over-jcs")
def test_sign_document_signs_the_document_without_its_signature() -> None:
    key = PrivateKey.generate()
    unsigned = {**EXPORT, "signature": "base64url-placeholder"}
    signed = sign_document(unsigned, key)
    assert unsigned["signature"] == "base64url-placeholder"  # the input is untouched
    assert list(signed) == list(unsigned)  # the member keeps its place for human readers
    raw_public = Ed25519PublicKey.from_public_bytes(key.public_key().raw)
    signature = signed["signature"]
    assert isinstance(signature, str)
    raw_public.verify(_b64url_decode(signature), EXPORT_JCS)
    verify_document(signed, key.public_key())


@pytest.mark.req("engram.core.signature-over-jcs")
def test_documents_can_carry_their_signature_under_another_name() -> None:
    key = PrivateKey.generate()
    signed = sign_document(EXPORT, key, field="sig")
    verify_document(signed, key.public_key(), field="sig")
    with pytest.raises(SignatureInvalid, match="no 'signature'"):
        verify_document(signed, key.public_key())


@pytest.mark.req("engram.core.signature-over-jcs")
@pytest.mark.parametrize(
    "signature",
    ["", "not base64url!", "AAAA", "a" * 85 + "=", 42],
)
def test_malformed_signatures_fail_verification(signature: object) -> None:
    key = PrivateKey.generate()
    with pytest.raises(SignatureInvalid):
        verify_json(EXPORT, signature, key.public_key())  # type: ignore[arg-type]


@pytest.mark.req("engram.core.signature-over-jcs")
def test_a_tampered_document_fails_verification() -> None:
    key = PrivateKey.generate()
    signed = sign_document(EXPORT, key)
    tampered = {**signed, "beliefs": [{"id": "b1"}]}
    with pytest.raises(VerificationError):
        verify_document(tampered, key.public_key())


@pytest.mark.req("engram.core.verify-refuses-non-ijson", "engram.core.ijson-non-finite")
def test_signing_refuses_and_verification_fails_on_non_i_json() -> None:
    key = PrivateKey.generate()
    with pytest.raises(CanonicalJsonError):
        sign_json({"confidence": float("nan")}, key)
    signature = sign_json({"n": 1}, key)
    with pytest.raises(SignatureInvalid, match="no canonical form"):
        verify_json({"n": 2**60}, signature, key.public_key())
    with pytest.raises(SignatureInvalid):
        verify_document({"statement": "\ud800", "signature": signature}, key.public_key())
