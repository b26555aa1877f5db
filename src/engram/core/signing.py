"""Detached Ed25519 signatures over canonical JSON, and documents that carry their own.

Spec: Engram v0.1 Conformance (the export ``signature`` is base64url Ed25519 over the RFC 8785
bytes of the envelope without ``signature``; docs/spec/context-export.md) and
OpenWOP v2 Conformance §"Canonical JSON" (a verifier that meets a value that is not I-JSON
MUST fail verification). docs/spec/keys-and-signatures.md §"Signing JSON" writes the rules out.

The signed bytes always come from :func:`engram.core.canonical.canonicalize`: a signature made
here verifies in any RFC 8785 implementation, whatever order or spacing the JSON travelled in.
Verification raises :class:`~engram.errors.VerificationError` subclasses; it never returns a bool.
"""

from __future__ import annotations

from collections.abc import Mapping

from engram.core.canonical import Json, JsonObject, canonicalize
from engram.core.encoding import b64url_decode, b64url_encode
from engram.core.keys import PrivateKey, PublicKey
from engram.errors import CanonicalJsonError, InvalidRequest, SignatureInvalid

SIGNATURE_FIELD = "signature"


def sign_json(value: object, key: PrivateKey) -> str:
    """Base64url (unpadded) Ed25519 signature over ``canonicalize(value)``.

    Raises :class:`~engram.errors.CanonicalJsonError` if ``value`` is not I-JSON: we refuse to
    sign what another implementation could canonicalise differently.
    """
    return b64url_encode(key.sign(canonicalize(value)))


def verify_json(value: object, signature: str, key: PublicKey) -> None:
    """Return if ``signature`` signs ``canonicalize(value)`` under ``key``; raise otherwise.

    Every failure is :class:`~engram.errors.SignatureInvalid`: a signature that is not unpadded
    base64url, a value that is not I-JSON (so has no canonical bytes), or bytes that do not
    verify.
    """
    if not isinstance(signature, str):
        raise SignatureInvalid("signature is not a string")
    try:
        raw = b64url_decode(signature)
    except InvalidRequest as e:
        raise SignatureInvalid(f"signature is not unpadded base64url: {e.message}") from e
    try:
        data = canonicalize(value)
    except CanonicalJsonError as e:
        raise SignatureInvalid(f"signed value has no canonical form: {e.message}") from e
    key.verify(raw, data)


def sign_document(
    doc: Mapping[str, Json], key: PrivateKey, field: str = SIGNATURE_FIELD
) -> JsonObject:
    """A copy of ``doc`` whose ``field`` is the signature over the document without ``field``.

    An existing ``field`` is replaced in place (member order is kept for human readers; it
    does not matter to the signature). ``doc`` itself is not modified.
    """
    body = _without(doc, field)
    signature = sign_json(body, key)
    signed: JsonObject = dict(doc)
    signed[field] = signature
    return signed


def verify_document(
    doc: Mapping[str, object], key: PublicKey, field: str = SIGNATURE_FIELD
) -> None:
    """Verify a document made by :func:`sign_document`; raise SignatureInvalid on any failure."""
    if not isinstance(doc, Mapping):
        raise SignatureInvalid("a signed document is a JSON object")
    signature = doc.get(field)
    if not isinstance(signature, str):
        raise SignatureInvalid(f"document has no {field!r} string")
    verify_json(_without(doc, field), signature, key)


def _without(doc: Mapping[str, object], field: str) -> dict[str, object]:
    return {name: member for name, member in doc.items() if name != field}


__all__ = ["SIGNATURE_FIELD", "sign_document", "sign_json", "verify_document", "verify_json"]
