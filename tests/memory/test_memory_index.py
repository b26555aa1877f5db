"""The derived index beside the store: shared by processes, checked against the database's
change sequence, rebuilt when stale (a crash mid-update, another database, a ring move), never
answering from files that disagree with the database (docs/spec/memory-retrieval.md "The index").
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tantivy
from memory_kit import manifest_text

from engram.core.clock import FixedClock
from engram.memory import (
    MemoryEngine,
    RecordInput,
    migrate_rings,
    open_engine,
    parse_manifest,
    recall,
    record,
    record_many,
)
from engram.memory.internals import TEXT_SCHEMA
from engram.store import Store, open_store

# A child process that opens the same store and records, or recalls and prints the top text.
CHILD = """
import sys
from pathlib import Path
from engram.core.clock import FixedClock
from engram.memory import open_engine, parse_manifest, recall, record
from engram.store import open_store
url, manifest, action, text = sys.argv[1:5]
folder = Path(sys.argv[5]) if len(sys.argv) > 5 else None
store = open_store(url)
spec = parse_manifest(Path(manifest).read_text(), manifest)
engine = open_engine(store, spec, FixedClock(), index_folder=folder)
if action == "record":
    record(engine, text, "fact", "M2")
else:
    hits = recall(engine, text, k=1).hits
    print(hits[0].memory.text if hits else "")
