"""DSSE v1 envelopes and in-toto Statement v1 payloads.

Spec: DSSE v1 (github.com/secure-systems-lab/dsse, ``protocol.md`` and ``envelope.md``), in-toto
Attestation Framework Statement v1, and lboel/acx@85f1358 SPEC.md §4.2 and §12 item 3 (the ROM
manifest is signed as a DSSE envelope with ``payloadType application/vnd.in-toto+json``; the
envelope holds exactly ``payloadType``, ``payload`` and ``signatures``; the keyid is
``ed25519:<hex sha256(DER SPKI)>``).

The signature covers PAE, never the raw payload::

    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

where LEN is the ASCII decimal byte length and SP one space, so neither the type nor the body can
be shifted into the other. ``payload`` and ``sig`` are standard base64 with padding (DSSE's
envelope encoding), unlike the base64url of engram's own JSON signatures.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engram.core.canonical import JsonArray, JsonObject, canonicalize, parse_strict
from engram.core.keys import PrivateKey, PublicKey
from engram.errors import CanonicalJsonError, InvalidRequest, SignatureInvalid, UnknownKeyId

PAYLOAD_TYPE_IN_TOTO = "application/vnd.in-toto+json"
IN_TOTO_STATEMENT_V1 = "https://in-toto.io/Statement/v1"

_ENVELOPE_MEMBERS = frozenset({"payloadType", "payload", "signatures"})
_SIGNATURE_MEMBERS = frozenset({"keyid", "sig"})


@dataclass(frozen=True)
class VerifiedEnvelope:
    """What a verified envelope vouches for: read the payload only from here."""

    payload_type: str
    payload: bytes
    keyid: str


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 Pre-Authentication Encoding of ``payload_type`` and ``payload``."""
    type_bytes = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(type_bytes), type_bytes, len(payload), payload)


def sign_envelope(
    payload: bytes, payload_type: str, key: PrivateKey, keyid: str | None = None
) -> dict[str, Any]:
    """A DSSE envelope with one signature by ``key``.

    ``keyid`` defaults to the key's content-addressed id (``ed25519:<hex>``).
    """
    if not isinstance(payload, bytes | bytearray):
        raise InvalidRequest("a DSSE payload is bytes")
    body = bytes(payload)
    signature = key.sign(pae(payload_type, body))
    return {
        "payloadType": payload_type,
        "payload": _b64encode(body),
        "signatures": [
            {
                "keyid": keyid if keyid is not None else key.public_key().key_id,
                "sig": _b64encode(signature),
            }
        ],
    }


def verify_envelope(
    envelope: Mapping[str, Any],
    trusted: Mapping[str, PublicKey],
    *,
    expected_payload_type: str | None = None,
) -> VerifiedEnvelope:
    """Verify ``envelope`` against ``trusted`` (keyid -> key) and return what it signs.

    Refused with :class:`~engram.errors.SignatureInvalid`: a malformed envelope (members other
    than exactly ``payloadType``/``payload``/``signatures``, a signature entry other than exactly
    ``keyid``/``sig``, bad base64), a payload type other than ``expected_payload_type``, and a
    signature that does not verify. :class:`~engram.errors.UnknownKeyId` when no signature names
    a trusted key. One verifying signature by a trusted key suffices (DSSE threshold 1).
    """
    if not isinstance(envelope, Mapping):
        raise SignatureInvalid("a DSSE envelope is a JSON object")
    members = set(envelope)
    if members != _ENVELOPE_MEMBERS:
        extra = sorted(str(m) for m in members - _ENVELOPE_MEMBERS)
        missing = sorted(_ENVELOPE_MEMBERS - members)
        raise SignatureInvalid(f"DSSE envelope members: unexpected {extra}, missing {missing}")
    payload_type = envelope["payloadType"]
    if not isinstance(payload_type, str):
        raise SignatureInvalid("DSSE payloadType is not a string")
    if expected_payload_type is not None and payload_type != expected_payload_type:
        raise SignatureInvalid(
            f"DSSE payloadType {payload_type!r} is not the expected {expected_payload_type!r}"
        )
    payload = _b64decode(envelope["payload"], "payload")
    signatures = envelope["signatures"]
    if not isinstance(signatures, Sequence) or isinstance(signatures, str) or not signatures:
        raise SignatureInvalid("DSSE signatures is not a non-empty list")
    entries = [_signature_entry(entry) for entry in signatures]
    message = pae(payload_type, payload)
    known = [(keyid, sig) for keyid, sig in entries if keyid in trusted]
    if not known:
        names = ", ".join(sorted({keyid for keyid, _ in entries}))
        raise UnknownKeyId(f"no DSSE signature is by a trusted key (keyids: {names})")
    failure: SignatureInvalid | None = None
    for keyid, sig in known:
        try:
            trusted[keyid].verify(sig, message)
        except SignatureInvalid as e:
            failure = e
            continue
        return VerifiedEnvelope(payload_type=payload_type, payload=payload, keyid=keyid)
    assert failure is not None
    raise SignatureInvalid(f"DSSE signature does not verify: {failure.message}") from failure


