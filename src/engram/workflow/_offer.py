"""Finding cartridges in a folder and reading what each offers a workflow.

Spec: lboel/acx@85f1358 SPEC.md §14.3 (``ready --cartridges <dir>`` "recursively scans ``.acx``
files"), §14.2 (a cartridge's CalSkillSet declares the roles it plays, the capabilities it
provides and the skills it can complete), §6 (capability records), §10 (a level counts only when
a credential proves it); docs/spec/acx-workflows.md §"Readiness" and §"Reading cartridges".

:func:`find_cartridges` walks a folder for ``*.acx`` files without following symbolic links out
of it. :func:`read_cartridge_offer` is the one place that turns a cartridge into a
:class:`CartridgeOffer`; it reads through ``engram.cartridge`` (open read-only, verify the ROM
from live bytes, then read only verified ROM content). Proven levels are not read from a
cartridge: ``prove_levels`` (``_ready_levels``) adds them from level credentials it verifies.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from engram.cartridge import Cartridge, derive_skills, verify_rom
from engram.core.canonical import parse_strict
from engram.errors import CanonicalJsonError, CartridgeFormatError, EngramError
from engram.trust import TrustRegistry, TrustState
from engram.workflow._document import load_document, schema_issues
from engram.workflow._issues import Accepted
from engram.workflow._ready import Capability, CartridgeOffer

OfferReader = Callable[[Path], CartridgeOffer]
"""Reads one cartridge file into what it offers; raises an engram error if it cannot."""

MAX_CARTRIDGES = 10_000


def find_cartridges(directory: Path) -> list[Path]:
    """Every ``*.acx`` regular file under ``directory``, sorted, never outside it."""
    root = directory.resolve()
    if not root.is_dir():
        raise FileNotFoundError(2, "no such directory", str(directory))
    found: list[Path] = []
    for here, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(here) / name
            if name.endswith(".acx") and path.is_file() and not path.is_symlink():
                found.append(path)
                if len(found) > MAX_CARTRIDGES:
                    raise OSError(f"more than {MAX_CARTRIDGES} cartridges under {directory}")
    return found


def read_offers(paths: list[Path], reader: OfferReader) -> tuple[list[CartridgeOffer], list[str]]:
    """Offers of the readable cartridges, and one line per cartridge that could not be read."""
    offers: list[CartridgeOffer] = []
    unreadable: list[str] = []
    for path, outcome in _each(paths, reader):
        if isinstance(outcome, CartridgeOffer):
            offers.append(outcome)
        else:
            unreadable.append(f"{path}: {outcome}")
    return offers, unreadable


def _each(paths: list[Path], reader: OfferReader) -> Iterator[tuple[Path, CartridgeOffer | str]]:
    for path in paths:
        try:
            yield path, reader(path)
        except EngramError as e:
            yield path, f"{e.code}: {e.message}"
        except OSError as e:
            yield path, f"{e.strerror or e}"


def read_cartridge_offer(
    path: Path,
    *,
    registry: TrustRegistry | None = None,
    local_keyids: Collection[str] = (),
    now: datetime | None = None,
) -> CartridgeOffer:
    """What the cartridge at ``path`` offers, read through ``engram.cartridge``.

    The ROM is verified from live bytes first (``verify_rom``, trust through ``engram.trust``);
    everything offered is read from that verified ROM: ``acx.role``, the skills re-derived from
    ``rom/skills/``, the capability records, and the CalSkillSet ``acx.cal_skillset`` points at
    (validated against ``cal-skillset.schema.json``). A tampered cartridge is returned with its
    state and nothing else, so ``ready`` never staffs it. No level is offered: a level counts
    only when a verified level credential proves it (``prove_levels``).
    """
    with Cartridge.open(path) as cartridge:
        report, rom = verify_rom(cartridge, registry=registry, local_keyids=local_keyids, now=now)
    base = CartridgeOffer(
        source=str(path),
        publisher_id=report.publisher_id,
        artifact_id=report.artifact_id,
        artifact_version=report.artifact_version,
        rom_digest=report.manifest_hash,
        trust=report.state,
        publisher_keyids=frozenset({report.keyid} if report.keyid else ()),
    )
    if report.state is TrustState.TAMPERED:
        return base
    roles = {rom.meta["acx.role"]} if rom.meta.get("acx.role") else set()
    skills = {skill.name for skill in derive_skills(rom.files)}
    capabilities = [_capability(ref, text) for ref, text in sorted(rom.capabilities.items())]
    processes: set[str] = set()
    pointer = rom.meta.get("acx.cal_skillset")
    if pointer:
        skillset = _skillset(pointer, rom.files)
        for play in skillset["plays"]:
            roles.add(play["role"])
            skills.update(play.get("canComplete", []))
            capabilities += [Capability(t) for t in play.get("providesCapabilities", [])]
        processes.update(skillset.get("processes", []))
    return replace(
        base,
        roles=frozenset(roles),
        skills=frozenset(skills),
        capabilities=tuple(capabilities),
        processes=frozenset(processes),
    )


def _capability(ref: str, text: str) -> Capability:
    try:
        record = parse_strict(text)
    except CanonicalJsonError as e:
        raise CartridgeFormatError(f"capability {ref!r}: {e.message}") from e
    task_type = record.get("taskType") if isinstance(record, dict) else None
    stack = record.get("stack", []) if isinstance(record, dict) else None
    if not isinstance(task_type, str) or not isinstance(stack, list):
        raise CartridgeFormatError(f"capability {ref!r} has no taskType and stack")
    return Capability(task_type, frozenset(str(s) for s in stack))


def _skillset(pointer: str, files: Mapping[str, bytes]) -> Accepted:
    if pointer not in files:
        raise CartridgeFormatError(f"acx.cal_skillset points at {pointer!r}, which ROM lacks")
    skillset = load_document(files[pointer], what=pointer)
    issues = schema_issues(
        skillset,
        package="engram.workflow",
        schema="cal-skillset.schema.json",
        rule="engram.workflow.ready-cartridges",
    )
    if issues:
        raise CartridgeFormatError(f"{pointer} is not an acx.cal-skillset/1: {issues[0]}")
    return skillset


__all__ = [
    "MAX_CARTRIDGES",
    "OfferReader",
    "find_cartridges",
    "read_cartridge_offer",
    "read_offers",
]
