"""Cartridges: build+sign, verify and import of 10,000 memories beside a plain SQLite bulk insert.

Run: ``python -m bench cartridge [--rounds N]``. Every workload carries the same 10,000 memory
records. The baseline is what the data costs with no format at all: ``executemany`` of those
rows into a fresh SQLite file and one commit. The contenders are the three cartridge paths of
lboel/acx@85f1358 SPEC.md §3.3, §4.2, §7.3: build+sign (prepare, scrub, write sqlar rows,
re-read live bytes, derive the manifest, sign), verify (open read-only, check the header and
schema, hash every ROM byte, compare the indexes, check the DSSE envelope), and import (verify
+ plan + merge the records into a fresh memory store through ``engram.memory.import_memories``,
which re-indexes each memory's local vector); "import plan" is the cartridge half of import on
its own.
"""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._harness import Case, Contender, measure, report
from engram.cartridge import (
    Cartridge,
    Contents,
    ExportOptions,
    merge_records,
    package_contents,
    verify_rom,
    write,
)
from engram.cartridge.internals import export_record
from engram.core.keys import PrivateKey
from engram.memory import MemoryRecord, MemoryStatus, import_memories
from engram.store import open_store
from engram.transfer import TransferRecord
from engram.trust import TrustState

COUNT = 10_000
KINDS = ("invariant", "decision", "procedure", "fact")
NOW = datetime(2026, 3, 1, tzinfo=UTC)


def _records() -> list[dict[str, Any]]:
    return [
        {
            "id": f"mem-{i:06d}",
            "kind": KINDS[i % len(KINDS)],
            "text": f"Memory {i}: service {i % 97} retries {i % 7} times before paging on-call.",
            "entities": [f"K{i % 100:02d}"],
        }
        for i in range(COUNT)
    ]


def _plain_insert(path: Path, records: list[dict[str, Any]]) -> None:
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memory(id TEXT PRIMARY KEY, kind TEXT, text TEXT, entities TEXT)")
    conn.executemany(
        "INSERT INTO memory VALUES (?, ?, ?, ?)",
        [(r["id"], r["kind"], r["text"], ",".join(r["entities"])) for r in records],
    )
    conn.commit()
    conn.close()


def main(*, rounds: int = 5) -> list[Case]:
    records = _records()
    key = PrivateKey.generate()
    work = Path(tempfile.mkdtemp(prefix="bench-cartridge-"))
    acx = work / "memories.acx"
    plain = work / "plain.db"

    package = work / "package"
    package.mkdir()
    (package / "manifest.json").write_text('{"name": "bench"}')
    acx_records = [
        export_record(
            {"id": r["id"], "title": r["kind"], "summary": r["text"], "tags": r["entities"]}
        )
        for r in records
    ]

    def build_and_sign() -> None:
        contents: Contents
        contents, _ = package_contents(package, ExportOptions("io.github.bench", NOW))
        contents.memories = acx_records
        acx.unlink(missing_ok=True)
        write(acx, contents, key=key, signed_at=NOW)

    def verify_only() -> None:
        with Cartridge.open(acx) as cartridge:
            assert verify_rom(cartridge)[0].state is TrustState.PORTABLE

    def plan() -> list[TransferRecord]:
        with Cartridge.open(acx) as cartridge:
            report, rom = verify_rom(cartridge)
        assert report.state is TrustState.PORTABLE
        merged = merge_records([], [m.record() for m in rom.rom_memories])
        return [TransferRecord.from_wire(r) for r in merged.records]

    def plan_only() -> None:
        assert len(plan()) == COUNT

    counter = iter(range(1_000_000))

    def import_into_fresh_store() -> None:
        from engram.memory import Memory

        store = open_store(f"sqlite:///{work / f'store-{next(counter)}.db'}")
        try:
            ring = "seat:bench"
            typed = [
                MemoryRecord(
                    Memory(
                        r.memory_id(ring),
                        "M4",
                        ring,
                        r.kind,
                        r.text,
                        r.tags,
                        {"acxRecordId": r.id},
                        "",
                        ring,
                        0,
                        1.0,
                        1.0,
                        MemoryStatus.CANDIDATE,
                        None,
                        "import",
                        "2026-03-01T00:00:00.000000Z",
                    ),
                    (),
                )
                for r in plan()
            ]
            assert import_memories(store, typed).imported == COUNT
        finally:
            store.close()

    build_and_sign()  # the file the verify and import cases read
    baseline = Contender("plain SQLite bulk insert", lambda: _plain_insert(plain, records))
    cases = [
        Case(f"build+sign {COUNT:,}", [baseline, Contender("engram build+sign", build_and_sign)]),
        Case(f"verify {COUNT:,}", [baseline, Contender("engram verify", verify_only)]),
        # The cartridge half of import alone (verify + trust decision + two-key merge plan), so
        # the figure below it shows what the memory engine's write path adds.
        Case(f"import plan {COUNT:,}", [baseline, Contender("engram verify+plan", plan_only)]),
        Case(
            f"import {COUNT:,}",
            [baseline, Contender("engram verify+merge+import", import_into_fresh_store)],
        ),
    ]
    for case in cases:
        measure(case, rounds=rounds, sample_seconds=0.05)
    report(f"cartridge: {COUNT:,} memories (per operation; throughput = {COUNT:,} / median)", cases)
    for case in cases:
        for contender in case.contenders[1:]:
            median = sorted(case.samples[contender.name])[len(case.samples[contender.name]) // 2]
            print(f"{case.label}: {COUNT / median:,.0f} memories/s ({contender.name})")
    return cases


if __name__ == "__main__":
    main()
