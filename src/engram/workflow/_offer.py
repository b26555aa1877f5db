"""Finding cartridges in a folder and reading what each offers a workflow.

Spec: lboel/acx@85f1358 SPEC.md §14.3 (``ready --cartridges <dir>`` "recursively scans ``.acx``
files"), §14.2 (a cartridge's CalSkillSet declares the roles it plays, the capabilities it
provides and the skills it can complete), §6 (capability records), §10 (a level counts only when
a credential proves it); docs/spec/acx-workflows.md §"Readiness" and §"Reading cartridges".

:func:`find_cartridges` walks a folder for ``*.acx`` files without following symbolic links out
of it. :func:`read_cartridge_offer` is the one place that turns a cartridge into a
:class:`CartridgeOffer`; it reads through ``engram.cartridge`` (open read-only, verify the ROM
from live bytes, then read only verified ROM content). What it can fill depends on what the
cartridge reader exposes: today the publisher, id, version, ROM manifest hash, trust state and
skill names; roles, capability records, the CalSkillSet and proven levels arrive with the
re-aligned reader (issue 13) and a level verifier (issue 18) - until then slots that need them
report exactly that they are not offered.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from engram.cartridge import Cartridge, verify_rom
from engram.errors import EngramError
from engram.trust import TrustState
from engram.workflow._ready import CartridgeOffer

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


def read_cartridge_offer(path: Path) -> CartridgeOffer:
    """What the cartridge at ``path`` offers, read through ``engram.cartridge``.

    The ROM is verified from live bytes first; a tampered cartridge is returned as such (and
    ``ready`` never staffs it). Skills come from the verified ROM, never from stored indexes.
    """
    with Cartridge.open(path) as cartridge:
        report, rom = verify_rom(cartridge)
    return CartridgeOffer(
        source=str(path),
        publisher_id=report.publisher_id,
        artifact_id=report.artifact_id,
        artifact_version=report.artifact_version,
        rom_digest="sha256:" + report.manifest_hash,
        trust=TrustState(report.state.value),
        skills=frozenset(row.name for row in rom.skills),
    )


__all__ = [
    "MAX_CARTRIDGES",
    "OfferReader",
    "find_cartridges",
    "read_cartridge_offer",
    "read_offers",
]
