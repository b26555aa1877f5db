"""Cartridge identity, the closed eight-role package spec, and the ROM manifest.

Spec: acx-cartridge-conformance §12 items 2, 3 and 9 (§3.3 ``manifest_hash``, §4.1, package
spec); docs/spec/acx.md §4. ``rom/cartridge.json`` carries the identity (``artifactId``,
``artifactVersion``, reverse-DNS ``publisherId``), the embedding engine tag and the package spec,
which must equal :data:`PACKAGE_ROLES` exactly - no unknown, duplicate, missing or altered role.

The ROM manifest is a pure function of live ROM rows: identity, engine and package spec from
``rom/cartridge.json`` plus one object per ``rom/`` sqlar row (path, kind, mode, and for files
size and ``oid`` = hex SHA-256 of the content). ``manifest_hash`` is the hex SHA-256 of its
RFC 8785 bytes; it is this format's ``packageHash`` and the signed subject digest. SAVE rows,
the derived tables and the signature are outside it, so stripping SAVE leaves it unchanged.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from engram.cartridge._skills import REVERSE_DNS
from engram.core.canonical import JsonValue, canonicalize, parse_object
from engram.errors import CartridgeFormatError

CARTRIDGE_FILE = "rom/cartridge.json"
HARNESS_FILE = "rom/harness/requirements.json"
MEMORY_FILE = "rom/memory/records.jsonl"
CARTRIDGE_SCHEMA_VERSION = "acx.cartridge/1"
PACKAGE_SCHEMA_VERSION = "acx.package/1"
MANIFEST_SCHEMA_VERSION = "acx.rom-manifest/1"
BASELINE_ENGINE: dict[str, JsonValue] = {"id": "local-hash-128", "dim": 128}
"""The embedding engine tag of the memory engine's always-present local vectors."""

PACKAGE_ROLES: tuple[dict[str, JsonValue], ...] = (
    {"role": "identity", "zone": "rom", "location": CARTRIDGE_FILE, "signed": True},
    {"role": "rom-manifest", "zone": "signature", "location": "acx_signature", "signed": True},
    {"role": "skills", "zone": "rom", "location": "rom/skills/", "signed": True},
    {"role": "skill-index", "zone": "derived", "location": "acx_skill", "signed": False},
    {"role": "harness-requirements", "zone": "rom", "location": HARNESS_FILE, "signed": True},
    {"role": "memory-baseline", "zone": "rom", "location": MEMORY_FILE, "signed": True},
    {"role": "vectors", "zone": "derived", "location": "acx_vectors", "signed": False},
    {"role": "save", "zone": "save", "location": "save/", "signed": False},
)
"""The closed, exact package spec: these eight roles in this order (docs/spec/acx.md §4.2)."""

ROM_FIXED_FILES = frozenset({CARTRIDGE_FILE, HARNESS_FILE, MEMORY_FILE})
ROM_DIRS = frozenset({"rom", "rom/skills", "rom/harness", "rom/memory"})
_ARTIFACT_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")
_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?"
)
_CARTRIDGE_KEYS = frozenset(
    {
        "schemaVersion",
        "artifactId",
        "artifactVersion",
        "publisherId",
        "embeddingEngine",
        "packageSpec",
    }
)


def package_spec() -> dict[str, JsonValue]:
    return {"schemaVersion": PACKAGE_SCHEMA_VERSION, "roles": [dict(r) for r in PACKAGE_ROLES]}


def cartridge_document(
    *, artifact_id: str, artifact_version: str, publisher_id: str
) -> dict[str, JsonValue]:
    """The ``rom/cartridge.json`` document for a new cartridge (validated)."""
    document: dict[str, JsonValue] = {
        "schemaVersion": CARTRIDGE_SCHEMA_VERSION,
        "artifactId": artifact_id,
        "artifactVersion": artifact_version,
        "publisherId": publisher_id,
        "embeddingEngine": dict(BASELINE_ENGINE),
        "packageSpec": package_spec(),
    }
    return check_cartridge_document(document)


def check_cartridge_document(document: object) -> dict[str, Any]:
    """Refuse a ``rom/cartridge.json`` that breaks the identity, engine or package rules."""
    where = CARTRIDGE_FILE
    if not isinstance(document, dict) or set(document) != _CARTRIDGE_KEYS:
        raise CartridgeFormatError(f"{where} must have exactly the keys {sorted(_CARTRIDGE_KEYS)}")
    if document["schemaVersion"] != CARTRIDGE_SCHEMA_VERSION:
        raise CartridgeFormatError(f"{where}: schemaVersion must be {CARTRIDGE_SCHEMA_VERSION!r}")
    artifact_id = document["artifactId"]
    if not isinstance(artifact_id, str) or not _ARTIFACT_ID.fullmatch(artifact_id):
        raise CartridgeFormatError(f"{where}: artifactId must match {_ARTIFACT_ID.pattern}")
    version = document["artifactVersion"]
    if not isinstance(version, str) or not _SEMVER.fullmatch(version):
        raise CartridgeFormatError(f"{where}: artifactVersion {version!r} is not SemVer")
    publisher = document["publisherId"]
    if not isinstance(publisher, str) or not REVERSE_DNS.fullmatch(publisher):
        raise CartridgeFormatError(
            f"{where}: publisherId {publisher!r} is not a reverse-DNS name (e.g. io.github.acme)"
        )
    if document["embeddingEngine"] != BASELINE_ENGINE:
        raise CartridgeFormatError(
            f"{where}: embeddingEngine must be {BASELINE_ENGINE} (the JSON baseline's engine)"
        )
    check_package_spec(document["packageSpec"])
    return document