def in_toto_statement(
    subjects: Sequence[Mapping[str, Any]], predicate_type: str, predicate: Mapping[str, Any]
) -> JsonObject:
    """An in-toto Statement v1: ``{_type, subject, predicateType, predicate}``.

    Each subject is ``{"name": str, "digest": {algorithm: lowercase hex}}`` with at least one
    digest (Statement v1 requires ``subject`` to be non-empty and each digest set non-empty).
    """
    if not subjects:
        raise InvalidRequest("an in-toto Statement needs at least one subject")
    checked: JsonArray = [_subject(s) for s in subjects]
    if not isinstance(predicate_type, str) or not predicate_type:
        raise InvalidRequest("predicateType must be a non-empty string (a URI)")
    if not isinstance(predicate, Mapping):
        raise InvalidRequest("an in-toto predicate is a JSON object")
    statement: JsonObject = {
        "_type": IN_TOTO_STATEMENT_V1,
        "subject": checked,
        "predicateType": predicate_type,
        "predicate": dict(predicate),
    }
    canonicalize(statement)  # refuse now, at the signer, anything that is not I-JSON
    return statement


def statement_subject(name: str, sha256_hex: str) -> JsonObject:
    """One Statement ``subject`` entry naming ``name`` by its SHA-256."""
    return _subject({"name": name, "digest": {"sha256": sha256_hex}})


def load_in_toto_statement(payload: bytes) -> dict[str, Any]:
    """Parse a verified payload as an in-toto Statement v1 (strict I-JSON); check its shape."""
    try:
        statement = parse_strict(payload)
    except CanonicalJsonError as e:
        raise InvalidRequest(f"in-toto Statement is not I-JSON: {e.message}") from e
    if not isinstance(statement, dict) or statement.get("_type") != IN_TOTO_STATEMENT_V1:
        raise InvalidRequest(f"payload is not an in-toto Statement v1 ({IN_TOTO_STATEMENT_V1})")
    subjects = statement.get("subject")
    if not isinstance(subjects, list) or not subjects:
        raise InvalidRequest("in-toto Statement has no subject")
    for entry in subjects:
        if not isinstance(entry, dict):
            raise InvalidRequest("in-toto subject is not an object")
        _subject(entry)
    if not isinstance(statement.get("predicateType"), str):
        raise InvalidRequest("in-toto Statement has no predicateType")
    return statement


def _subject(entry: Mapping[str, Any]) -> JsonObject:
    if not isinstance(entry, Mapping):
        raise InvalidRequest("an in-toto subject is an object")
    name = entry.get("name")
    digest = entry.get("digest")
    if not isinstance(name, str):
        raise InvalidRequest("an in-toto subject needs a string name")
    if not isinstance(digest, Mapping) or not digest:
        raise InvalidRequest(f"in-toto subject {name!r} needs a non-empty digest set")
    for algorithm, value in digest.items():
        if not isinstance(algorithm, str) or not isinstance(value, str) or not _is_lower_hex(value):
            raise InvalidRequest(f"in-toto subject {name!r}: digest {algorithm!r} is not hex")
    return {"name": name, "digest": dict(digest)}


def _is_lower_hex(text: str) -> bool:
    return bool(text) and all(c in "0123456789abcdef" for c in text)


def _signature_entry(entry: object) -> tuple[str, bytes]:
    if not isinstance(entry, Mapping) or set(entry) != _SIGNATURE_MEMBERS:
        raise SignatureInvalid("each DSSE signature is exactly {keyid, sig}")
    keyid = entry["keyid"]
    if not isinstance(keyid, str):
        raise SignatureInvalid("DSSE keyid is not a string")
    return keyid, _b64decode(entry["sig"], "sig")


def _b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _b64decode(text: object, what: str) -> bytes:
    # Strict standard base64: the alphabet is checked and the encoding must be the canonical
    # one, so one payload has exactly one spelling in an envelope.
    if not isinstance(text, str):
        raise SignatureInvalid(f"DSSE {what} is not a base64 string")
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError) as e:
        raise SignatureInvalid(f"DSSE {what} is not standard base64") from e
    if _b64encode(data) != text:
        raise SignatureInvalid(f"DSSE {what} is not canonical standard base64")
    return data


__all__ = [
    "IN_TOTO_STATEMENT_V1",
    "PAYLOAD_TYPE_IN_TOTO",
    "VerifiedEnvelope",
    "in_toto_statement",
    "load_in_toto_statement",
    "pae",
    "sign_envelope",
    "statement_subject",
    "verify_envelope",
]
