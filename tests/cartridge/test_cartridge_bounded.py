"""``engram cartridge export --ring``, ``verify`` and ``import`` go through the memory records in
bounded batches (issue 33): each command's peak RSS (its own VmHWM, tests/peak_kit.py) at
11,000 memories of 3 KB is within GROWTH_MB of its peak at 1,000. Holding the records grew the
peaks of export and import by about 100 and 120 MB between the two sizes before the streaming
pass (verify already streamed: 6 MB); now 16, 6 and 6 MB: the ids and digests per memory the
integrity pass keeps and one batch of vector rows."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from engram.core.keys import PrivateKey, save_private_key
from engram.memory import (
    Memory,
    MemoryRecord,
    MemoryStatus,
    default_manifest_text,
    import_memories,
    memory_id,
)
from engram.store import open_store
from peak_kit import run_python_peak

# `engram default-ote`'s seat, model-free: the memories go into its own ring (M4, the seat id).
SEAT = default_manifest_text(without_model="this test records with the model-free seat")
RING_ID = "seat:engram-implementer"
SMALL, LARGE = 1_000, 11_000
TEXT_WORDS = 420
"""About 3 KB of text per memory: the records of the large ring are ~30 MB as text alone."""
GROWTH_MB = 30
"""How much more the large ring may take than the small one (it takes 6-16 MB)."""


def _seat(folder: Path, n: int) -> Path:
    folder.mkdir()
    (folder / "ote.toml").write_text(SEAT)
    save_private_key(folder / "key", PrivateKey.generate())
    store = open_store(f"sqlite://{folder / 'engram.db'}")
    try:
        import_memories(store, (_record(i) for i in range(n)))
    finally:
        store.close()
    return folder


def _record(i: int) -> MemoryRecord:
    text = f"memory {i}: " + " ".join(f"w{(i * 7 + j) % 9973}" for j in range(TEXT_WORDS))
    return MemoryRecord(
        Memory(
            id=memory_id(RING_ID, "fact", text),
            ring="M4",
            ring_id=RING_ID,
            kind="fact",
            text=text,
            entities=(f"S{i % 97}",),
            provenance={},
            thread="",
            seat_id=RING_ID,
            tokens=0,
            alpha=1.0,
            beta=1.0,
            status=MemoryStatus.CANDIDATE,
            graduated_at=None,
            origin="import",
            created_at=f"2026-01-01T00:00:{i % 60:02d}Z",
        ),
        (),
    )


def _peak(*args: str) -> int:
    done, peak = run_python_peak(
        "from engram.cli import main; main()", args, timeout=300, env=os.environ
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert peak > 0
    return peak // 1024


def _peaks(seat: Path) -> dict[str, int]:
    acx, into = seat / "out.acx", seat / "into.db"
    ote = str(seat / "ote.toml")
    peaks = {
        "export": _peak(
            *("cartridge", "export", "-o", str(acx), "--publisher", "io.github.bounded"),
            *("--ring", "M4", "--sign-key", str(seat / "key")),
            *("--database", f"sqlite://{seat / 'engram.db'}", "--ote", ote),
        ),
        "verify": _peak("cartridge", "verify", str(acx)),
        "import": _peak(
            *("cartridge", "import", str(acx), "--accept", "portable"),
            *("--database", f"sqlite://{into}", "--ote", ote),
        ),
    }
    # Each run really carried its memories: the peaks compare like with like.
    with sqlite3.connect(into) as conn:
        (count,) = conn.execute("SELECT count(*) FROM memory_items").fetchone()
    assert count == int(seat.name.removeprefix("n"))
    return peaks


@pytest.mark.req("engram.cartridge.bounded-streaming")
def test_export_verify_and_import_peaks_do_not_grow_with_the_records(tmp_path: Path) -> None:
    small = _peaks(_seat(tmp_path / f"n{SMALL}", SMALL))
    large = _peaks(_seat(tmp_path / f"n{LARGE}", LARGE))
    grown = {command: large[command] - small[command] for command in small}
    assert all(g <= GROWTH_MB for g in grown.values()), (small, large)
