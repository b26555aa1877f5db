"""engram.core: the pure trust spine every other layer stands on.

- :mod:`engram.core.canonical`: RFC 8785 canonical JSON and the strict I-JSON (RFC 7493) parser;
  the only source of signed or hashed JSON bytes.
- :mod:`engram.core.keys`: Ed25519 keys, key ids, 0600 key files.
- :mod:`engram.core.keyring`: which key signs, which keys are published, rotation (pure).
- :mod:`engram.core.signing`: detached signatures over canonical JSON and self-signed documents.
- :mod:`engram.core.dsse`: DSSE v1 envelopes and in-toto Statement v1 payloads.
- :mod:`engram.core.jsonio`: JSON text for people and unsigned wire bodies.
- :mod:`engram.core.encoding`, :mod:`engram.core.clock`: base64url and time as a parameter.

Spec map: docs/spec/canonical-json.md and docs/spec/keys-and-signatures.md.
"""

from typing import TYPE_CHECKING

from engram.core.canonical import Json, JsonObject, canonicalize, parse_strict
from engram.core.clock import Clock, FixedClock, SystemClock
from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.core.dsse import VerifiedEnvelope, sign_envelope, verify_envelope
    from engram.core.keyring import new_key_info
    from engram.core.keys import PrivateKey, PublicKey, load_private_key, save_private_key
    from engram.core.signing import (
        sign_document,
        sign_json,
        verify_document,
        verify_json,
    )

# Imported on first use (PEP 562): the signing modules pull in ``cryptography`` (about 20 ms),
# which a memory command such as ``engram recall`` never needs (issue 16, cold CLI start).
_LAZY: dict[str, str] = {
    "VerifiedEnvelope": "engram.core.dsse",
    "sign_envelope": "engram.core.dsse",
    "verify_envelope": "engram.core.dsse",
    "new_key_info": "engram.core.keyring",
    "PrivateKey": "engram.core.keys",
    "PublicKey": "engram.core.keys",
    "load_private_key": "engram.core.keys",
    "save_private_key": "engram.core.keys",
    "sign_document": "engram.core.signing",
    "sign_json": "engram.core.signing",
    "verify_document": "engram.core.signing",
    "verify_json": "engram.core.signing",
}


if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())


__all__ = [
    "Clock",
    "FixedClock",
    "Json",
    "JsonObject",
    "PrivateKey",
    "PublicKey",
    "SystemClock",
    "VerifiedEnvelope",
    "canonicalize",
    "load_private_key",
    "new_key_info",
    "parse_strict",
    "save_private_key",
    "sign_document",
    "sign_envelope",
    "sign_json",
    "verify_document",
    "verify_envelope",
    "verify_json",
]
