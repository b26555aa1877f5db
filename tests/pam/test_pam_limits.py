"""The caps of a PAM file read a memory at a time, and an export that never writes a file the
importer refuses (docs/spec/pam.md "How large a document may be", docs/spec/limits.md §2).

A parsed document holds at most 1,000,000 JSON values and 50,000 memories; the streaming reader
holds one memory at a time, so it counts each memory's values on its own (and the root's other
members, which it holds, together) and caps the memories at ``PamLimits.max_memories``. The
caps are crossed here through ``PamLimits`` made small, so a round trip "above the boundary"
costs a few memories, and once for real with a document of more than 1,000,000 values.
"""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
from pam_kit import engine_on, loose, reference_checksum

from engram.core.canonical import parse_strict
from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.errors import EngramError, InvalidRequest
from engram.memory import MemoryEngine, RecordInput, record, record_many
from engram.store import open_store
from engram.transfer import (
    PamLimits,
    export_pam,
    export_pam_file,
    import_pam,
    import_pam_file,
)

Outcome = tuple[str, Any]
DEFAULT = PamLimits()


def _store(n: int) -> MemoryEngine:
    engine = engine_on(open_store("memory://"), FixedClock())
    items = [
        RecordInput(f"fact {i}: the release train leaves at noon ({i})", "fact") for i in range(n)
    ]
    record_many(engine, items)
    return engine


def _export(engine: MemoryEngine, limits: PamLimits = DEFAULT) -> bytes:
    out = io.StringIO()
    export_pam_file(engine, out, limits=limits)
    return out.getvalue().encode()


def _import(data: bytes, limits: PamLimits = DEFAULT) -> Outcome:
    engine = engine_on(open_store("memory://"))
    try:
        result = import_pam_file(engine, io.BytesIO(data), limits=limits)
    except EngramError as e:
        return type(e).__name__, e.message
    return "ok", (result.inserted, _held(engine))


def _held(engine: MemoryEngine) -> list[Any]:
    return list(export_pam(engine).document["memories"])  # type: ignore[arg-type]


def _whole(data: bytes) -> Outcome:
    engine = engine_on(open_store("memory://"))
    try:
        import_pam(engine, parse_strict(data))
    except EngramError as e:
        return type(e).__name__, e.message
    return "ok", None


# --- values: each memory on its own ---------------------------------------------------------


@pytest.mark.req("engram.pam.stream-caps")
def test_a_document_above_the_parsed_values_cap_round_trips_when_streamed() -> None:
    # The real boundary: 1,200,000 values in four memories. The whole-document reader refuses
    # it; the streaming reader holds one memory at a time and imports it, and the store's own
    # export of it imports again, memory for memory.
    engine = _store(4)
    doc = loose(export_pam(engine).document)
    for memory in doc["memories"]:
        memory.setdefault("metadata", {})["samples"] = [0] * 300_000
    doc["integrity"]["checksum"] = reference_checksum(doc["memories"])
    data = dumps_text(doc).encode()
    assert _whole(data) == ("InvalidRequest", "the PAM document has more than 1000000 values")
    name, (inserted, held) = _import(data)
    assert (name, inserted) == ("ok", 4)
    assert [m["metadata"]["samples"] == [0] * 300_000 for m in held] == [True] * 4
    again = engine_on(open_store("memory://"))
    import_pam_file(again, io.BytesIO(data))
    assert _import(_export(again)) == ("ok", (4, held))


@pytest.mark.req("engram.pam.stream-caps")
def test_the_values_cap_applies_to_each_memory_and_the_rest_together() -> None:
    engine = _store(6)
    data = _export(engine)
    doc = json.loads(data)
    per_memory = max(_count(m) for m in doc["memories"])
    held = _count({k: v for k, v in doc.items() if k != "memories"}) + 1  # + the array
    total = _count(doc)
    cap = max(per_memory, held)
    assert total > cap  # the document as a whole is over the cap; no member is
    small = PamLimits(max_member_values=cap)
    assert _import(data, small)[0] == "ok"
    assert _import(_export(engine, small), small)[0] == "ok"  # the export under the cap too
    # One memory over it: refused, naming the memory (the last in document order: the walk
    # meets memories last to first, as the whole-document check does).
    over = copy.deepcopy(doc)
    for i in (1, 3):
        over["memories"][i]["metadata"]["extra"] = [0] * cap
    assert _import(dumps_text(over).encode(), small) == (
        "InvalidRequest",
        f"$.memories[3] has more than {cap} values",
    )
    # The members the reader holds whole, over it together: refused, and the document's words.
    wide = copy.deepcopy(doc)
    wide["owner"]["extra"] = [0] * cap
    assert _import(dumps_text(wide).encode(), small) == (
        "InvalidRequest",
        f"the PAM document has more than {cap} values",
    )


