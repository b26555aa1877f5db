"""Memory records (``acx.memory-record/1``): validation, export partition, two-key merge.

Spec: acx-cartridge-conformance §12 items 8 and 10 (§7.1-§7.3, §7.6); docs/spec/acx.md §6.

Every record is partitioned by its tier:

- ``transferable``: knowledge that holds anywhere - ``portable: true``, ``codebaseFingerprint:
  null``, and in a cartridge no ``identity`` (export strips it);
- ``field-learned``: learned in one codebase - ``portable: false``, ``codebaseFingerprint`` a
  16-64 digit lowercase hex id of that codebase, and in a cartridge ``quarantined: true``
  (export quarantines it); an importer never re-projects one whose codebase is not its own.

Any other combination is a malformed tier and the record is refused. ``artifactFingerprint`` is
the first 10 hex digits of SHA-256 over the RFC 8785 bytes of ``{"kind", "text"}`` (text NFC-
normalised, whitespace collapsed), recomputed on every read; merge deduplicates by ``id`` and
then by that fingerprint, so merging the same records twice changes nothing.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engram.core.canonical import canonicalize, parse_strict
from engram.errors import CanonicalJsonError, CartridgeFormatError

RECORD_SCHEMA_VERSION = "acx.memory-record/1"
TRANSFERABLE = "transferable"
FIELD_LEARNED = "field-learned"
TIERS = (TRANSFERABLE, FIELD_LEARNED)
FINGERPRINT_HEX = 10

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9:._-]{0,127}")
_KIND = re.compile(r"[a-z][a-z0-9_]{0,63}")
_CODEBASE = re.compile(r"[0-9a-f]{16,64}")
_FINGERPRINT = re.compile(r"[0-9a-f]{10}")
_IDENTITY_KEYS = frozenset({"author", "instanceId", "ringId", "seatId", "sessionId"})
_KEYS = frozenset(
    {
        "schemaVersion",
        "id",
        "tier",
        "portable",
        "codebaseFingerprint",
        "zone",
        "quarantined",
        "artifactFingerprint",
        "kind",
        "text",
        "entities",
        "identity",
    }
)
_REQUIRED = _KEYS - {"identity"}
MAX_TEXT_CHARS = 16_384
MAX_ENTITIES = 64


def artifact_fingerprint(kind: str, text: str) -> str:
    """The 10-hex content fingerprint that merge uses as its second dedupe key."""
    normal = " ".join(unicodedata.normalize("NFC", text).split())
    digest = hashlib.sha256(canonicalize({"kind": kind, "text": normal})).hexdigest()
    return digest[:FINGERPRINT_HEX]


def validate_record(
    record: object, *, zone: str = "rom", in_cartridge: bool = True
) -> dict[str, Any]:
    """Return ``record`` if it is a well-formed memory record for ``zone``; else refuse it.

    ``in_cartridge`` adds the rules export guarantees (no identity on a transferable record, a
    field-learned record quarantined).
    """
    return _validate(record, zone=zone, in_cartridge=in_cartridge, derived_fingerprint=None)


def _validate(
    record: object, *, zone: str, in_cartridge: bool, derived_fingerprint: str | None
) -> dict[str, Any]:
    """:func:`validate_record`; ``derived_fingerprint`` is one the caller just computed from
    this record's own ``kind`` and ``text`` (export), so it is not hashed a second time."""
    if not isinstance(record, dict):
        raise CartridgeFormatError("a memory record is a JSON object")
    rid = record.get("id")
    where = f"memory record {rid!r}" if isinstance(rid, str) else "memory record"
    keys = set(record)
    if keys - _KEYS:
        raise CartridgeFormatError(f"{where}: unknown field(s) {sorted(keys - _KEYS)}")
    if _REQUIRED - keys:
        raise CartridgeFormatError(f"{where}: missing field(s) {sorted(_REQUIRED - keys)}")
    if record["schemaVersion"] != RECORD_SCHEMA_VERSION:
        raise CartridgeFormatError(f"{where}: schemaVersion must be {RECORD_SCHEMA_VERSION!r}")
    if not isinstance(rid, str) or not _ID.fullmatch(rid):
        raise CartridgeFormatError(f"{where}: id must match {_ID.pattern}")
    _check_tier(record, where, in_cartridge=in_cartridge)
    if record["zone"] != zone:
        raise CartridgeFormatError(f"{where}: zone is {record['zone']!r}, expected {zone!r}")
    kind, text = record["kind"], record["text"]
    if not isinstance(kind, str) or not _KIND.fullmatch(kind):
        raise CartridgeFormatError(f"{where}: kind must match {_KIND.pattern}")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT_CHARS:
        raise CartridgeFormatError(f"{where}: text must be 1-{MAX_TEXT_CHARS} characters")
    entities = record["entities"]
    if (
        not isinstance(entities, list)
        or len(entities) > MAX_ENTITIES
        or not all(isinstance(e, str) and 0 < len(e) <= 128 for e in entities)
    ):
        raise CartridgeFormatError(f"{where}: entities must be up to {MAX_ENTITIES} short strings")
    fingerprint = record["artifactFingerprint"]
    if not isinstance(fingerprint, str) or not _FINGERPRINT.fullmatch(fingerprint):
        raise CartridgeFormatError(f"{where}: artifactFingerprint must be exactly 10 hex digits")
    if fingerprint != (derived_fingerprint or artifact_fingerprint(kind, text)):
        raise CartridgeFormatError(f"{where}: artifactFingerprint does not match its content")
    return record


