"""base64url without padding (RFC 4648 §5), as the Engram protocol uses for keys and signatures."""

from __future__ import annotations

import base64
import binascii
import re

from engram.errors import InvalidRequest

_B64URL = re.compile(r"^[A-Za-z0-9_-]*$")


def b64url_encode(data: bytes) -> str:
    """Encode bytes as base64url with the ``=`` padding removed."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Decode unpadded base64url strictly: padding, other alphabets and stray bits are refused."""
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