def _count(value: Any) -> int:
    """Values as ``check_shape`` counts them: every container, member and item."""
    if isinstance(value, dict):
        return 1 + sum(_count(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_count(v) for v in value)
    return 1


@pytest.mark.req("engram.pam.stream-caps")
def test_a_memory_over_the_real_values_cap_is_refused_by_both_readers() -> None:
    doc = loose(export_pam(_store(3)).document)
    doc["memories"][0]["metadata"]["n"] = [0] * 1_000_001
    data = dumps_text(doc).encode()
    assert _whole(data) == ("InvalidRequest", "the PAM document has more than 1000000 values")
    assert _import(data) == ("InvalidRequest", "$.memories[0] has more than 1000000 values")


# --- memories -------------------------------------------------------------------------------


@pytest.mark.req("engram.pam.stream-caps")
def test_the_memories_cap_of_a_streamed_file() -> None:
    data = _export(_store(5))
    assert _import(data, PamLimits(max_memories=5))[0] == "ok"
    assert _import(data, PamLimits(max_memories=4)) == (
        "InvalidRequest",
        "$.memories: more than 4 memories in one document",
    )


@pytest.mark.req("engram.pam.stream-caps", "engram.limits.pam-caps")
def test_a_parsed_document_keeps_its_caps_and_a_streamed_one_has_its_own() -> None:
    one = loose(export_pam(_store(1)).document)["memories"][0]
    many = {
        "schema": "portable-ai-memory",
        "schema_version": "1.0",
        "memories": [{**one, "id": f"m{i:05d}"} for i in range(50_001)],
    }  # no owner: the question is which refusal comes first
    data = dumps_text(many).encode()
    assert _whole(data) == (
        "InvalidRequest",
        "$.memories: more than 50000 memories in one document",
    )
    # Under the streamed cap every memory is judged, and the document is refused for its root.
    assert _import(data) == (
        "InvalidRequest",
        "not a valid PAM 1.0 document: $: 'owner' is a required property",
    )


# --- export: a file the importer accepts, or nothing ----------------------------------------


def _exports_logged(engine: MemoryEngine) -> int:
    with engine.store.read() as tx:
        return len(tx.execute("SELECT export_id FROM pam_exports"))


@pytest.mark.req("engram.pam.export-within-caps")
def test_an_export_over_the_memories_cap_is_refused_before_a_byte_is_written() -> None:
    engine = _store(5)
    out = io.StringIO()
    with pytest.raises(InvalidRequest) as refused:
        export_pam_file(engine, out, limits=PamLimits(max_memories=4))
    assert refused.value.message == (
        "5 memories to export: one PAM document holds at most 4; export it in parts: --ring for "
        "one ring at a time, --since for what changed after an instant"
    )
    assert out.getvalue() == ""
    assert _exports_logged(engine) == 0  # a refused export never happened


@pytest.mark.req("engram.pam.export-within-caps")
def test_an_export_over_the_bytes_cap_is_refused_and_one_at_it_is_written() -> None:
    engine = _store(5)
    size = len(_export(engine))  # bytes, as a file holds them
    assert _exports_logged(engine) == 1
    exact = PamLimits(max_bytes=size)
    written = _export(engine, exact)
    assert len(written) == size
    assert _import(written, exact)[0] == "ok"  # at the cap: written, and read back
    out = io.StringIO()
    with pytest.raises(InvalidRequest) as refused:
        export_pam_file(engine, out, limits=PamLimits(max_bytes=size - 1))
    assert refused.value.message == (
        f"the document would be {size} bytes: one PAM document is at most {size - 1}; export it "
        "in parts: --ring for one ring at a time, --since for what changed after an instant"
    )
    assert out.getvalue() == ""
    assert _exports_logged(engine) == 2
    assert _import(written, PamLimits(max_bytes=size - 1)) == (
        "InvalidRequest",
        f"the document: larger than {size - 1} bytes",
    )


@pytest.mark.req("engram.pam.export-within-caps", "engram.limits.pam-caps")
def test_the_longest_text_engram_records_exports_and_imports_again() -> None:
    engine = engine_on(open_store("memory://"), FixedClock())
    record(engine, "x" * 99_991 + " the end.", kind="fact")  # engram's cap: 100,000 characters
    assert len(_held(engine)[0]["content"]) == 100_000
    name, (inserted, held) = _import(_export(engine))
    assert (name, inserted, len(held[0]["content"])) == ("ok", 1, 100_000)