def _check_tier(record: Mapping[str, Any], where: str, *, in_cartridge: bool) -> None:
    tier, portable, codebase = record["tier"], record["portable"], record["codebaseFingerprint"]
    quarantined, identity = record["quarantined"], record.get("identity")
    if tier not in TIERS:
        raise CartridgeFormatError(f"{where}: tier {tier!r} is not one of {list(TIERS)}")
    if not isinstance(portable, bool) or not isinstance(quarantined, bool):
        raise CartridgeFormatError(f"{where}: portable and quarantined must be booleans")
    if tier == TRANSFERABLE and (portable is not True or codebase is not None):
        raise CartridgeFormatError(
            f"{where}: malformed tier: a transferable record has portable true and "
            "codebaseFingerprint null"
        )
    if tier == FIELD_LEARNED and (
        portable is not False or not isinstance(codebase, str) or not _CODEBASE.fullmatch(codebase)
    ):
        raise CartridgeFormatError(
            f"{where}: malformed tier: a field-learned record has portable false and a "
            "16-64 hex codebaseFingerprint"
        )
    if identity is not None and (
        not isinstance(identity, dict)
        or set(identity) - _IDENTITY_KEYS
        or not all(isinstance(v, str) for v in identity.values())
    ):
        raise CartridgeFormatError(
            f"{where}: identity must be an object of strings with keys {sorted(_IDENTITY_KEYS)}"
        )
    if in_cartridge and tier == TRANSFERABLE and (identity is not None or quarantined):
        raise CartridgeFormatError(
            f"{where}: a transferable record in a cartridge carries no identity and is not "
            "quarantined (export strips identity)"
        )
    if in_cartridge and tier == FIELD_LEARNED and not quarantined:
        raise CartridgeFormatError(
            f"{where}: a field-learned record in a cartridge must be quarantined"
        )


