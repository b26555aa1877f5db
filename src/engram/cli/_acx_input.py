"""What the level and policy commands read out of a ``.acx``: one verified ROM, nothing else.

The ``engram.level`` and ``engram.policy`` domain packages take bytes and plain values; this is the
thin step between them and a cartridge file (docs/spec/acx-levels.md §9, acx-policy.md §8). The
file is opened and verified with ``engram.cartridge`` (SPEC §3.3, §4.5) and refused when
``tampered``; the values handed on are the ones the verification vouches for: the live ROM
``manifest_hash``, the signed publisher id and cartridge id, the signature's keyid, the ROM
policy object, and the SAVE rule overlay (SAVE is unsigned by design: it is checked against the
ROM policy when loaded).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SQLITE_MAGIC = b"SQLite format 3\x00"


def is_cartridge(path: Path) -> bool:
    """Whether ``path`` is an SQLite file (a cartridge) rather than a JSON document."""
    with path.open("rb") as handle:
        return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


@dataclass(frozen=True)
class VerifiedCartridge:
    manifest_hash: str
    publisher_id: str
    cartridge_id: str
    keyid: str | None
    trust: str
    policy: bytes | None
    overlay: bytes | None


def read_verified(path: Path) -> VerifiedCartridge:
    """Open and verify ``path``; refuse a tampered cartridge; return what the level/policy need."""
    from engram.cartridge import Cartridge, CartridgeTampered, verify_rom
    from engram.policy.internals import OVERLAY_PATH, POLICY_PATH
    from engram.trust import TrustState

    with Cartridge.open(path) as cartridge:
        report, rom = verify_rom(cartridge)
        if report.state is TrustState.TAMPERED:
            raise CartridgeTampered(f"{path}: {report.reason}")
        overlay = cartridge.read(OVERLAY_PATH) if OVERLAY_PATH in cartridge.entries() else None
    return VerifiedCartridge(
        manifest_hash=report.manifest_hash,
        publisher_id=report.publisher_id,
        cartridge_id=report.cartridge_id,
        keyid=report.keyid,
        trust=report.state.value,
        policy=rom.files.get(POLICY_PATH),
        overlay=overlay,
    )


__all__ = ["VerifiedCartridge", "is_cartridge", "read_verified"]
