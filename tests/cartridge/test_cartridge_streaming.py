"""Streaming reads and writes (issue 33) decide exactly what the whole-table code decided.

``verify`` reads the ROM with ``check_rom``, which drops each memory row once checked, and
``write`` writes, screens and drops the memory records a batch at a time. These tests hold them
to ``load_rom`` and to one scrub pass over everything: the same problems in the same order, the
same manifest, the same refusals, the same scrub message.
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from cartridge_kit import NOW, PUBLISHER, RECORDS, SALT, write_package
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engram.cartridge import (
    Cartridge,
    ExportOptions,
    ScrubBlocked,
    _build,
    load_rom,
    package_contents,
    verify,
    verify_rom,
    write,
)
from engram.cartridge import _embed as embed_module
from engram.cartridge import _rom as rom_module
from engram.cartridge import _scrub as scrub_module
from engram.cartridge.internals import set_memories
from engram.core.canonical import canonicalize
from engram.core.keys import PrivateKey


@pytest.fixture
def built(tmp_path: Path) -> Path:
    """A signed cartridge with ROM and SAVE memories (the field-learned one carried)."""
    package = write_package(tmp_path / "pkg", records=RECORDS)
    options = ExportOptions(PUBLISHER, NOW, include_field_learned=True, installation_salt=SALT)
    contents, _ = package_contents(package, options)
    out = tmp_path / "built.acx"
    write(out, contents, key=PrivateKey.generate(), signed_at=NOW)
    return out


TAMPERINGS = [
    "UPDATE memory SET payload = :edited WHERE id = 'mem-001'",
    "UPDATE memory SET payload = 'nope' WHERE id = 'mem-001'",
    "UPDATE memory SET payload = :duplicated WHERE id = 'mem-001'",
    "UPDATE memory SET payload = '[1, 2]' WHERE id = 'mem-001'",
    "UPDATE memory SET payload = '{\"n\": 99999999999999999999}' WHERE id = 'mem-001'",
    "UPDATE memory SET zone = 'save' WHERE id = 'mem-001'",
    "UPDATE memory SET artifact_fingerprint = 'x' WHERE id = 'mem-003'",
    "UPDATE memory SET codebase_fingerprint = 'cbf1_x' WHERE id = 'mem-003'",
    "UPDATE memory SET oid = 'sha256:00' WHERE id = 'mem-003'",
    "DELETE FROM objects WHERE source_ref = 'memory:mem-001'",
    "DELETE FROM memory WHERE id = 'mem-003'",
    "UPDATE objects SET sz = sz + 1 WHERE source_ref = 'memory:mem-003'",
    "UPDATE objects SET zone = 'rom' WHERE source_ref LIKE 'memory:%'",
    "UPDATE objects SET kind = 'sqlar' WHERE source_ref = 'memory:mem-001'",
    "UPDATE objects SET sz = 9007199254740993 WHERE source_ref = 'memory:mem-001'",
    "UPDATE objects SET sz = 'ten' WHERE source_ref = 'memory:mem-001'",
    "UPDATE memory SET payload = CAST(payload AS BLOB) WHERE id = 'mem-001'",
    "UPDATE memory SET created_at = 7 WHERE id = 'mem-001'",
    "INSERT INTO memory VALUES ('mem-x', 'rom', 'a', NULL, '{}', 'sha256:00', 't')",
    "DELETE FROM vectors",
]


def _outcome(path: Path, reader: Any) -> tuple[str, object]:
    try:
        with Cartridge.open(path) as cartridge:
            rom = reader(cartridge)
    except Exception as e:  # the refusal itself is what is compared
        return "refused", (type(e).__name__, str(e))
    return "read", (
        rom.problems,
        rom.manifest_hash,
        rom.manifest,
        rom.objects,
        rom.meta,
        rom.files,
        rom.capabilities,
        rom.signed_meta,
    )


@pytest.mark.req("engram.cartridge.live-hashes", "engram.cartridge.rom-manifest")
@pytest.mark.parametrize("sql", TAMPERINGS)
def test_check_rom_decides_what_load_rom_decides(built: Path, sql: str) -> None:
    with Cartridge.open(built) as cartridge:
        whole = load_rom(cartridge)
    first = whole.memories["mem-001"]
    params = {
        "edited": canonicalize({**first.record(), "summary": "edited after signing"}).decode(),
        "duplicated": first.payload[:-1] + ',"id":"mem-001"}',  # the id member twice
    }
    conn = sqlite3.connect(built)
    conn.execute(sql, {k: v for k, v in params.items() if f":{k}" in sql})
    conn.commit()
    conn.close()
    streamed = _outcome(built, rom_module.check_rom)
    assert streamed == _outcome(built, load_rom)
    if streamed[0] == "read":
        with Cartridge.open(built) as cartridge:
            lean = rom_module.check_rom(cartridge)
            assert (lean.memories, lean.memories_kept, lean.vector_ids) == ({}, False, frozenset())
            assert verify(cartridge) == verify_rom(cartridge)[0]


def _written(path: Path) -> Any:
    """What a writer would have folded for the memory rows ``path`` holds now."""
    written = rom_module.WrittenColumns()
    with sqlite3.connect(path) as conn:
        for row in conn.execute(
            "SELECT id, zone, artifact_fingerprint, codebase_fingerprint, oid FROM memory"
        ):
            written.add(*row)
    return written


@pytest.mark.req("engram.cartridge.live-hashes", "engram.cartridge.rom-manifest")
@pytest.mark.parametrize("sql", TAMPERINGS)
def test_the_writers_read_back_refuses_whatever_a_reader_refuses(built: Path, sql: str) -> None:
    # The writer checks its staged file against the rows it wrote (WrittenColumns) instead of
    # parsing each payload it has just canonicalised: any change after writing that a reader
    # of the file refuses or reports, the writer's read-back refuses or reports too.
    written = _written(built)
    with Cartridge.open(built) as cartridge:
        assert rom_module.check_rom(cartridge, written=written).problems == []
        whole = load_rom(cartridge)
    first = whole.memories["mem-001"]
    params = {
        "edited": canonicalize({**first.record(), "summary": "edited after signing"}).decode(),
        "duplicated": first.payload[:-1] + ',"id":"mem-001"}',
    }
    conn = sqlite3.connect(built)
    conn.execute(sql, {k: v for k, v in params.items() if f":{k}" in sql})
    conn.commit()
    conn.close()
    reader = _outcome(built, load_rom)
    writer = _outcome(built, lambda c: rom_module.check_rom(c, written=written))
    reader_objects = reader[1][0] if reader[0] == "read" else None  # type: ignore[index]
    if reader[0] == "refused" or reader_objects:
        assert writer[0] == "refused" or writer[1][0]  # type: ignore[index]


@pytest.mark.req("engram.cartridge.live-hashes")
def test_the_writers_read_back_refuses_a_row_it_did_not_write(built: Path) -> None:
    written = _written(built)
    with sqlite3.connect(built) as conn:
        conn.execute("DELETE FROM memory WHERE id = 'mem-003'")
    with Cartridge.open(built) as cartridge:
        problems = rom_module.check_rom(cartridge, written=written).problems
    assert "memory: the rows read back are not the rows written" in problems


@pytest.mark.req("engram.cartridge.live-hashes")
def test_an_intact_cartridge_reads_the_same_both_ways(built: Path) -> None:
    assert _outcome(built, rom_module.check_rom) == _outcome(built, load_rom)
    with Cartridge.open(built) as cartridge:
        assert verify(cartridge) == verify_rom(cartridge)[0]
        assert load_rom(cartridge).memories_kept


def _secret_package(tmp_path: Path) -> Path:
    records = [
        {
            "id": f"mem-{n:03d}",
            "title": f"note {n}",
            "summary": "set password=hunter2hunter2 on the box" if n % 3 else "plain words",
            "sourceType": "lesson",
            "timestamp": "2026-02-01T10:00:00.000Z",
        }
        for n in (9, 1, 7, 3, 5, 2, 8, 4, 6)  # not in id order: findings are sorted by path
    ]
    extra = {"IDENTITY.md": b"I live in /home/alice and my api_key=abcdefgh12345678\n"}
    return write_package(tmp_path / "pkg", records=records, extra=extra)


@pytest.mark.req("engram.cartridge.scrub-gate")
@pytest.mark.parametrize("batch", [1, 2, 4, 2000])
def test_the_streamed_scrub_gate_blocks_with_the_one_pass_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    options = ExportOptions(PUBLISHER, NOW)
    contents, _ = package_contents(_secret_package(tmp_path), options)
    everything: dict[str, bytes] = {n: f[0] for n, f in contents.files.items()}
    for record in contents.memories:
        everything[f"memory:{record['id']}"] = canonicalize(record)
    for capability in contents.capabilities:
        everything[f"capability:{capability['id']}"] = canonicalize(capability)
    for key, value in contents.meta.items():
        everything[f"cartridge:{key}"] = value.encode("utf-8")
    with pytest.raises(ScrubBlocked) as one_pass:
        scrub_module.require_clean(everything, contents.literals)
    monkeypatch.setattr(_build, "_BATCH", batch)
    out = tmp_path / "blocked.acx"
    with pytest.raises(ScrubBlocked) as streamed:
        write(out, contents, key=PrivateKey.generate(), signed_at=NOW)
    assert streamed.value.message == one_pass.value.message
    assert "memory:mem-001" in streamed.value.message
    assert not out.exists()
    assert not list(tmp_path.glob(".blocked.acx.*"))


@pytest.mark.req("engram.cartridge.memory-baseline")
@pytest.mark.parametrize("batch", [1, 2, 2000])
def test_a_repeated_memory_id_is_refused_in_any_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    options = ExportOptions(PUBLISHER, NOW)
    contents, _ = package_contents(write_package(tmp_path / "pkg", records=RECORDS[:1]), options)
    contents.memories = [*contents.memories, *contents.memories]
    monkeypatch.setattr(_build, "_BATCH", batch)
    out = tmp_path / "twice.acx"
    with pytest.raises(Exception, match="two memory records share an id"):
        write(out, contents, key=None, signed_at=NOW)
    assert not out.exists()


_WORDS = st.sampled_from(["Memory", "s0", "retries", "on-call", "é", "İ", "ﬁ", "x_y", "42", ""])


@pytest.mark.req("engram.cartridge.memory-baseline", "engram.cartridge.vector-dimension")
@given(st.one_of(st.text(max_size=200), st.lists(_WORDS, max_size=40).map(" ".join)))
@settings(max_examples=300, deadline=None)  # what it checks is bytes, not time
@example("")
@example("a b a")  # +1 and -1 on the same dimension may cancel
@example("Memory 12: service S12 retries 5 times before paging on-call (runbook 12).")
def test_the_packed_embedding_is_the_bytes_of_the_embedding(text: str) -> None:
    assert embed_module.embed_packed(text) == embed_module.pack(embed_module.embed(text))


@pytest.mark.req("engram.cartridge.bounded-streaming")
@pytest.mark.parametrize("batch_bytes", [1, 300, 4 * 1024 * 1024])
def test_the_file_is_the_same_from_an_iterator_and_in_any_byte_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_bytes: int
) -> None:
    """Records drawn from an iterator (the package spec's count written in place once they are
    counted) and memory rows flushed after any number of payload bytes give the very bytes a
    list of the same records gives: the cartridge id is pinned, the clock fixed and Ed25519
    deterministic, so the whole file is compared."""
    package = write_package(tmp_path / "pkg", records=RECORDS)
    options = ExportOptions(PUBLISHER, NOW, include_field_learned=True, installation_salt=SALT)
    key = PrivateKey.generate()
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=7))

    def build(name: str, *, streamed: bool) -> bytes:
        contents, _ = package_contents(package, options)
        if streamed:
            set_memories(contents, iter(list(contents.memories)))
        out = tmp_path / name
        write(out, contents, key=key, signed_at=NOW)
        return out.read_bytes()

    reference = build("list.acx", streamed=False)
    monkeypatch.setattr(_build, "_BATCH_BYTES", batch_bytes)
    assert build("streamed.acx", streamed=True) == reference
    with Cartridge.open(tmp_path / "streamed.acx") as cartridge:
        assert len(load_rom(cartridge).memories) == len(RECORDS)


@pytest.mark.req("engram.cartridge.bounded-streaming")
@settings(max_examples=100, deadline=None)  # what it checks is bytes, not time
@given(st.lists(st.text(), max_size=12))
@example(["", "a b a", "...", "Memory 12: service S12 retries 5 times (runbook 12)."])
def test_a_batch_of_packed_embeddings_is_the_bytes_of_each(texts: list[str]) -> None:
    # The writer embeds a batch of texts at a time in numpy; each vector keeps its bytes.
    assert embed_module.embed_packed_many(texts) == [embed_module.embed_packed(t) for t in texts]