def check_package_spec(spec: object) -> None:
    """The package spec must be exactly the eight roles: name the first difference."""
    if not isinstance(spec, dict) or set(spec) != {"schemaVersion", "roles"}:
        raise CartridgeFormatError("packageSpec must have exactly schemaVersion and roles")
    if spec["schemaVersion"] != PACKAGE_SCHEMA_VERSION:
        raise CartridgeFormatError(f"packageSpec schemaVersion must be {PACKAGE_SCHEMA_VERSION!r}")
    roles = spec["roles"]
    if not isinstance(roles, list) or not all(isinstance(r, dict) for r in roles):
        raise CartridgeFormatError("packageSpec roles must be a list of objects")
    names = [r.get("role") for r in roles]
    expected = [r["role"] for r in PACKAGE_ROLES]
    duplicates = sorted({str(n) for n in names if names.count(n) > 1})
    if duplicates:
        raise CartridgeFormatError(f"packageSpec: duplicate role(s) {duplicates}")
    unknown = sorted(str(n) for n in names if n not in expected)
    if unknown:
        raise CartridgeFormatError(f"packageSpec: unknown role(s) {unknown}")
    missing = [n for n in expected if n not in names]
    if missing:
        raise CartridgeFormatError(f"packageSpec: missing role(s) {missing}")
    for got, want in zip(roles, PACKAGE_ROLES, strict=True):
        if got != want:
            raise CartridgeFormatError(
                f"packageSpec: role {want['role']!r} is altered or out of order (expected {want})"
            )


def parse_json_object(data: bytes, where: str) -> dict[str, Any]:
    return parse_object(data, what=where, error=CartridgeFormatError)


def rom_object(
    path: str, *, is_dir: bool, mode: int, content: bytes | None
) -> dict[str, JsonValue]:
    """One manifest ``objects`` entry, from live bytes."""
    if is_dir or content is None:
        return {"path": path, "kind": "dir", "mode": mode}
    return {
        "path": path,
        "kind": "file",
        "mode": mode,
        "size": len(content),
        "oid": hashlib.sha256(content).hexdigest(),
    }


def rom_manifest(
    document: Mapping[str, JsonValue], objects: list[dict[str, JsonValue]]
) -> dict[str, JsonValue]:
    """The ROM manifest: identity, engine and package spec, and every ROM object by path."""
    return {
        "schemaVersion": MANIFEST_SCHEMA_VERSION,
        "artifactId": document["artifactId"],
        "artifactVersion": document["artifactVersion"],
        "publisherId": document["publisherId"],
        "embeddingEngine": document["embeddingEngine"],
        "packageSpec": document["packageSpec"],
        "objects": sorted(objects, key=lambda o: str(o["path"])),
    }


def manifest_hash(manifest: Mapping[str, JsonValue]) -> str:
    """``manifest_hash``: hex SHA-256 of the manifest's RFC 8785 bytes (the ``packageHash``)."""
    return hashlib.sha256(canonicalize(dict(manifest))).hexdigest()


def meta_mirror(manifest: Mapping[str, JsonValue], digest: str) -> dict[str, str]:
    """The unsigned ``acx_meta`` rows that mirror the manifest for ``sqlite3`` users."""
    return {
        "acx.artifact_id": str(manifest["artifactId"]),
        "acx.artifact_version": str(manifest["artifactVersion"]),
        "acx.publisher_id": str(manifest["publisherId"]),
        "acx.embedding_engine": canonicalize(manifest["embeddingEngine"]).decode(),
        "acx.manifest_hash": "sha256:" + digest,
        "acx.spec_version": "1.0",
    }


__all__ = [
    "BASELINE_ENGINE",
    "CARTRIDGE_FILE",
    "HARNESS_FILE",
    "MEMORY_FILE",
    "PACKAGE_ROLES",
    "ROM_DIRS",
    "ROM_FIXED_FILES",
    "cartridge_document",
    "check_cartridge_document",
    "check_package_spec",
    "manifest_hash",
    "meta_mirror",
    "package_spec",
    "parse_json_object",
    "rom_manifest",
    "rom_object",
]
