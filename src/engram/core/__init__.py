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

from engram.core.canonical import (
    MAX_SAFE_INTEGER,
    Json,
    JsonArray,
    JsonObject,
    JsonScalar,
    canonicalize,
    check_i_json,
    digest_hex,
    parse_object,
    parse_strict,
)
from engram.core.clock import (
    Clock,
    FixedClock,
    SystemClock,
    format_instant,
    format_instant_precise,
    parse_instant,
)
from engram.core.encoding import b64url_decode, b64url_encode
from engram.core.jsonio import dumps_text
from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.core.dsse import (
        IN_TOTO_STATEMENT_V1,
        PAYLOAD_TYPE_IN_TOTO,
        VerifiedEnvelope,
        in_toto_statement,
        load_in_toto_statement,
        pae,
        sign_envelope,
        statement_subject,
        verify_envelope,
    )
    from engram.core.keyring import (
        DEFAULT_PUBLISH_LEAD,
        KeyInfo,
        RotationPlan,
        active_key,
        new_key_info,
        note_signed,
        pending_key,
        plan_rotation,
        published_keys,
        retire,
    )
    from engram.core.keys import (
        KEY_ID_PREFIX,
        PrivateKey,
        PublicKey,
        load_private_key,
        save_private_key,
    )
    from engram.core.signing import (
        sign_document,
        sign_json,
        verify_document,
        verify_json,
    )

# Imported on first use (PEP 562): the signing modules pull in ``cryptography`` (about 20 ms),
# which a memory command such as ``engram recall`` never needs (issue 16, cold CLI start).
_LAZY: dict[str, str] = {
    "IN_TOTO_STATEMENT_V1": "engram.core.dsse",
    "PAYLOAD_TYPE_IN_TOTO": "engram.core.dsse",
    "VerifiedEnvelope": "engram.core.dsse",
    "in_toto_statement": "engram.core.dsse",
    "load_in_toto_statement": "engram.core.dsse",
    "pae": "engram.core.dsse",
    "sign_envelope": "engram.core.dsse",
    "statement_subject": "engram.core.dsse",
    "verify_envelope": "engram.core.dsse",
    "DEFAULT_PUBLISH_LEAD": "engram.core.keyring",
    "KeyInfo": "engram.core.keyring",
    "RotationPlan": "engram.core.keyring",
    "active_key": "engram.core.keyring",
    "new_key_info": "engram.core.keyring",
    "note_signed": "engram.core.keyring",
    "pending_key": "engram.core.keyring",
    "plan_rotation": "engram.core.keyring",
    "published_keys": "engram.core.keyring",
    "retire": "engram.core.keyring",
    "KEY_ID_PREFIX": "engram.core.keys",
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
    "DEFAULT_PUBLISH_LEAD",
    "IN_TOTO_STATEMENT_V1",
    "KEY_ID_PREFIX",
    "MAX_SAFE_INTEGER",
    "PAYLOAD_TYPE_IN_TOTO",
    "Clock",
    "FixedClock",
    "Json",
    "JsonArray",
    "JsonObject",
    "JsonScalar",
    "KeyInfo",
    "PrivateKey",
    "PublicKey",
    "RotationPlan",
    "SystemClock",
    "VerifiedEnvelope",
    "active_key",
    "b64url_decode",
    "b64url_encode",
    "canonicalize",
    "check_i_json",
    "digest_hex",
    "dumps_text",
    "format_instant",
    "format_instant_precise",
    "in_toto_statement",
    "load_in_toto_statement",
    "load_private_key",
    "new_key_info",
    "note_signed",
    "pae",
    "parse_instant",
    "parse_object",
    "parse_strict",
    "pending_key",
    "plan_rotation",
    "published_keys",
    "retire",
    "save_private_key",
    "sign_document",
    "sign_envelope",
    "sign_json",
    "statement_subject",
    "verify_document",
    "verify_envelope",
    "verify_json",
]
