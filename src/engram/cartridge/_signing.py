"""Signing the ROM manifest: one DSSE envelope over an in-toto Statement v1.

Spec: acx-cartridge-conformance §12 item 3 (§4.2); docs/spec/acx.md §9. Only the ROM manifest is
signed. The envelope is exactly ``{payloadType, payload, signatures}`` with ``payloadType
application/vnd.in-toto+json`` and one Ed25519 signature whose ``keyid`` is ``ed25519:<hex
sha256(DER SPKI)>``. The Statement's single subject is ``{"name": "rom", "digest": {"sha256":
manifest_hash}}``; its predicate carries the manifest itself and the signer (``publisherId``,
``keyid``, ``publicKey``) so that any reader can check the signature - who to *trust* is a
separate question answered by the trust registry (``_trust``).

:func:`check_envelope` is given the manifest derived from live bytes; any disagreement between
the envelope and those bytes raises :class:`CartridgeTampered` with the reason.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from engram.cartridge._errors import CartridgeTampered
from engram.core.canonical import JsonValue, canonicalize
from engram.core.dsse import (
    PAYLOAD_TYPE_IN_TOTO,
    in_toto_statement,
    load_in_toto_statement,
    sign_envelope,
    statement_subject,
    verify_envelope,
)
from engram.core.keys import PrivateKey, PublicKey
from engram.errors import EngramError

PREDICATE_TYPE = "https://engram.dev/acx/rom-manifest/v1"
SUBJECT_NAME = "rom"


@dataclass(frozen=True)
class Signer:
    """Who signed a ROM manifest, as the verified predicate names them."""

    publisher_id: str
    keyid: str
    public_key: PublicKey


def sign_manifest(
    manifest: dict[str, JsonValue], digest: str, key: PrivateKey, publisher_id: str
) -> dict[str, Any]:
    """The DSSE envelope that signs ``manifest`` (whose hash is ``digest``) with ``key``."""
    public = key.public_key()
    statement = in_toto_statement(
        [statement_subject(SUBJECT_NAME, digest)],
        PREDICATE_TYPE,
        {
            "manifest": manifest,
            "signer": {
                "publisherId": publisher_id,
                "keyid": public.key_id,
                "publicKey": public.b64url,
            },
        },
    )
    return sign_envelope(canonicalize(statement), PAYLOAD_TYPE_IN_TOTO, key, public.key_id)


def check_envelope(envelope: object, manifest: dict[str, JsonValue], digest: str) -> Signer:
    """Verify ``envelope`` against the live ``manifest``; return its signer or raise tampered."""
    try:
        return _check(envelope, manifest, digest)
    except CartridgeTampered:
        raise
    except EngramError as e:
        raise CartridgeTampered(f"signature does not hold: {e.message}") from e


def _check(envelope: object, manifest: dict[str, JsonValue], digest: str) -> Signer:
    if not isinstance(envelope, dict) or set(envelope) != {"payloadType", "payload", "signatures"}:
        raise CartridgeTampered("DSSE envelope must have exactly payloadType, payload, signatures")
    if envelope["payloadType"] != PAYLOAD_TYPE_IN_TOTO:
        raise CartridgeTampered(f"DSSE payloadType must be {PAYLOAD_TYPE_IN_TOTO}")
    signatures = envelope["signatures"]
    if not isinstance(signatures, list) or len(signatures) != 1:
        raise CartridgeTampered("a cartridge envelope carries exactly one signature")
    # The payload is read unverified only to learn which key claims to have signed it; the
    # signature is then checked under that key and every later read uses the verified bytes.
    claimed = _unverified_signer(envelope["payload"])
    verified = verify_envelope(
        envelope, {claimed.keyid: claimed.public_key}, expected_payload_type=PAYLOAD_TYPE_IN_TOTO
    )
    statement = load_in_toto_statement(verified.payload)
    subjects = statement["subject"]
    if subjects != [{"name": SUBJECT_NAME, "digest": {"sha256": digest}}]:
        raise CartridgeTampered(
            f"signed subject digest does not equal the live manifest_hash sha256:{digest}"
        )
    if statement["predicateType"] != PREDICATE_TYPE:
        raise CartridgeTampered(f"predicateType must be {PREDICATE_TYPE}")
    predicate = statement.get("predicate")
    if not isinstance(predicate, dict) or set(predicate) != {"manifest", "signer"}:
        raise CartridgeTampered("predicate must hold exactly manifest and signer")
    if canonicalize(predicate["manifest"]) != canonicalize(manifest):
        raise CartridgeTampered("signed manifest differs from the manifest of the live ROM bytes")
    signer = _signer(predicate["signer"])
    if signer.publisher_id != manifest["publisherId"]:
        raise CartridgeTampered(
            f"signer publisherId {signer.publisher_id!r} differs from the cartridge's "
            f"{manifest['publisherId']!r}"
        )
    return signer


def _unverified_signer(payload: object) -> Signer:
    if not isinstance(payload, str):
        raise CartridgeTampered("DSSE payload is not a base64 string")
    try:
        raw = base64.b64decode(payload.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError) as e:
        raise CartridgeTampered("DSSE payload is not standard base64") from e
    predicate = load_in_toto_statement(raw).get("predicate")
    if not isinstance(predicate, dict):
        raise CartridgeTampered("in-toto Statement has no predicate object")
    return _signer(predicate.get("signer"))


def _signer(value: object) -> Signer:
    if not isinstance(value, dict) or set(value) != {"publisherId", "keyid", "publicKey"}:
        raise CartridgeTampered("signer must be exactly {publisherId, keyid, publicKey}")
    key = PublicKey.from_b64url(value["publicKey"])
    if value["keyid"] != key.key_id:
        raise CartridgeTampered("signer keyid is not ed25519:<hex sha256(DER SPKI)> of its key")
    if not isinstance(value["publisherId"], str):
        raise CartridgeTampered("signer publisherId is not a string")
    return Signer(publisher_id=value["publisherId"], keyid=key.key_id, public_key=key)


__all__ = ["PREDICATE_TYPE", "SUBJECT_NAME", "Signer", "check_envelope", "sign_manifest"]
