"""Multibase, Multikey and multihash: how keys, signatures and digests appear in credentials.

- multibase base58-btc: ``z`` + base58 (Bitcoin alphabet), via the ``base58`` library;
- Multikey (W3C Controlled Identifiers §2.2.2): an Ed25519 public key is multibase of the
  multicodec prefix ``0xed 0x01`` + the raw 32 bytes (``z6Mk...``), a private key ``0x80 0x26`` +
  the 32-byte seed (``z3u2...``), as in the W3C eddsa-jcs-2022 test vectors' ``keyPair.json``;
- multihash sha2-256: ``0x12 0x20`` + the digest; ``acx:digestMultibase`` carries it base64url
  (``u`` prefix), the encoding the Multibase table names ``base64url``.
"""

from __future__ import annotations

import base64
import binascii

import base58
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from engram.core.bounds import MAX_BASE58_CHARS, check_length
from engram.core.keys import PrivateKey, PublicKey
from engram.errors import InvalidRequest

ED25519_PUB = b"\xed\x01"
ED25519_PRIV = b"\x80\x26"
SHA2_256 = b"\x12\x20"


def base58btc_encode(data: bytes) -> str:
    return "z" + base58.b58encode(data).decode("ascii")


def base58btc_decode(text: str) -> bytes:
    """Decode ``z``-prefixed base58-btc; anything else is :class:`InvalidRequest`."""
    if not isinstance(text, str) or not text.startswith("z") or len(text) < 2:
        raise InvalidRequest("not multibase base58-btc (a 'z' prefix)")
    # base58 decoding is quadratic in the length: the length is checked first.
    check_length(text, MAX_BASE58_CHARS, "a base58-btc value")
    try:
        return base58.b58decode(text[1:].encode("ascii"))
    except (ValueError, UnicodeEncodeError) as e:
        raise InvalidRequest("not multibase base58-btc: a character outside the alphabet") from e


def public_multikey(key: PublicKey) -> str:
    return base58btc_encode(ED25519_PUB + key.raw)


def public_from_multikey(text: str) -> PublicKey:
    raw = base58btc_decode(text)
    if not raw.startswith(ED25519_PUB) or len(raw) != 34:
        raise InvalidRequest("not an Ed25519 Multikey (multicodec 0xed01 + 32 bytes)")
    return PublicKey.from_raw(raw[2:])


def private_multikey(key: PrivateKey) -> str:
    # engram.core.keys keeps the raw seed private; PKCS#8 is its one export, so go through it.
    loaded = serialization.load_pem_private_key(key.to_pem(), password=None)
    assert isinstance(loaded, Ed25519PrivateKey)
    seed = loaded.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return base58btc_encode(ED25519_PRIV + seed)


def private_from_multikey(text: str) -> PrivateKey:
    raw = base58btc_decode(text)
    if not raw.startswith(ED25519_PRIV) or len(raw) != 34:
        raise InvalidRequest("not an Ed25519 private Multikey (multicodec 0x8026 + 32 bytes)")
    return PrivateKey(Ed25519PrivateKey.from_private_bytes(raw[2:]))


def digest_multibase(sha256_digest: bytes) -> str:
    """``u`` + base64url (no padding) of the sha2-256 multihash of a digest."""
    if len(sha256_digest) != 32:
        raise InvalidRequest("a SHA-256 digest is 32 bytes")
    return "u" + base64.urlsafe_b64encode(SHA2_256 + sha256_digest).rstrip(b"=").decode("ascii")


def digest_from_multibase(text: str) -> bytes:
    """The SHA-256 digest in ``acx:digestMultibase``.

    Reads the multihash forms (``u`` base64url, ``z`` base58-btc) and, for the reference's
    files, its ``sha256:<hex>`` spelling (not multibase; docs/spec/acx-levels.md §8).
    """
    if text.startswith("sha256:") and len(text) == 71:
        try:
            return bytes.fromhex(text[7:])
        except ValueError as e:
            raise InvalidRequest("sha256:<hex> with a non-hex digit") from e
    if text.startswith("u"):
        try:
            raw = base64.urlsafe_b64decode(text[1:] + "=" * (-len(text[1:]) % 4))
        except (binascii.Error, ValueError) as e:
            raise InvalidRequest("not multibase base64url") from e
    elif text.startswith("z"):
        raw = base58btc_decode(text)
    else:
        raise InvalidRequest(f"unsupported multibase prefix {text[:1]!r}")
    if not raw.startswith(SHA2_256) or len(raw) != 34:
        raise InvalidRequest("not a sha2-256 multihash (0x12 0x20 + 32 bytes)")
    return raw[2:]


__all__ = [
    "base58btc_decode",
    "base58btc_encode",
    "digest_from_multibase",
    "digest_multibase",
    "private_from_multikey",
    "private_multikey",
    "public_from_multikey",
    "public_multikey",
]