def prepare_for_export(record: Mapping[str, Any]) -> dict[str, Any]:
    """The ROM form of a record: defaults filled, identity stripped, field-learned quarantined.

    Accepts the author's form (``id``, ``kind``, ``text``, ``tier``, ``codebaseFingerprint``,
    optional ``entities`` and ``identity``); derived fields are computed, never taken on trust.
    """
    if not isinstance(record, Mapping):
        raise CartridgeFormatError("a memory record is a JSON object")
    out: dict[str, Any] = {
        "schemaVersion": RECORD_SCHEMA_VERSION,
        "entities": [],
        "codebaseFingerprint": None,
        **record,
    }
    tier = out.get("tier")
    out["zone"] = "rom"
    out["portable"] = tier == TRANSFERABLE
    out["quarantined"] = tier == FIELD_LEARNED
    if tier == TRANSFERABLE:
        out.pop("identity", None)
    kind, text = out.get("kind"), out.get("text")
    derived = None
    if isinstance(kind, str) and isinstance(text, str):
        derived = out["artifactFingerprint"] = artifact_fingerprint(kind, text)
    return _validate(out, zone="rom", in_cartridge=True, derived_fingerprint=derived)


@dataclass
class MergeResult:
    """What :func:`merge_records` did with each incoming record."""

    added: list[dict[str, Any]] = field(default_factory=list)
    duplicate_id: list[str] = field(default_factory=list)
    duplicate_fingerprint: list[str] = field(default_factory=list)


def merge_records(
    existing: Iterable[Mapping[str, Any]], incoming: Iterable[Mapping[str, Any]]
) -> MergeResult:
    """Merge idempotently: skip an incoming record whose ``id`` is known, then one whose
    ``artifactFingerprint`` is known; everything else is added (and known from then on)."""
    ids: set[str] = set()
    fingerprints: set[str] = set()
    for record in existing:
        ids.add(str(record["id"]))
        fingerprints.add(str(record["artifactFingerprint"]))
    result = MergeResult()
    for record in incoming:
        rid, fingerprint = str(record["id"]), str(record["artifactFingerprint"])
        if rid in ids:
            result.duplicate_id.append(rid)
        elif fingerprint in fingerprints:
            result.duplicate_fingerprint.append(rid)
        else:
            result.added.append(dict(record))
            ids.add(rid)
            fingerprints.add(fingerprint)
    return result


def encode_records(records: Iterable[Mapping[str, Any]]) -> bytes:
    """The JSON baseline file: one RFC 8785 record per line, sorted by id, LF-terminated."""
    ordered = sorted(records, key=lambda r: str(r["id"]))
    return b"".join(canonicalize(dict(r)) + b"\n" for r in ordered)


def decode_records(
    data: bytes, *, zone: str = "rom", max_records: int, max_record_bytes: int
) -> list[dict[str, Any]]:
    """Parse and validate a JSON baseline file written by :func:`encode_records`.

    Each line must be the RFC 8785 form of a valid record, ids strictly ascending (so no
    duplicates and one spelling per file); anything else is refused with its line number.
    """
    if not data:
        return []
    if not data.endswith(b"\n"):
        raise CartridgeFormatError("memory baseline does not end with a newline")
    lines = data[:-1].split(b"\n")
    if len(lines) > max_records:
        raise CartridgeFormatError(f"memory baseline has more than {max_records} records")
    records: list[dict[str, Any]] = []
    previous = ""
    for number, line in enumerate(lines, start=1):
        if len(line) > max_record_bytes:
            raise CartridgeFormatError(
                f"memory baseline line {number} is over {max_record_bytes} bytes"
            )
        try:
            value = parse_strict(line)
        except CanonicalJsonError as e:
            raise CartridgeFormatError(f"memory baseline line {number}: {e.message}") from e
        record = validate_record(value, zone=zone)
        if canonicalize(record) != line:
            raise CartridgeFormatError(f"memory baseline line {number} is not RFC 8785 text")
        if record["id"] <= previous:
            raise CartridgeFormatError(
                f"memory baseline line {number}: ids must be unique and ascending"
            )
        previous = record["id"]
        records.append(record)
    return records


__all__ = [
    "FIELD_LEARNED",
    "FINGERPRINT_HEX",
    "RECORD_SCHEMA_VERSION",
    "TIERS",
    "TRANSFERABLE",
    "MergeResult",
    "artifact_fingerprint",
    "decode_records",
    "encode_records",
    "merge_records",
    "prepare_for_export",
    "validate_record",
]
