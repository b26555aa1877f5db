"""base64url (RFC 4648 §5), as the Engram protocol uses for keys and signatures.

engram always writes it without padding. Reading, the strict form (:func:`b64url_decode`) refuses
the ``=`` pad, so a signature engram itself produced has exactly one spelling; the lenient form
(``allow_padding=True``) also takes correctly padded text, because RFC 4648 §3.2 makes the pad
optional and the Engram page only says "base64url". The runtime and the conformance runner read
other providers' keys and signatures that way (docs/spec/keys-and-signatures.md, "Encodings").
Either way other alphabets, misplaced or surplus padding and stray low bits are refused.
"""

from __future__ import annotations

import base64
import binascii
import re

from engram.errors import InvalidRequest

_B64URL = re.compile(r"^[A-Za-z0-9_-]*$")
_PADDED = re.compile(r"^[A-Za-z0-9_-]*(?:[A-Za-z0-9_-]{2}==|[A-Za-z0-9_-]{3}=)$")


def b64url_encode(data: bytes) -> str:
    """Encode bytes as base64url with the ``=`` padding removed."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str, *, allow_padding: bool = False) -> bytes:
    """Decode base64url strictly: other alphabets and stray bits are refused, and so is the
    ``=`` pad unless ``allow_padding`` (then only the exact pad RFC 4648 §4 writes)."""
    if allow_padding and text.endswith("="):
        if len(text) % 4 != 0 or not _PADDED.match(text):
            raise InvalidRequest("not base64url: the = padding is not the one RFC 4648 writes")
        text = text.rstrip("=")
    if not _B64URL.match(text) or len(text) % 4 == 1:
        raise InvalidRequest("not unpadded base64url")
    padded = text + "=" * (-len(text) % 4)
    try:
        data = base64.urlsafe_b64decode(padded)
    except (binascii.Error, ValueError) as e:  # pragma: no cover - the regex admits only valid text
        raise InvalidRequest("not unpadded base64url") from e
    # Non-canonical encodings (stray low bits in the last character) would let two strings name
    # one signature; refuse them so a signature has exactly one spelling.
    if b64url_encode(data) != text:
        raise InvalidRequest("non-canonical base64url")
    return data


__all__ = ["b64url_decode", "b64url_encode"]
