"""The independent peers' own cryptography and canonical JSON: nothing here imports engram.

Two RFC 8785 implementations, so the peers do not even agree with each other on whose code
makes the signed bytes: :func:`jcs_package` is the ``rfc8785`` package, :func:`jcs_by_hand` is
written here from RFC 8785 §3.2 (member names sorted by their UTF-16 code units, strings with
the minimal escapes, ECMAScript number text for the plain decimals the peers write). Ed25519 is
``cryptography``'s. base64url is written padded or unpadded as the peer's profile says (RFC 4648
§5 lets the pad be dropped, so both are base64url).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any

import rfc8785
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

Jcs = Callable[[Any], bytes]


def jcs_package(value: Any) -> bytes:
    """RFC 8785 bytes by the ``rfc8785`` package."""
    return rfc8785.dumps(value)


def jcs_by_hand(value: Any) -> bytes:
    """RFC 8785 bytes by this file's own writer."""
    return _write(value).encode("utf-8")


def _write(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ",".join(_write(v) for v in value) + "]"
    if isinstance(value, dict):
        names = sorted(value, key=lambda name: name.encode("utf-16-be"))
        return "{" + ",".join(_string(n) + ":" + _write(value[n]) for n in names) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _number(number: float) -> str:
    if not math.isfinite(number):
        raise ValueError("not a JSON number")
    if number.is_integer() and abs(number) < 2**53:
        return str(int(number))
    text = repr(number)
    if "e" in text or "E" in text:
        raise ValueError("this writer only writes plain decimals, which is all the peers send")
    return text


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _string(text: str) -> str:
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def b64url(data: bytes, *, padded: bool) -> str:
    text = base64.urlsafe_b64encode(data).decode("ascii")
    return text if padded else text.rstrip("=")


class PeerKey:
    """An Ed25519 key pair of one peer."""

    def __init__(self) -> None:
        self._private = Ed25519PrivateKey.generate()

    def public_raw(self) -> bytes:
        return self._private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )

    def sign(self, data: bytes) -> bytes:
        return self._private.sign(data)


__all__ = ["Jcs", "PeerKey", "b64url", "jcs_by_hand", "jcs_package"]
