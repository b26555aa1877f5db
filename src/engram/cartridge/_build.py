"""Producing cartridges: build, seal (index + sign from live bytes), strip SAVE, write SAVE.

Spec: acx-cartridge-conformance §12 items 1-3, 7-9, 11; docs/spec/acx.md §11. Building is two
steps on one staged file: the ROM rows are written, then :func:`seal` re-reads that file's live
bytes, runs the fail-closed scrub gate over every ROM byte, derives the manifest and the skill
index, and writes the object index, skill index, ``acx_meta`` mirror and (with a key) the DSSE
envelope. Because every index and signature is computed from what is actually in the file, a
stored hash can never vouch for bytes it was not computed from. Every operation stages a copy and
renames it into place only on success.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.cartridge._container import Cartridge, Writer, create, rewrite
from engram.cartridge._harness import check_requirements, default_requirements
from engram.cartridge._manifest import (
    BASELINE_ENGINE,
    CARTRIDGE_FILE,
    HARNESS_FILE,
    MEMORY_FILE,
    cartridge_document,
    meta_mirror,
)
from engram.cartridge._paths import SAVE, check_path, zone_of
from engram.cartridge._records import encode_records, prepare_for_export
from engram.cartridge._rom import Rom, load_rom
from engram.cartridge._scrub import require_clean
from engram.cartridge._signing import sign_manifest
from engram.cartridge._sqlar import EXEC_MODE, FILE_MODE
from engram.core.canonical import canonicalize
from engram.core.clock import Clock
from engram.core.keys import PrivateKey
from engram.errors import CartridgeFormatError

Embed = Callable[[str], Sequence[float]]
"""The baseline embedding engine (``local-hash-128``): text -> 128 floats."""


@dataclass(frozen=True)
class SealResult:
    manifest_hash: str
    keyid: str | None
    skills: int
    records: int


def collect_skills(skills_dir: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file of every skill under ``skills_dir`` as ROM path -> (content, mode, mtime).

    Each sub-directory is one skill. Symlinks and special files are refused (a link could pull
    in bytes from outside the skill), as are stray files beside the skill directories.
    """
    if not skills_dir.is_dir():
        raise CartridgeFormatError(f"skills directory {skills_dir} does not exist")
    files: dict[str, tuple[bytes, int, int]] = {}
    for entry in sorted(skills_dir.iterdir()):
        if entry.is_symlink() or not entry.is_dir():
            raise CartridgeFormatError(
                f"{entry}: a skills directory holds only one sub-directory per skill"
            )
        for root, dirs, names in os.walk(entry, followlinks=False):
            dirs.sort()
            for name in sorted(names) + [d for d in dirs if Path(root, d).is_symlink()]:
                source = Path(root, name)
                info = source.lstat()
                if not stat.S_ISREG(info.st_mode):
                    raise CartridgeFormatError(f"{source}: only regular files go into a cartridge")
                relative = source.relative_to(skills_dir).as_posix()
                path = check_path(f"rom/skills/{relative}")
                mode = EXEC_MODE if info.st_mode & 0o111 else FILE_MODE
                files[path] = (source.read_bytes(), mode, int(info.st_mtime))
    return files


