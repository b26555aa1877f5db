"""The §18 signature of a Portable AI Memory (PAM) 1.0 document: Ed25519 over the RFC 8785 bytes
of ``{checksum, export_id, export_date, owner_id}``, base64url; the public key as a Multikey,
a ``did:key`` or bare base58. Only that small payload is signed: the checksum is what covers
the memories, so a reader that computes the checksum as the memories stream by verifies the
signature without holding them. Decisions in docs/spec/pam.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import base58

from engram.core.canonical import Json, JsonObject, canonicalize
from engram.core.encoding import b64url_decode, b64url_encode
from engram.core.keys import PrivateKey, PublicKey
from engram.errors import InvalidRequest, SignatureInvalid
from engram.level.internals import public_from_multikey, public_multikey
from engram.transfer._pam_format import format_instant, parse_instant


def signature_payload(document: Mapping[str, Json]) -> bytes:
    """§18.3: the RFC 8785 bytes of ``{checksum, export_id, export_date, owner_id}``."""
    integrity = document.get("integrity")
    found = integrity.get("checksum") if isinstance(integrity, dict) else None
    if not isinstance(found, str):
        raise SignatureInvalid("a signed PAM document needs integrity.checksum (§18.3 step 1)")
    owner = document.get("owner")
    payload: JsonObject = {
        "checksum": found,
        "export_id": document.get("export_id"),
        "export_date": document.get("export_date"),
        "owner_id": owner.get("id") if isinstance(owner, dict) else None,
    }
    return canonicalize(payload)


def public_key_text(key: PublicKey) -> str:
    """How engram writes ``signature.public_key``: a Multikey (``z6Mk…``, base58-btc of the
    multicodec ed25519-pub prefix and the 32 bytes), the spec's own example form."""
    return public_multikey(key)


def did_key(key: PublicKey) -> str:
    """The ``did:key`` URL of the key's verification method (``did:key:z6Mk…#z6Mk…``)."""
    multikey = public_multikey(key)
    return f"did:key:{multikey}#{multikey}"


def read_public_key(text: Json) -> PublicKey:
    """``signature.public_key`` for Ed25519: a Multikey, a ``did:key``, or the schema's bare
    base58 of the 32 raw bytes."""
    if not isinstance(text, str) or not text:
        raise SignatureInvalid("signature.public_key: expected a string")
    if text.startswith("did:key:"):
        text = text.removeprefix("did:key:").split("#", 1)[0]
    if text.startswith("z"):
        try:
            return public_from_multikey(text)
        except InvalidRequest:
            pass  # a bare base58 key that happens to start with "z"
    try:
        raw = base58.b58decode(text.encode("ascii"))
    except (ValueError, UnicodeEncodeError) as e:
        raise SignatureInvalid("signature.public_key: not base58 (nor a Multikey)") from e
    if len(raw) != 32:
        raise SignatureInvalid(
            f"signature.public_key: an Ed25519 key is 32 bytes, this decodes to {len(raw)}"
        )
    return PublicKey.from_raw(raw)


def signature_block(
    document: Mapping[str, Json], key: PrivateKey, signed_at: datetime
) -> JsonObject:
    """§18.1/§18.3: the ``signature`` member for ``document`` (which carries its integrity).

    The value is unpadded base64url (RFC 4648 §5 without ``=``): the spec repository's
    validator (``scripts/validate_pam.py``) accepts only ``[A-Za-z0-9_-]``, and its examples
    write it so; Appendix D's ``urlsafe_b64decode`` needs the padding restored first
    (docs/spec/pam.md).
    """
    public = key.public_key()
    raw = key.sign(signature_payload(document))
    return {
        "algorithm": "Ed25519",
        "public_key": public_key_text(public),
        "value": b64url_encode(raw),
        "signed_at": format_instant(signed_at),
        "key_id": did_key(public),
    }


ED25519_SIGNATURE_BYTES = 64
# A value that is no signature at all is most often an example's placeholder (the spec's own
# example-memory-store.json carries one): say how to import such a document anyway.
_HINT = (
    '; if it is a placeholder, remove the document\'s "signature" member to import it '
    "unsigned (nothing was imported)"
)


@dataclass(frozen=True)
class SignatureCheck:
    """A verified signature: which key made it."""

    key: PublicKey
    multikey: str
    key_id: str | None


def verify_signature(document: Mapping[str, Json]) -> SignatureCheck:
    """§18.4: the signature verifies over the payload under ``signature.public_key``.

    Only Ed25519 is verified; a signature in another algorithm is refused rather than taken on
    trust (engram imports nothing whose signature it cannot check). ``signed_at`` must not be
    before ``export_date`` (§18.5 rule 3).
    """
    block = document.get("signature")
    if not isinstance(block, dict):
        raise SignatureInvalid("the document carries no signature")
    if block.get("algorithm") != "Ed25519":
        raise SignatureInvalid(
            f"signature.algorithm {block.get('algorithm')!r} is not verified by engram "
            "(Ed25519 only); nothing was imported"
        )
    key = read_public_key(block.get("public_key"))
    value = block.get("value")
    if not isinstance(value, str):
        raise SignatureInvalid("signature.value: expected a string")
    try:
        raw = b64url_decode(value, allow_padding=True)
    except InvalidRequest as e:
        raise SignatureInvalid(f"signature.value: not base64url ({e.message}){_HINT}") from e
    if len(raw) != ED25519_SIGNATURE_BYTES:
        raise SignatureInvalid(
            f"signature.value: {len(raw)} bytes, where an Ed25519 signature is "
            f"{ED25519_SIGNATURE_BYTES}{_HINT}"
        )
    key.verify(raw, signature_payload(document))
    signed = parse_instant(block.get("signed_at"), "signature.signed_at")
    exported = parse_instant(document.get("export_date"), "export_date")
    if signed < exported:
        raise SignatureInvalid("signature.signed_at is before export_date (§18.5 rule 3)")
    key_id = block.get("key_id")
    return SignatureCheck(key, public_multikey(key), key_id if isinstance(key_id, str) else None)


__all__ = [
    "ED25519_SIGNATURE_BYTES",
    "SignatureCheck",
    "did_key",
    "public_key_text",
    "read_public_key",
    "signature_block",
    "signature_payload",
    "verify_signature",
]
