"""Signing the ROM manifest: a DSSE envelope over an in-toto Statement v1 (SPEC §4.2).

Spec: lboel/acx@85f1358 SPEC.md §4.1-§4.2 and §12 item 3; docs/spec/acx.md §5.

The envelope is exactly ``{payloadType, payload, signatures}`` with ``payloadType
application/vnd.in-toto+json``; ``payload`` is the base64 of the RFC 8785 Statement; each
signature is Ed25519 over the DSSE PAE with ``keyid = "ed25519:" + hex(sha256(DER SPKI))``. The
Statement is::

    {"_type": "https://in-toto.io/Statement/v1",
     "subject": [{"name": <acx.cartridge_id>, "digest": {"sha256": <manifest hex>}}],
     "predicateType": "https://acx.dev/attestation/cartridge/v1",
     "predicate": {acxSchemaVersion, publisherId, romDigest, manifestHash, checksumHash,
                   fileCount, embeddingEngine, signedAt, provenanceInstanceId}}

Verifiers accept standard or URL-safe base64, padded or not (§4.2). The ``keyid`` is a lookup
hint: a signature counts only when it verifies under the key in hand.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from engram.cartridge._errors import CartridgeTampered
from engram.core.canonical import Json, JsonObject, canonicalize, parse_strict
from engram.core.clock import format_instant, parse_instant
from engram.core.dsse import pae
from engram.core.keys import PrivateKey, PublicKey
from engram.errors import CanonicalJsonError, EngramError

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://acx.dev/attestation/cartridge/v1"
PREDICATE_MEMBERS = (
    "acxSchemaVersion",
    "publisherId",
    "romDigest",
    "manifestHash",
    "checksumHash",
    "fileCount",
    "embeddingEngine",
    "signedAt",
    "provenanceInstanceId",
)
_B64 = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")


def b64decode_any(text: object, what: str) -> bytes:
    """Standard or URL-safe base64, padding optional (§4.2); anything else is refused."""
    if not isinstance(text, str) or not _B64.fullmatch(text):
        raise CartridgeTampered(f"DSSE {what} is not base64")
    body = text.rstrip("=")
    if ("+" in body or "/" in body) and ("-" in body or "_" in body):
        raise CartridgeTampered(f"DSSE {what} mixes the standard and URL-safe alphabets")
    padded = body + "=" * (-len(body) % 4)
    try:
        return base64.b64decode(
            padded, altchars=b"-_" if ("-" in body or "_" in body) else None, validate=True
        )
    except (binascii.Error, ValueError) as e:
        raise CartridgeTampered(f"DSSE {what} is not base64") from e


def checksum_hash(objects: Iterable[tuple[str, str]]) -> str:
    """``predicate.checksumHash`` as the reference computes it: SHA-256 over the sorted
    ``"<oid>  <source_ref>"`` lines of the ROM objects, joined by LF (informational)."""
    import hashlib

    lines = sorted(f"{oid}  {ref}" for oid, ref in objects)
    # Fed 1,024 lines at a time: the joined text of 100,000 objects is never built (issue 33).
    digest = hashlib.sha256()
    for at in range(0, len(lines), 1024):
        chunk = "\n".join(lines[at : at + 1024])
        digest.update(("\n" + chunk if at else chunk).encode("utf-8"))
    return "sha256:" + digest.hexdigest()


def statement(
    *,
    manifest_hash: str,
    cartridge_id: str,
    publisher_id: str,
    embedding_engine: Json,
    signed_at: datetime,
    spec_version: str,
    checksum: str | None,
    file_count: int | None,
    provenance_instance_id: str | None = None,
) -> JsonObject:
    digest = manifest_hash.removeprefix("sha256:")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": cartridge_id, "digest": {"sha256": digest}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "acxSchemaVersion": spec_version,
            "publisherId": publisher_id,
            "romDigest": manifest_hash,
            "manifestHash": manifest_hash,
            "checksumHash": checksum,
            "fileCount": file_count,
            "embeddingEngine": embedding_engine,
            "signedAt": format_instant(signed_at),
            "provenanceInstanceId": provenance_instance_id,
        },
    }


def sign(statement_doc: JsonObject, key: PrivateKey) -> JsonObject:
    """The DSSE envelope (standard base64, as the reference writes it)."""
    payload = canonicalize(statement_doc)
    signature = key.sign(pae(PAYLOAD_TYPE, payload))
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode("ascii"),
        "signatures": [
            {"keyid": key.public_key().key_id, "sig": base64.b64encode(signature).decode("ascii")}
        ],
    }


@dataclass(frozen=True)
class Envelope:
    """A parsed (not yet verified) envelope: its payload bytes and ``(keyid, sig)`` pairs."""

    payload: bytes
    signatures: tuple[tuple[str, bytes], ...]


def parse_envelope(text: str) -> Envelope:
    try:
        value = parse_strict(text)
    except CanonicalJsonError as e:
        raise CartridgeTampered(f"signature envelope is not JSON: {e.message}") from e
    if not isinstance(value, dict) or set(value) != {"payloadType", "payload", "signatures"}:
        raise CartridgeTampered("DSSE envelope must have exactly payloadType, payload, signatures")
    if value["payloadType"] != PAYLOAD_TYPE:
        raise CartridgeTampered(f"DSSE payloadType must be {PAYLOAD_TYPE}")
    signatures = value["signatures"]
    if not isinstance(signatures, list) or not signatures or len(signatures) > 16:
        raise CartridgeTampered("DSSE signatures must be a list of 1-16 entries")
    pairs: list[tuple[str, bytes]] = []
    for entry in signatures:
        if not isinstance(entry, dict) or not {"sig"} <= set(entry) <= {"keyid", "sig"}:
            raise CartridgeTampered("a DSSE signature is {keyid, sig}")
        keyid = entry.get("keyid", "")
        if not isinstance(keyid, str):
            raise CartridgeTampered("a DSSE keyid is a string")
        pairs.append((keyid, b64decode_any(entry["sig"], "sig")))
    return Envelope(b64decode_any(value["payload"], "payload"), tuple(pairs))


def verify_with(envelope: Envelope, keys: Iterable[PublicKey]) -> tuple[PublicKey, str] | None:
    """The first key (and the keyid its signature named) that verifies, or None."""
    message = pae(PAYLOAD_TYPE, envelope.payload)
    for key in keys:
        for keyid, sig in envelope.signatures:
            try:
                key.verify(sig, message)
            except EngramError:
                continue
            return key, keyid
    return None


@dataclass(frozen=True)
class Signed:
    """What a verified Statement says."""

    publisher_id: str
    signed_at: datetime
    predicate: JsonObject
    subject_name: str


def check_statement(payload: bytes, manifest_hash: str) -> Signed:
    """Check the verified payload against the live ``manifest_hash``; refuse as tampered."""
    try:
        doc = parse_strict(payload)
    except CanonicalJsonError as e:
        raise CartridgeTampered(f"signed Statement is not JSON: {e.message}") from e
    if not isinstance(doc, dict) or doc.get("_type") != STATEMENT_TYPE:
        raise CartridgeTampered(f"signed payload is not an in-toto Statement ({STATEMENT_TYPE})")
    subjects = doc.get("subject")
    if not isinstance(subjects, list) or not subjects or not isinstance(subjects[0], dict):
        raise CartridgeTampered("in-toto Statement has no subject")
    digest = subjects[0].get("digest")
    if not isinstance(digest, dict) or digest.get("sha256") != manifest_hash.removeprefix(
        "sha256:"
    ):
        raise CartridgeTampered(
            f"subject[0].digest.sha256 is not the live ROM manifest hash {manifest_hash}"
        )
    if doc.get("predicateType") != PREDICATE_TYPE:
        raise CartridgeTampered(f"predicateType must be {PREDICATE_TYPE}")
    predicate = doc.get("predicate")
    if not isinstance(predicate, dict):
        raise CartridgeTampered("in-toto Statement has no predicate object")
    missing = [m for m in PREDICATE_MEMBERS if m not in predicate]
    if missing:
        raise CartridgeTampered(f"predicate lacks {', '.join(missing)}")
    for member in ("romDigest", "manifestHash"):
        if predicate[member] != manifest_hash:
            raise CartridgeTampered(f"predicate.{member} is not the live manifest hash")
    publisher = predicate["publisherId"]
    if not isinstance(publisher, str) or not publisher:
        raise CartridgeTampered("predicate.publisherId is not a reverse-DNS string")
    try:
        signed_at = parse_instant(str(predicate["signedAt"]))
    except EngramError as e:
        raise CartridgeTampered(f"predicate.signedAt: {e.message}") from e
    name = subjects[0].get("name")
    return Signed(publisher, signed_at, predicate, name if isinstance(name, str) else "")


__all__ = [
    "PAYLOAD_TYPE",
    "PREDICATE_MEMBERS",
    "PREDICATE_TYPE",
    "STATEMENT_TYPE",
    "Envelope",
    "Signed",
    "b64decode_any",
    "check_statement",
    "checksum_hash",
    "parse_envelope",
    "sign",
    "statement",
    "verify_with",
]