store.close()
"""


def _child(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _engine(store: Store, tmp_path: Path, folder: Path | None = None) -> MemoryEngine:
    spec = parse_manifest(manifest_text(), str(tmp_path / "ote.toml"), tmp_path)
    return open_engine(store, spec, FixedClock(), index_folder=folder)


@pytest.mark.req("engram.memory.index-beside-store")
def test_the_index_lives_beside_a_sqlite_store_and_is_reused_by_the_next_process(
    tmp_path: Path,
) -> None:
    db = tmp_path / "engram.db"
    store = open_store(f"sqlite://{db}")
    engine = _engine(store, tmp_path)
    record_many(
        engine,
        [RecordInput(f"release train {i} ships on tuesday", "fact", "M2") for i in range(30)],
    )
    record(engine, "the cache warmer runs at dawn", "fact", "M2")
    assert recall(engine, "cache warmer").hits[0].memory.text == "the cache warmer runs at dawn"
    folder = db.with_name("engram.db.index")
    current = (folder / "CURRENT").read_text()
    assert (folder / current / "meta.json").is_file()
    assert engine.index.rebuilds == 1
    store.close()
    # A second engine (a new process would do the same) opens the files: no rebuild.
    store = open_store(f"sqlite://{db}")
    again = _engine(store, tmp_path)
    assert recall(again, "cache warmer").hits[0].memory.text == "the cache warmer runs at dawn"
    assert again.index.rebuilds == 0
    assert (folder / "CURRENT").read_text() == current
    store.close()


@pytest.mark.req("engram.memory.index-multi-process")
def test_processes_sharing_a_store_see_each_others_writes_on_their_next_recall(
    any_database_url: str, tmp_path: Path
) -> None:
    manifest = tmp_path / "ote.toml"
    manifest.write_text(manifest_text())
    host_a, host_b = tmp_path / "host-a", tmp_path / "host-b"
    store = open_store(any_database_url)
    postgres = any_database_url.startswith("postgresql")
    # PostgreSQL: each host keeps its own index folder, fed by the shared change sequence.
    engine = _engine(store, tmp_path, host_a if postgres else None)
    record(engine, "the staging cluster lives in frankfurt", "fact", "M2")
    assert recall(engine, "staging cluster").hits[0].memory.text.endswith("frankfurt")
    extra = [str(host_b)] if postgres else []
    # Another process records; this long-lived engine sees it on its next recall.
    _child(
        any_database_url, str(manifest), "record", "the billing queue drains at midnight", *extra
    )
    assert recall(engine, "billing queue").hits[0].memory.text.endswith("midnight")
    # This engine records; another process (another host's index on PostgreSQL) sees it.
    record(engine, "the audit log is kept for seven years", "fact", "M2")
    top = _child(any_database_url, str(manifest), "recall", "audit log years", *extra)
    assert top == "the audit log is kept for seven years"
    store.close()


def _break(folder: Path) -> None:
    """What a kill -9 in the middle of an update leaves: a side array longer than the meta
    says and a document tantivy committed beyond it."""
    current = folder / (folder / "CURRENT").read_text()
    with (current / "ring.bin").open("ab") as f:
        f.write(b"\x00\x00\x00\x00")
    index = tantivy.Index(TEXT_SCHEMA, path=str(current / "text"), reuse=True)
    writer = index.writer(15_000_000, 1)
    ghost = tantivy.Document()
    ghost.add_unsigned("doc", 10_000)
    ghost.add_text("ring", "repo:0000000000000000")
    ghost.add_text("terms", "ghost")
    writer.add_document(ghost)
    writer.commit()
    writer.wait_merging_threads()


@pytest.mark.req("engram.memory.index-stale-rebuilt")
def test_files_a_crashed_update_left_are_detected_stale_and_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / "engram.db"
    store = open_store(f"sqlite://{db}")
    engine = _engine(store, tmp_path)
    record(engine, "the first memory is about ghosts of rollbacks", "fact", "M2")
    recall(engine, "ghosts")
    _break(db.with_name("engram.db.index"))
    # Readers use only what the meta covers: the ghost document is never answered.
    fresh = _engine(store, tmp_path)
    assert [h.memory.text for h in recall(fresh, "ghost").hits] == [
        "the first memory is about ghosts of rollbacks"
    ]
    assert fresh.index.rebuilds == 0
    # The next update finds the files disagreeing with the meta and rebuilds.
    record(fresh, "a second memory about ghost towns", "fact", "M2")
    texts = {h.memory.text for h in recall(fresh, "ghost").hits}
    assert texts == {
        "the first memory is about ghosts of rollbacks",
        "a second memory about ghost towns",
    }
    assert fresh.index.rebuilds == 1
    store.close()


@pytest.mark.req("engram.memory.index-stale-rebuilt")
@pytest.mark.slow
def test_a_kill_9_during_an_index_update_never_gives_a_wrong_answer(tmp_path: Path) -> None:
    db = tmp_path / "engram.db"
    manifest = tmp_path / "ote.toml"
    manifest.write_text(manifest_text())
    store = open_store(f"sqlite://{db}")
    engine = _engine(store, tmp_path)
    items = [
        RecordInput(f"filler memory number {i} about nothing", "fact", "M2") for i in range(60_000)
    ]
    record_many(engine, items, refresh=False)
    record(engine, "the needle is in memory sixty thousand and one", "fact", "M2")
    for delay in (0.3, 1.0, 2.5):
        # A fresh process starts loading 60k rows into the index and is killed mid-way.
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, f"sqlite://{db}", str(manifest), "recall", "needle"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    again = _engine(store, tmp_path)
    hits = recall(again, "needle sixty thousand").hits
    assert hits[0].memory.text == "the needle is in memory sixty thousand and one"
    assert len(again.index) == 60_001
    store.close()


@pytest.mark.req("engram.memory.index-stale-rebuilt")
def test_another_database_at_the_same_path_rebuilds_the_index(tmp_path: Path) -> None:
    db = tmp_path / "engram.db"
    store = open_store(f"sqlite://{db}")
    engine = _engine(store, tmp_path)
    record_many(
        engine, [RecordInput(f"old memory {i} about apples", "fact", "M2") for i in range(5)]
    )
    recall(engine, "apples")
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    store = open_store(f"sqlite://{db}")
    other = _engine(store, tmp_path)
    record_many(other, [RecordInput(f"new memory {i} about pears", "fact", "M2") for i in range(6)])
    # Same path, more rows than the old index had: only the instance id tells them apart.
    assert not any("apples" in h.memory.text for h in recall(other, "apples").hits)
    assert {h.memory.text for h in recall(other, "pears").hits} == {
        f"new memory {i} about pears" for i in range(6)
    }
    assert other.index.rebuilds == 1
    store.close()


@pytest.mark.req("engram.memory.index-stale-rebuilt")
def test_a_ring_move_rebuilds_the_index(any_store: Store, tmp_path: Path) -> None:
    spec_text = manifest_text().replace('ring_id = "canon:shared"', 'ring_id = "canon:fleet"')
    legacy = parse_manifest(spec_text, "legacy", tmp_path)
    from engram.memory import import_memories, memory_id

    text = "every deploy is announced in the channel"
    import_memories(
        any_store,
        [
            {
                "memory": {
                    "id": memory_id("canon:fleet", "invariant", text),
                    "ring": "M0",
                    "ring_id": "canon:fleet",
                    "kind": "invariant",
                    "text": text,
                    "thread": "",
                    "seat_id": "seat:engram-implementer",
                    "status": "candidate",
                    "created_at": "2026-01-01T00:00:00Z",
                },
                "events": [],
            }
        ],
    )
    old = open_engine(any_store, legacy, FixedClock())
    assert recall(old, "deploy announced").hits[0].memory.ring_id == "canon:fleet"
    migrate_rings(any_store)
    new = _engine(any_store, tmp_path)
    assert recall(new, "deploy announced").hits[0].memory.ring_id == "canon:shared"
    # canon:fleet is empty now: the old seat's engine rebuilt and finds nothing there.
    assert recall(old, "deploy announced").hits == ()
