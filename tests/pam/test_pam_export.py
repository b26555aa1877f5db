"""What engram writes as Portable AI Memory 1.0 is what the PAM SDK reads as valid, and what the
spec's reference algorithms verify (docs/spec/pam.md "Export").

Every check is the other side's: the SDK's model loading, deep validation and checksum, its
bundled schema, and Appendix C/D of the spec written in pam_kit without engram's code.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import portable_ai_memory as pam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pam_kit import (
    engine_on,
    loose,
    multikey_public_bytes,
    reference_checksum,
    reference_verify,
    repository_base64url,
    sdk_check,
)

from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.core.keys import PrivateKey
from engram.errors import InvalidRequest, NotFound
from engram.memory import MemoryEngine, outcome, record
from engram.store import Store
from engram.transfer import export_pam, import_pam
from engram.transfer.internals import (
    format_instant,
    normal_instant,
    normal_memory,
    written_instant,
)


def seat_with_memories(store: Store, clock: FixedClock) -> MemoryEngine:
    engine = engine_on(store, clock)
    record(engine, "Run the migrations before every deploy (ADR-0007)", "procedure", "M4")
    record(engine, "The build caches live in ~/.cache/acme", "fact", "M3", thread="onboarding")
    record(engine, "Rollbacks take 4 minutes", "fact", "M2", thread="onboarding")
    clock.advance(timedelta(seconds=30))
    deploy = record(engine, "Never deploy on Friday", "decision", "M4").memory
    outcome(engine, deploy.id, "tests_pass", decision_id="ci-1")
    outcome(engine, deploy.id, "model_reject", decision_id="judge-1")
    return engine


@pytest.mark.req("engram.pam.export-valid")
def test_an_engram_export_is_valid_to_the_pam_sdk(any_store: Store) -> None:
    clock = FixedClock()
    engine = seat_with_memories(any_store, clock)
    result = export_pam(engine)
    document = loose(result.document)
    store = sdk_check(document)
    assert len(store.memories) == result.memories == 4
    assert document["integrity"]["checksum"] == reference_checksum(document["memories"])
    assert document["export_type"] == "full"
    assert document["exported_by"] == "engram/0.1.0"
    by_text = {m["content"]: m for m in document["memories"]}
    decision = by_text["Never deploy on Friday"]
    assert (decision["type"], decision["custom_type"]) == ("custom", "decision")
    assert by_text["Rollbacks take 4 minutes"]["type"] == "fact"
    assert "custom_type" not in by_text["Rollbacks take 4 minutes"]
    # The posterior: Beta(1 + 1, 1 + 0.3) after a structural pass and a model rejection.
    assert decision["confidence"]["current"] == pytest.approx(2.0 / 3.3)
    engram_part = decision["metadata"]["engram"]
    assert (engram_part["alpha"], engram_part["beta"]) == (2.0, pytest.approx(1.3))
    assert [e["decision_id"] for e in engram_part["events"]] == ["ci-1", "judge-1"]
    assert by_text["Run the migrations before every deploy (ADR-0007)"]["tags"] == ["adr-0007"]
    # Threads are conversations, each listed with exactly the memories that name it (§14.1).
    [conversation] = document["conversations_index"]
    onboarding = sorted(
        m["id"] for m in document["memories"] if m["provenance"].get("conversation_ref")
    )
    assert conversation["id"] == "onboarding"
    assert sorted(conversation["derived_memories"]) == onboarding


@pytest.mark.req("engram.pam.signature")
def test_a_signed_export_verifies_by_the_specs_reference_algorithm(memory_store: Store) -> None:
    key = PrivateKey.generate()
    document = loose(
        export_pam(seat_with_memories(memory_store, FixedClock()), sign_key=key).document
    )
    sdk_check(document)
    block = document["signature"]
    assert block["algorithm"] == "Ed25519"
    assert multikey_public_bytes(block["public_key"]) == key.public_key().raw
    assert block["key_id"] == f"did:key:{block['public_key']}#{block['public_key']}"
    assert block["signed_at"] >= document["export_date"]
    assert repository_base64url(block["value"])  # unpadded, as the spec repository validates
    assert reference_verify(document)
    for member, value in [
        ("export_id", "another-export"),
        ("export_date", "2030-01-01T00:00:00Z"),
        ("owner", {"id": "someone-else"}),
    ]:
        forged = copy.deepcopy(document)
        forged[member] = value
        assert not reference_verify(forged), member
    forged = copy.deepcopy(document)
    forged["memories"][0]["content"] += " (edited)"
    forged["integrity"]["checksum"] = reference_checksum(forged["memories"])
    assert not reference_verify(forged)


@pytest.mark.req("engram.pam.exportable")
def test_memories_marked_not_exportable_are_never_exported(memory_store: Store) -> None:
    engine = engine_on(memory_store)
    document: dict[str, Any] = {
        "schema": "portable-ai-memory",
        "schema_version": "1.0",
        "owner": {"id": "ada"},
        "memories": [
            {
                "id": f"m-{name}",
                "type": "fact",
                "content": f"{name} fact",
                "content_hash": _hash(f"{name} fact"),
                "temporal": {"created_at": "2026-01-01T00:00:00Z"},
                "provenance": {"platform": "manual"},
                "access": {"exportable": name == "public"},
            }
            for name in ("public", "private")
        ],
    }
    import_pam(engine, document)
    result = export_pam(engine)
    assert [m["id"] for m in loose(result.document)["memories"]] == ["m-public"]
    assert result.withheld == 1
    sdk_check(loose(result.document))


def _hash(text: str) -> str:
    return pam.compute_content_hash(text)


@pytest.mark.req("engram.pam.incremental")
def test_an_incremental_export_carries_what_changed_since_its_base(any_store: Store) -> None:
    clock = FixedClock()
    engine = seat_with_memories(any_store, clock)
    full = export_pam(engine)
    clock.advance(timedelta(hours=1))
    fresh = record(engine, "Staging mirrors production nightly", "fact", "M3").memory
    old = next(
        m for m in loose(full.document)["memories"] if m["content"] == "Rollbacks take 4 minutes"
    )
    outcome(engine, old["id"], "tests_fail", decision_id="ci-2")
    delta = export_pam(engine, base_export_id=full.export_id)
    document = loose(delta.document)
    sdk_check(document)
    assert document["export_type"] == "incremental"
    assert document["base_export_id"] == full.export_id
    assert document["since"] == loose(full.document)["export_date"]
    assert sorted(m["id"] for m in document["memories"]) == sorted([fresh.id, old["id"]])
    changed = next(m for m in document["memories"] if m["id"] == old["id"])
    assert changed["temporal"]["updated_at"] > changed["temporal"]["created_at"]
    # A base nobody knows is refused; --since alone needs no base.
    with pytest.raises(NotFound):
        export_pam(engine, base_export_id="never-exported")
    since_only = export_pam(engine, since=clock.now() - timedelta(minutes=1))
    assert "base_export_id" not in loose(since_only.document)
    assert since_only.memories == 2


@pytest.mark.req("engram.pam.export-valid", "engram.pam.liberal-reader")
def test_every_memory_engram_exports_is_already_in_its_normal_form(any_store: Store) -> None:
    # The export writes a memory engram recorded as native_object builds it, without passing
    # it through normal_memory: that is sound only while the two are the same text.
    engine = seat_with_memories(any_store, FixedClock())
    document = loose(export_pam(engine).document)
    assert len(document["memories"]) == 4
    for memory in document["memories"]:
        assert dumps_text(normal_memory(memory)) == dumps_text(memory)


_FIELD = st.integers(min_value=0, max_value=99).map(lambda n: f"{n:02d}")


@pytest.mark.req("engram.pam.liberal-reader")
@given(
    st.integers(min_value=0, max_value=10_000).map(lambda n: f"{n:04d}"),
    _FIELD,
    _FIELD,
    st.tuples(_FIELD, _FIELD, _FIELD).map(":".join),
    st.sampled_from(["", ".000000", ".1", ".1234567", ".000100"])
    | st.integers(min_value=0, max_value=999_999).map(lambda n: f".{n:06d}"),
    st.sampled_from(["Z", "z", "+00:00", "-00:00"])
    | st.tuples(st.sampled_from("+-"), _FIELD, _FIELD).map(lambda t: f"{t[0]}{t[1]}:{t[2]}"),
    st.sampled_from("Tt"),
)
@settings(max_examples=2_000, deadline=None)
def test_an_instant_already_in_the_normal_form_is_kept_as_it_is_written(
    year: str, month: str, day: str, clock: str, fraction: str, offset: str, sep: str
) -> None:
    # normal_instant returns a text that matches the normal spelling as it is, without writing
    # it again: the same text, or the same refusal, as parsing it and writing it.
    text = f"{year}-{month}-{day}{sep}{clock}{fraction}{offset}"
    assert _outcome(normal_instant, text) == _outcome(written_instant, text)


def _outcome(spell: Callable[[str], str], text: str) -> str:
    try:
        return spell(text)
    except InvalidRequest as e:
        return f"refused: {e}"


def _spelt_the_long_way(moment: datetime) -> str:
    # format_instant as it was written before it had a shortcut through isoformat
    offset = moment.utcoffset()
    base = moment.replace(tzinfo=None).isoformat(timespec="seconds")
    if moment.microsecond:
        base += f".{moment.microsecond:06d}"
    if offset is None:
        return base
    if offset == timedelta(0):
        return base + "Z"
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{base}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


_OFFSETS = st.integers(min_value=-86_399, max_value=86_399).map(
    lambda s: timezone(timedelta(seconds=s))
) | st.integers(min_value=-1439, max_value=1439).map(lambda m: timezone(timedelta(minutes=m)))


@pytest.mark.req("engram.pam.liberal-reader")
@given(st.datetimes(timezones=st.none() | st.just(UTC) | _OFFSETS))
@settings(max_examples=2_000, deadline=None)
def test_an_instant_is_spelt_as_the_pam_sdk_spells_it(moment: datetime) -> None:
    assert format_instant(moment) == _spelt_the_long_way(moment)
    assert format_instant(moment.replace(microsecond=0)) == _spelt_the_long_way(
        moment.replace(microsecond=0)
    )
