"""Loading ROM: every live ROM byte validated and re-derived before anything is used.

Spec: acx-cartridge-conformance §12 items 2, 3, 7, 8, 9, 11; docs/spec/acx.md §3-§8.
:func:`load_rom` is the one way code reads a cartridge's meaning. It reads every ``rom/`` row
(paths were already checked when the rows were listed), refuses rows that belong to no package
role, parses ``rom/cartridge.json``, the harness manifest, every skill and the JSON memory
baseline under their schemas, and derives from those live bytes the ROM manifest, its hash and
the ``acx_skill`` index. Nothing here trusts a stored hash or index: comparing those with what
was derived is the verifier's job (``_verify``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engram.cartridge._container import Cartridge
from engram.cartridge._harness import check_requirements
from engram.cartridge._manifest import (
    CARTRIDGE_FILE,
    HARNESS_FILE,
    MEMORY_FILE,
    ROM_DIRS,
    check_cartridge_document,
    manifest_hash,
    parse_json_object,
    rom_manifest,
    rom_object,
)
from engram.cartridge._paths import ROM
from engram.cartridge._records import decode_records
from engram.cartridge._skills import EXT_FILE, SKILL_FILE, SKILLS_ROOT, SkillRow, skill_row
from engram.core.canonical import JsonValue
from engram.errors import CartridgeFormatError


@dataclass(frozen=True)
class Rom:
    """A cartridge's ROM as derived from its live bytes."""

    document: dict[str, Any]
    harness: dict[str, Any]
    skills: tuple[SkillRow, ...]
    records: tuple[dict[str, Any], ...]
    files: dict[str, bytes]
    manifest: dict[str, JsonValue]
    manifest_hash: str

    @property
    def publisher_id(self) -> str:
        return str(self.document["publisherId"])


def rom_files(cartridge: Cartridge) -> tuple[dict[str, bytes], list[dict[str, JsonValue]]]:
    """Content of every ROM file and one manifest object per ROM row, from live bytes."""
    files: dict[str, bytes] = {}
    objects: list[dict[str, JsonValue]] = []
    for name, entry in cartridge.entries().items():
        if name != ROM and not name.startswith(ROM + "/"):
            continue
        _check_role(name, entry.is_dir)
        content = None if entry.is_dir else cartridge.read(name)
        if content is not None:
            files[name] = content
        objects.append(rom_object(name, is_dir=entry.is_dir, mode=entry.mode, content=content))
    return files, objects


def _check_role(name: str, is_dir: bool) -> None:
    """Refuse a ROM row that belongs to no package role (the package is closed)."""
    if name in ROM_DIRS:
        if not is_dir:
            raise CartridgeFormatError(f"ROM path {name!r} must be a directory")
        return
    if name in (CARTRIDGE_FILE, HARNESS_FILE, MEMORY_FILE):
        if is_dir:
            raise CartridgeFormatError(f"ROM path {name!r} must be a file")
        return
    parts = name.split("/")
    if name.startswith(SKILLS_ROOT + "/"):
        if len(parts) == 3 and not is_dir:
            raise CartridgeFormatError(f"ROM file {name!r} lies outside any skill directory")
        return
    raise CartridgeFormatError(
        f"ROM path {name!r} belongs to no package role (cartridge.json, skills/, harness/"
        "requirements.json, memory/records.jsonl)"
    )


def load_rom(cartridge: Cartridge) -> Rom:
    """Validate and derive everything in ROM; refuse the cartridge at the first violation."""
    files, objects = rom_files(cartridge)
    for required in (CARTRIDGE_FILE, HARNESS_FILE, MEMORY_FILE):
        if required not in files:
            raise CartridgeFormatError(f"cartridge has no {required} (required package role)")
    document = check_cartridge_document(parse_json_object(files[CARTRIDGE_FILE], CARTRIDGE_FILE))
    harness = check_requirements(parse_json_object(files[HARNESS_FILE], HARNESS_FILE))
    limits = cartridge.limits
    records = decode_records(
        files[MEMORY_FILE],
        max_records=limits.max_records,
        max_record_bytes=limits.max_record_bytes,
    )
    skills = derive_skills(files, limits.max_skill_md_bytes)
    manifest = rom_manifest(document, objects)
    return Rom(
        document=document,
        harness=harness,
        skills=tuple(skills),
        records=tuple(records),
        files=files,
        manifest=manifest,
        manifest_hash=manifest_hash(manifest),
    )


def derive_skills(files: dict[str, bytes], max_skill_md_bytes: int) -> list[SkillRow]:
    """The ``acx_skill`` index re-derived from ROM files (every skill dir needs a SKILL.md)."""
    names = sorted({p.split("/")[2] for p in files if p.startswith(SKILLS_ROOT + "/")})
    rows: list[SkillRow] = []
    for name in names:
        base = f"{SKILLS_ROOT}/{name}"
        skill_md = files.get(f"{base}/{SKILL_FILE}")
        if skill_md is None:
            raise CartridgeFormatError(f"skill directory {base!r} has no {SKILL_FILE}")
        if len(skill_md) > max_skill_md_bytes:
            raise CartridgeFormatError(f"{base}/{SKILL_FILE} is over {max_skill_md_bytes} bytes")
        rows.append(skill_row(name, skill_md, files.get(f"{base}/{EXT_FILE}")))
    return rows


__all__ = ["Rom", "derive_skills", "load_rom", "rom_files"]
