"""The streaming reader (``import_pam_file``) accepts and refuses exactly what the whole-document
reader (``parse_strict`` + ``import_pam``) does, with the same error and the same words, and
imports the same memories (docs/spec/pam.md "Import", streaming).

Every case runs both readers on the same bytes, each into a fresh store, and compares the
outcome: the error class and message, or the summary and what an export then holds. The
reader's chunk is made tiny in most runs so that every value straddles a chunk boundary.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pam_kit import engine_on, loose, reference_checksum, reference_verify, save_sdk_document

from engram.core.canonical import parse_strict
from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.core.keys import PrivateKey
from engram.errors import EngramError, InvalidRequest
from engram.memory import RecordInput, record, record_many
from engram.store import open_store
from engram.transfer import (
    MAX_PAM_BYTES,
    export_pam,
    export_pam_file,
    import_pam,
    import_pam_file,
)
from engram.transfer.internals import fast_memory_check, memory_schema_valid, set_read_chunk

Outcome = tuple[str, Any]


def _whole(data: bytes) -> Outcome:
    engine = engine_on(open_store("memory://"))
    try:
        if len(data) > MAX_PAM_BYTES:
            raise InvalidRequest(f"the document: larger than {MAX_PAM_BYTES} bytes")
        result = import_pam(engine, parse_strict(data))
    except EngramError as e:
        return type(e).__name__, e.message
    return "ok", (_summary(result.to_wire()), _held(engine))


def _streamed(data: bytes) -> Outcome:
    engine = engine_on(open_store("memory://"))
    try:
        result = import_pam_file(engine, io.BytesIO(data))
    except EngramError as e:
        return type(e).__name__, e.message
    return "ok", (_summary(result.to_wire()), _held(engine))


def _summary(wire: dict[str, Any]) -> dict[str, Any]:
    return dict(wire)


def _held(engine: Any) -> list[Any]:
    document = export_pam(engine).document
    return list(document["memories"])  # type: ignore[arg-type]


def same(data: bytes) -> Outcome:
    whole = _whole(data)
    assert _streamed(data) == whole
    return whole


@pytest.fixture(autouse=True)
def _tiny_chunks() -> Any:
    before = set_read_chunk(7)  # every memory straddles several chunks
    yield
    set_read_chunk(before)


def _engram_document(n: int = 4) -> dict[str, Any]:
    engine = engine_on(open_store("memory://"), FixedClock())
    for i in range(n):
        record(engine, f"fact {i}: the build uses uv and ruff ({i})", kind="fact")
    out = export_pam(engine).document
    assert isinstance(out, dict)
    return loose(out)


_BASES: dict[str, dict[str, Any]] = {}


def _base(name: str, tmp: Path) -> dict[str, Any]:
    if name not in _BASES:
        _BASES[name] = save_sdk_document(tmp / "sdk.json") if name == "sdk" else _engram_document()
    return copy.deepcopy(_BASES[name])


def _text(doc: Any, indent: int | None = 2) -> bytes:
    # Any text at all, including what engram's own writer (dumps_text) would refuse to write.
    return json.dumps(doc, indent=indent, ensure_ascii=False).encode()  # noqa: TID251


@pytest.mark.req("engram.pam.streaming")
@pytest.mark.parametrize("name", ["sdk", "engram"])
def test_valid_documents_import_the_same(name: str, tmp_path: Path) -> None:
    doc = _base(name, tmp_path)
    assert same(_text(doc))[0] == "ok"
    assert same(_text(doc, None))[0] == "ok"
    shuffled = copy.deepcopy(doc)
    shuffled["memories"].reverse()  # not in id order: the checksum takes another pass
    same(_text(shuffled))


def _tampered(doc: dict[str, Any]) -> list[Any]:
    m0 = doc["memories"][0]
    cases: list[Any] = []

    def edit(fn: Any) -> None:
        d = copy.deepcopy(doc)
        fn(d)
        cases.append(d)

    edit(lambda d: d["memories"][0].__setitem__("content", "User speaks only Klingon."))
    edit(lambda d: d["integrity"].__setitem__("total_memories", 1))
    edit(lambda d: d["memories"][0].__setitem__("priority", "high"))
    edit(lambda d: d["memories"][1]["temporal"].__setitem__("created_at", "yesterday"))
    edit(lambda d: d.__setitem__("schema_version", "2.0"))
    edit(lambda d: d.__setitem__("schema", "other"))
    edit(lambda d: d["memories"].append(copy.deepcopy(m0)))  # a repeated id
    edit(lambda d: d["memories"][0].__setitem__("id", "i" * 300))
    edit(lambda d: d["memories"][1].__setitem__("content", "x" * 100_001))
    edit(lambda d: d["memories"][0].__setitem__("tags", [[[[]]]] * 3))
    edit(lambda d: d["memories"][2].pop("content_hash"))
    edit(lambda d: d["memories"][2]["temporal"].__setitem__("superseded_by", "nobody"))
    edit(lambda d: d.__setitem__("memories", {"not": "an array"}))
    edit(lambda d: d.pop("memories"))
    edit(lambda d: d.__setitem__("owner", 7))
    deep: Any = []
    for _ in range(70):
        deep = [deep]
    edit(lambda d: d["memories"][0].setdefault("metadata", {}).__setitem__("deep", deep))
    edit(
        lambda d: d["memories"][1].setdefault("metadata", {}).__setitem__("s", "x" * (1 << 20 | 1))
    )
    edit(lambda d: d.__setitem__("spec_uri", "x" * (1 << 20 | 1)))

    def two_shapes(d: dict[str, Any]) -> None:  # check_shape meets the last memory's first
        d["memories"][0].setdefault("metadata", {})["deep"] = deep
        d["memories"][-1].setdefault("metadata", {})["s"] = "x" * (1 << 20 | 1)

    edit(two_shapes)
    # More values than a parsed document may hold: the streamed reader counts each memory on its
    # own (tests/pam/test_pam_limits.py), so those cases are there.
    edit(lambda d: d.__setitem__("relations", [0] * 1_000_001))  # held whole: counted together
    for n in range(1, 8):  # more than five schema problems, in several memories
        edit(lambda d, n=n: [m.__setitem__(f"x{n}", 1) for m in d["memories"]])
    return cases


@pytest.mark.req("engram.pam.streaming")
@pytest.mark.parametrize("name", ["sdk", "engram"])
def test_tampered_documents_are_refused_with_the_same_words(name: str, tmp_path: Path) -> None:
    for doc in _tampered(_base(name, tmp_path)):
        assert same(_text(doc))[0] != "ok"


_HOSTILE_TEXT = [
    b"",
    b"   ",
    b"[]",
    b'"a string"',
    b"{}",
    b"\xef\xbb\xbf{}",
    b'{"memories": [1, 2,]}',
    b'{"memories": [{"a": 1} {"b": 2}]}',
    b'{"memories": [{"a": NaN}]}',
    b'{"memories": [{"a": 1e999}]}',
    b'{"memories": [{"a": 123456789012345678901234567890}]}',
    b'{"memories": [{"a": 1, "a": 2}]}',
    b'{"memories": [{"a": "\\ud800"}], "x": 1, "x": 2}',
    b'{"memories": [{"a": "\\ud800"}, {"b": 1, "b": 2}]}',
    b'{"memories": [{"a": "\\ud800"}, {"b": 1, ]}',
    b'{"x": 1, "x": 2, "memories": []}',
    b'{"memories": [], "memories": []}',
    b'{"memories": []} extra',
    b'{"memories": [{"a": "\xff"}]}',
    b'{"memories": [{"a": "\xe2\x82"}]}',
    b'{"memories": [' + b"[" * 5000 + b"]" * 5000 + b"]}",
    b'{"memories": [' + b"[" * 70 + b"]" * 70 + b"]}",
    b'{"memories": ["' + b"x" * (1 << 20 | 1) + b'"]}',
    b'{"memories": [{"a": "unterminated}]}',
    b'{"memories": [{"a": tru}]}',
    b'{"memories" [] }',
    b'{"memories": [], }',
    b'{"memories": [] "x": 1}',
    b'{"memories": [{"a": 1}',
]


@pytest.mark.req("engram.pam.streaming")
@pytest.mark.parametrize("data", _HOSTILE_TEXT, ids=[str(i) for i in range(len(_HOSTILE_TEXT))])
def test_hostile_text_is_refused_with_the_same_words(data: bytes) -> None:
    assert same(data)[0] != "ok"


# --- generated documents --------------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _put(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return doc


_TEXT_EDITS = st.sampled_from(
    ["", "NaN", "1e999", "99999999999999999", '"\\udc00"', ",", "}", "]", "[", '"', "\\", "\xff"]
)


@pytest.mark.req("engram.pam.streaming")
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_generated_documents_are_judged_the_same(data: st.DataObject, tmp_path: Path) -> None:
    doc = _base(data.draw(st.sampled_from(["sdk", "engram"])), tmp_path)
    for _ in range(data.draw(st.integers(0, 2))):
        path = data.draw(st.sampled_from(_paths(doc)))
        doc = _put(doc, path, data.draw(_VALUES))
    text = _text(doc, data.draw(st.sampled_from([None, 2])))
    if data.draw(st.booleans()):  # a fault in the text itself
        at = data.draw(st.integers(0, len(text)))
        edit = data.draw(_TEXT_EDITS).encode("utf-8", "surrogateescape")
        if edit == "\xff".encode():
            edit = b"\xff"
        cut = data.draw(st.integers(0, 3))
        text = text[:at] + edit + text[at + cut :]
    same(text)


@pytest.mark.req("engram.pam.streaming")
@pytest.mark.parametrize("flavour", ["sdk", "engram"])
def test_a_value_without_canonical_bytes_is_refused_at_its_memory_by_both_readers(
    flavour: str, tmp_path: Path
) -> None:
    # Found by the generated test: a float that RFC 8785 would write as an integer above 2^53-1
    # parses, then has no canonical bytes; both readers name the memory by its document index.
    doc = _put(_base(flavour, tmp_path), ("memories", 0, "metadata", "source_app"), 2.0**53)
    name, message = same(_text(doc, None))
    assert name == "CanonicalJsonError"
    assert "integer_out_of_range at $.memories[0].metadata.source_app" in str(message)


@pytest.mark.req("engram.pam.streaming")
def test_the_streamed_export_writes_what_export_pam_writes(tmp_path: Path) -> None:
    engine = engine_on(open_store("memory://"), FixedClock())
    assert _written(engine)["memories"] == []  # an empty store
    import_pam(engine, save_sdk_document(tmp_path / "sdk.json"))  # relations, conversations
    for i in range(5):
        record(engine, f"decision {i}: deploys wait for the canary ({i})", kind="decision")
    key = PrivateKey.generate()
    written = _written(engine, key)
    whole = loose(export_pam(engine, sign_key=key).document)
    for member in ("export_id", "signature"):
        written.pop(member)
        whole.pop(member)
    assert written == whole
    assert len(written["memories"]) == 10


def _written(engine: Any, key: PrivateKey | None = None) -> dict[str, Any]:
    out = io.StringIO()
    result = export_pam_file(engine, out, sign_key=key)
    text = out.getvalue()
    document = json.loads(text)
    assert text == dumps_text(document, indent=2) + "\n"  # what the command always wrote
    assert result.memories == len(document["memories"])
    assert result.to_wire()["checksum"] == document["integrity"]["checksum"]
    if key is not None:
        assert reference_verify(document)  # the spec's Appendix D, over what was written
    return document  # type: ignore[no-any-return]


_TRICKY: st.SearchStrategy[Any] = st.sampled_from(
    [True, False, 0, 1, 1.0, 0.5, 2, -1, None, "", "custom", "active", "x", "A", [], {}, ["a", "a"]]
)


@pytest.mark.req("engram.pam.streaming")
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_the_compiled_memory_check_says_yes_only_where_jsonschema_does(
    data: st.DataObject, tmp_path: Path
) -> None:
    fast = fast_memory_check()
    assert fast is not None  # the PAM 1.0 schema compiles
    doc = _base(data.draw(st.sampled_from(["sdk", "engram"])), tmp_path)
    memory = data.draw(st.sampled_from(doc["memories"]))
    for _ in range(data.draw(st.integers(0, 3))):
        path = data.draw(st.sampled_from(_paths(memory)))
        if path and data.draw(st.booleans()) and isinstance(path[-1], str):
            parent = memory
            for part in path[:-1]:
                parent = parent[part]
            parent.pop(path[-1], None)  # a member taken away
            continue
        # A copy: sampled_from hands out the same list or dict every time, so putting one in
        # twice and then a member into it made a cycle (a RecursionError in the schema check),
        # and a change to it leaked into later examples.
        memory = _put(memory, path, copy.deepcopy(data.draw(st.one_of(_TRICKY, _VALUES))))
    valid = memory_schema_valid(memory)
    assert not fast(memory) or valid  # a yes is always jsonschema's yes


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


@pytest.mark.req("engram.pam.streaming")
@pytest.mark.parametrize("spelling", ["as written", "without nulls", "normal form"])
@pytest.mark.parametrize("order", ["by id", "reversed"])
def test_every_checksum_spelling_is_read_the_same(
    spelling: str, order: str, tmp_path: Path
) -> None:
    doc = _base("engram", tmp_path)
    normal = reference_checksum(doc["memories"])  # engram writes the normal form
    for memory in doc["memories"]:
        memory["summary"] = None  # null and absent mean the same in PAM
        if memory.get("tags") == []:
            del memory["tags"]  # a default the normal form writes out
    if order == "reversed":
        doc["memories"].reverse()
    if spelling == "as written":
        doc["integrity"]["checksum"] = reference_checksum(doc["memories"])
    elif spelling == "without nulls":
        doc["integrity"]["checksum"] = reference_checksum(_without_nulls(doc["memories"]))
    else:
        doc["integrity"]["checksum"] = normal
    assert same(_text(doc))[0] == "ok"
    doc["integrity"]["checksum"] = "sha256:" + "0" * 64
    assert same(_text(doc))[0] == "DigestMismatch"


@pytest.mark.req("engram.pam.streaming")
def test_a_streamed_export_of_several_write_batches_is_the_whole_export() -> None:
    engine = engine_on(open_store("memory://"), FixedClock())
    items = [
        RecordInput(f"memory {i}: the queue drains in order ({i})", "fact") for i in range(2_500)
    ]
    record_many(engine, items)
    written = _written(engine)
    whole = loose(export_pam(engine).document)
    written.pop("export_id")
    whole.pop("export_id")
    assert written == whole
    assert _streamed(_text(written)) == _whole(_text(written))  # and it reads back the same