def build(
    out: str | os.PathLike[str],
    *,
    publisher_id: str,
    artifact_id: str,
    artifact_version: str,
    clock: Clock,
    skills: Mapping[str, tuple[bytes, int, int]] | None = None,
    records: Iterable[Mapping[str, Any]] = (),
    harness: Mapping[str, Any] | None = None,
    key: PrivateKey | None = None,
    embed: Embed | None = None,
) -> SealResult:
    """Write a new cartridge at ``out`` (signed when ``key`` is given); refuse before writing.

    ``skills`` comes from :func:`collect_skills`; ``records`` are memory records in the author's
    form (see ``prepare_for_export``). Everything is validated and scrubbed before ``out``
    appears (on a staged copy); a refused build leaves no file behind.
    """
    now = int(clock.now().timestamp())
    prepared = [prepare_for_export(r) for r in records]
    seen: set[str] = set()
    for record in prepared:
        if record["id"] in seen:
            raise CartridgeFormatError(f"memory record id {record['id']!r} appears twice")
        seen.add(record["id"])
    document = cartridge_document(
        artifact_id=artifact_id, artifact_version=artifact_version, publisher_id=publisher_id
    )
    requirements = check_requirements(dict(harness) if harness else default_requirements())
    rom: dict[str, tuple[bytes, int, int]] = dict(skills or {})
    rom[CARTRIDGE_FILE] = (canonicalize(document) + b"\n", FILE_MODE, now)
    rom[HARNESS_FILE] = (canonicalize(requirements) + b"\n", FILE_MODE, now)
    rom[MEMORY_FILE] = (encode_records(prepared), FILE_MODE, now)
    for path in rom:
        if zone_of(check_path(path)) != "rom":
            raise CartridgeFormatError(f"{path!r} is not a ROM path")
    # Skills, the scrub gate and every schema are checked by seal() on the staged file's live
    # bytes; a refusal there deletes the staging file, so ``out`` never holds a partial build.
    target = Path(out)
    staging = target.with_name(f".{target.name}.build")
    try:
        with create(staging) as writer:
            for directory in ("rom/skills", "rom/harness", "rom/memory", SAVE):
                writer.put_dir(directory, now)
            for path in sorted(rom):
                content, mode, mtime = rom[path]
                writer.put_file(path, content, mode=mode, mtime=mtime)
            if embed is not None:
                writer.replace_rows("acx_vectors", _vectors(prepared, embed))
        result = seal(staging, key)
        staging.replace(target)
    finally:
        staging.unlink(missing_ok=True)
    return result


def _vectors(records: list[dict[str, Any]], embed: Embed) -> list[tuple[object, ...]]:
    dim = int(str(BASELINE_ENGINE["dim"]))
    rows: list[tuple[object, ...]] = []
    for record in records:
        vector = list(embed(record["text"]))
        if len(vector) != dim:
            raise CartridgeFormatError(f"embedding engine returned {len(vector)} floats, not {dim}")
        rows.append((record["id"], BASELINE_ENGINE["id"], dim, struct.pack(f"<{dim}f", *vector)))
    return rows


def seal(
    path: str | os.PathLike[str],
    key: PrivateKey | None,
    target: str | os.PathLike[str] | None = None,
) -> SealResult:
    """Re-derive every index from live ROM bytes, scrub, and sign with ``key`` (or unsign)."""
    with rewrite(path, target) as writer:
        with Cartridge.open(writer.path) as staged:
            rom = load_rom(staged)
        require_clean(rom.files)
        _write_indexes(writer, rom)
        envelope = None
        if key is not None:
            envelope = sign_manifest(rom.manifest, rom.manifest_hash, key, rom.publisher_id)
        writer.replace_rows(
            "acx_signature", [] if envelope is None else [(1, canonicalize(envelope).decode())]
        )
    return SealResult(
        manifest_hash=rom.manifest_hash,
        keyid=None if key is None else key.public_key().key_id,
        skills=len(rom.skills),
        records=len(rom.records),
    )


def _write_indexes(writer: Writer, rom: Rom) -> None:
    objects = rom.manifest["objects"]
    assert isinstance(objects, list)
    writer.replace_rows(
        "acx_object",
        [
            (o["path"], o["kind"], o["mode"], o.get("size", 0), o.get("oid"))
            for o in objects
            if isinstance(o, dict)
        ],
    )
    writer.replace_rows("acx_skill", [row.as_tuple() for row in rom.skills])
    writer.replace_rows("acx_meta", sorted(meta_mirror(rom.manifest, rom.manifest_hash).items()))


def strip(source: str | os.PathLike[str], out: str | os.PathLike[str]) -> str:
    """Copy ``source`` to ``out`` without any SAVE row; return the (unchanged) manifest hash."""
    with rewrite(source, out) as writer:
        with Cartridge.open(writer.path) as staged:
            digest = load_rom(staged).manifest_hash
        writer.delete_zone(SAVE)
    return digest


def write_save(path: str | os.PathLike[str], files: Mapping[str, bytes], *, mtime: int) -> None:
    """Write (or replace) SAVE files; a path outside ``save/`` is refused before any write."""
    for name in files:
        if zone_of(check_path(name)) != SAVE:
            raise CartridgeFormatError(f"{name!r} is not a SAVE path: ROM is never written here")
    with rewrite(path) as writer:
        with Cartridge.open(writer.path) as staged:
            staged.entries()
        for name, content in sorted(files.items()):
            writer.put_file(name, content, mode=FILE_MODE, mtime=mtime)


__all__ = ["Embed", "SealResult", "build", "collect_skills", "seal", "strip", "write_save"]
