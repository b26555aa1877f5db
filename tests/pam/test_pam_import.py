"""Documents other systems write with the PAM SDK import into engram and come back out without
loss; engram's own documents move engram memories between stores; retractions are kept, never
deleted, and stop being recalled; nothing tampered gets in (docs/spec/pam.md "Import").
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import base58
import portable_ai_memory as pam
import pytest
import rfc8785
from pam_kit import (
    OWNER,
    engine_on,
    loose,
    save_sdk_document,
    sdk_check,
    sdk_document,
    without_engram,
)

from engram.core.canonical import parse_strict
from engram.core.clock import FixedClock
from engram.core.keys import PrivateKey
from engram.errors import (
    ConflictError,
    DigestMismatch,
    EngramError,
    InvalidRequest,
    SignatureInvalid,
    UnsupportedVersion,
)
from engram.memory import MemoryEngine, export_memories, outcome, recall, record
from engram.store import Store, open_store
from engram.transfer import export_pam, import_pam, signature_block, signature_payload


def sdk_dump(store: pam.MemoryStore) -> dict[str, dict[str, Any]]:
    return {
        m.id: m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in store.memories
    }


@pytest.mark.req("engram.pam.import-round-trip")
def test_an_sdk_document_round_trips_without_loss(any_store: Store, tmp_path: Path) -> None:
    written = save_sdk_document(tmp_path / "memory-store.json")  # by the SDK's own writer
    engine = engine_on(any_store)
    result = import_pam(engine, parse_strict((tmp_path / "memory-store.json").read_bytes()))
    assert (result.inserted, result.updated, result.unchanged) == (5, 0, 0)
    assert (result.owner_id, result.signature) == (OWNER, "unsigned")
    assert result.withdrawn == 1  # the superseded memory is kept, not recalled
    again = export_pam(engine)
    back = sdk_check(loose(again.document))  # valid to the SDK the other way too
    original = sdk_document()
    ours = {m["id"]: without_engram(m) for m in loose(again.document)["memories"]}
    assert ours == sdk_dump(original)  # every member of every memory, as the SDK wrote it
    assert {m.id for m in back.memories} == {m.id for m in original.memories}
    assert loose(again.document)["owner"] == written["owner"]
    assert loose(again.document)["relations"] == written["relations"]
    [conversation] = loose(again.document)["conversations_index"]
    assert conversation == written["conversations_index"][0]
    # engram says where it keeps each memory, in the one open block (§10).
    kinds = {m["id"]: m["metadata"]["engram"]["kind"] for m in loose(again.document)["memories"]}
    assert kinds["mem-003-custom"] == "security_clearance"
    assert kinds["mem-002-pref"] == "preference"
    # Importing the same document again changes nothing.
    repeat = import_pam(engine, written)
    assert (repeat.inserted, repeat.updated, repeat.unchanged, repeat.repeated) == (0, 0, 5, True)


@pytest.mark.req("engram.pam.import-round-trip")
def test_imported_memories_are_recalled_and_superseded_ones_are_not(
    memory_store: Store, tmp_path: Path
) -> None:
    engine = engine_on(memory_store)
    import_pam(engine, save_sdk_document(tmp_path / "m.json"), ring="M3")
    texts = [h.memory.text for h in recall(engine, "where does the user live", k=5).hits]
    assert "Lives in Porto since 2025." in texts
    assert "Lives in Lisbon." not in texts  # superseded: kept in the store, never served
    ring = [r.memory.text for r in export_memories(memory_store, "team:shared")]
    assert "Lives in Lisbon." in ring  # never physically deleted


@pytest.mark.req("engram.pam.engram-round-trip")
def test_engram_memories_travel_between_stores_through_pam(any_store: Store) -> None:
    clock = FixedClock()
    source = engine_on(any_store, clock)
    kept = record(source, "Run migrations before deploy", "procedure", "M4", thread="ops").memory
    outcome(source, kept.id, "tests_pass", decision_id="ci-9")
    document = loose(export_pam(source, sign_key=PrivateKey.generate()).document)
    target = engine_on(_fresh_store(), clock)
    result = import_pam(target, json.loads(json.dumps(document)), ring="M4")  # noqa: TID251
    assert (result.inserted, result.signature) == (1, "verified")
    [moved] = export_memories(target.store, target.spec.seat.seat_id)
    assert (moved.memory.text, moved.memory.kind, moved.memory.thread) == (
        "Run migrations before deploy",
        "procedure",
        "ops",
    )
    assert (moved.memory.alpha, moved.memory.beta) == (2.0, 1.0)  # rebuilt from the event
    assert [e["decision_id"] for e in moved.events] == ["ci-9"]
    assert moved.memory.id == kept.id  # same ring id, kind and text: the same content address
    out = loose(export_pam(target).document)
    assert [m["id"] for m in out["memories"]] == [kept.id]


def _fresh_store() -> Store:
    return open_store("memory://")


def delta(base: dict[str, Any], changes: list[dict[str, Any]], export_id: str) -> dict[str, Any]:
    """An incremental document on ``base`` carrying ``changes`` (checksummed like the SDK)."""
    out = {
        k: v for k, v in base.items() if k not in ("memories", "integrity", "conversations_index")
    }
    out.update(
        memories=changes,
        export_id=export_id,
        export_type="incremental",
        base_export_id=base["export_id"],
        since=base["export_date"],
        relations=[],
        integrity={"checksum": pam.compute_integrity_checksum(changes), "total_memories": 1},
    )
    return out


@pytest.mark.req("engram.pam.retraction-kept", "engram.memory.withdrawn-not-recalled")
def test_a_retraction_is_kept_withdrawn_and_can_be_undone(any_store: Store, tmp_path: Path) -> None:
    engine = engine_on(any_store)
    base = save_sdk_document(tmp_path / "base.json")
    import_pam(engine, base)
    memory = next(m for m in base["memories"] if m["id"] == "mem-002-pref")
    assert _recalled(engine, "concise answers code examples")
    retracted = dict(memory, status="retracted")
    result = import_pam(engine, delta(base, [retracted], "delta-1"))
    assert (result.updated, result.withdrawn) == (1, 1)
    assert not _recalled(engine, "concise answers code examples")
    out = loose(export_pam(engine).document)
    assert len(out["memories"]) == 5  # nothing was deleted
    assert next(m for m in out["memories"] if m["id"] == "mem-002-pref")["status"] == "retracted"
    sdk_check(out)
    undone = import_pam(engine, delta(base, [dict(memory, status="active")], "delta-2"))
    assert undone.reinstated == 1
    assert _recalled(engine, "concise answers code examples")


def _recalled(engine: MemoryEngine, query: str) -> bool:
    texts = [h.memory.text for h in recall(engine, query, k=10).hits]
    return "Prefers concise answers with code examples." in texts


@pytest.mark.req("engram.pam.incremental")
def test_a_changed_content_replaces_the_served_memory(memory_store: Store, tmp_path: Path) -> None:
    engine = engine_on(memory_store)
    base = save_sdk_document(tmp_path / "base.json")
    import_pam(engine, base)
    memory = next(m for m in base["memories"] if m["id"] == "mem-002-pref")
    content = "Prefers long answers with diagrams."
    changed = dict(memory, content=content, content_hash=pam.compute_content_hash(content))
    result = import_pam(engine, delta(base, [changed], "delta-1"))
    assert (result.updated, result.withdrawn) == (1, 1)
    texts = [h.memory.text for h in recall(engine, "answers", k=10).hits]
    assert content in texts
    assert "Prefers concise answers with code examples." not in texts
    assert len(loose(export_pam(engine).document)["memories"]) == 5  # one PAM id, its new content


@pytest.mark.req("engram.pam.incremental")
def test_a_delta_needs_a_base_this_store_knows(memory_store: Store, tmp_path: Path) -> None:
    engine = engine_on(memory_store)
    base = save_sdk_document(tmp_path / "base.json")
    memory = next(m for m in base["memories"] if m["id"] == "mem-002-pref")
    orphan = delta(base, [dict(memory, status="deprecated")], "delta-1")
    with pytest.raises(ConflictError, match="base_export_id"):
        import_pam(engine, orphan)
    assert export_pam(engine).memories == 0  # nothing was imported
    assert import_pam(engine, orphan, any_base=True).inserted == 1


def signed(document: dict[str, Any], key: PrivateKey) -> dict[str, Any]:
    out = copy.deepcopy(document)
    out.pop("signature", None)
    out["signature"] = signature_block(out, key, FixedClock().now() + timedelta(days=3650))
    return out


def _tampered() -> list[tuple[str, Any, type[EngramError]]]:
    def edit_content(d: dict[str, Any]) -> None:
        d["memories"][0]["content"] = "User speaks only Klingon."

    def edit_hash_too(d: dict[str, Any]) -> None:
        edit_content(d)
        d["memories"][0]["content_hash"] = pam.compute_content_hash("User speaks only Klingon.")

    def edit_count(d: dict[str, Any]) -> None:
        d["integrity"]["total_memories"] = 4

    def extra_member(d: dict[str, Any]) -> None:
        d["memories"][0]["priority"] = "high"

    def dangling(d: dict[str, Any]) -> None:
        d["relations"][0]["to"] = "mem-999"

    def future_major(d: dict[str, Any]) -> None:
        d["schema_version"] = "2.0"

    def bad_instant(d: dict[str, Any]) -> None:
        d["memories"][1]["temporal"]["created_at"] = "yesterday"

    return [
        ("content changed", edit_content, DigestMismatch),
        ("content and hash changed", edit_hash_too, DigestMismatch),
        ("count changed", edit_count, DigestMismatch),
        ("a member PAM 1.0 does not define", extra_member, InvalidRequest),
        ("a relation to nothing", dangling, InvalidRequest),
        ("schema 2.0", future_major, UnsupportedVersion),
        ("not an instant", bad_instant, InvalidRequest),
    ]


@pytest.mark.req("engram.pam.refuse-tampered")
@pytest.mark.parametrize(("what", "edit", "error"), _tampered(), ids=[t[0] for t in _tampered()])
def test_a_tampered_document_is_refused_and_nothing_is_written(
    any_store: Store, tmp_path: Path, what: str, edit: Any, error: type[EngramError]
) -> None:
    document = save_sdk_document(tmp_path / "m.json")
    edit(document)
    engine = engine_on(any_store)
    with pytest.raises(error):
        import_pam(engine, document)
    assert export_pam(engine).memories == 0


@pytest.mark.req("engram.pam.signature")
def test_signatures_are_checked_when_present_and_required_when_asked(
    memory_store: Store, tmp_path: Path
) -> None:
    key, other = PrivateKey.generate(), PrivateKey.generate()
    good = signed(save_sdk_document(tmp_path / "m.json"), key)
    engine = engine_on(memory_store)
    forged = copy.deepcopy(good)
    forged["owner"]["id"] = "mallory"  # covered by the signature payload (§18.3)
    cases: list[tuple[dict[str, Any], Any]] = [(forged, ())]
    wrong_algorithm = copy.deepcopy(good)
    wrong_algorithm["signature"]["algorithm"] = "ES256"
    cases.append((wrong_algorithm, ()))
    early = copy.deepcopy(good)
    early["signature"]["signed_at"] = "2026-02-15T21:59:59Z"  # before export_date
    cases.append((signed_at_before(early, key), ()))
    cases.append((good, [other.public_key()]))  # signed, but not by a trusted key
    unsigned = {k: v for k, v in good.items() if k != "signature"}
    cases.append((unsigned, [key.public_key()]))  # a trusted key was required
    for document, trusted in cases:
        with pytest.raises(SignatureInvalid):
            import_pam(engine, document, trusted_keys=trusted)
    assert export_pam(engine).memories == 0
    accepted = import_pam(engine, good, trusted_keys=[key.public_key()])
    assert (accepted.signature, accepted.inserted) == ("verified", 5)
    assert import_pam(_engine(), unsigned).signature == "unsigned"  # never refused for that


def signed_at_before(document: dict[str, Any], key: PrivateKey) -> dict[str, Any]:
    """A document whose signature is genuine but dated before its export_date."""
    out = copy.deepcopy(document)
    out["signature"]["value"] = base64.urlsafe_b64encode(key.sign(signature_payload(out))).decode()
    return out


def _engine() -> MemoryEngine:
    return engine_on(_fresh_store())


@pytest.mark.req("engram.pam.liberal-reader")
def test_spec_style_documents_with_nulls_and_other_spellings_import(memory_store: Store) -> None:
    # As the spec's own examples write them: explicit nulls, a checksum over the JSON as it
    # stands, a bare base58 key and an unpadded signature value.
    memory: dict[str, Any] = {
        "id": "e9c4b5d0-0000-4000-8000-000000000001",
        "type": "instruction",
        "custom_type": None,
        "status": "active",
        "content": "  Address me   as Dr. Example  ",
        "content_hash": pam.compute_content_hash("  Address me   as Dr. Example  "),
        "summary": None,
        "tags": [],
        "confidence": {"initial": 1.0, "current": 1.0, "decay_model": None},
        "temporal": {"created_at": "2026-02-15T12:00:00.123+02:00", "updated_at": None},
        "provenance": {"platform": "local", "platform_user_id": None},
        "embedding_ref": None,
    }
    document: dict[str, Any] = {
        "schema": "portable-ai-memory",
        "schema_version": "1.0",
        "export_id": "x-1",
        "export_date": "2026-02-15T22:00:00Z",
        "owner": {"id": "dr-example", "did": None},
        "memories": [memory],
        "integrity": {"checksum": _raw_checksum([memory]), "total_memories": 1},
    }
    key = PrivateKey.generate()
    raw = key.sign(signature_payload(document))
    document["signature"] = {
        "algorithm": "Ed25519",
        "public_key": base58.b58encode(key.public_key().raw).decode(),
        "value": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "signed_at": "2026-02-15T22:00:01Z",
    }
    engine = engine_on(memory_store)
    assert import_pam(engine, document).signature == "verified"
    out = loose(export_pam(engine).document)
    sdk_check(out)
    [again] = out["memories"]
    assert again["temporal"]["created_at"] == "2026-02-15T12:00:00.123000+02:00"  # SDK spelling
    assert "custom_type" not in again
    assert "embedding_ref" not in again


def _raw_checksum(memories: list[dict[str, Any]]) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(memories)).hexdigest()


@pytest.mark.req("engram.pam.import-round-trip")
def test_another_owners_document_may_not_reuse_a_pam_id(
    memory_store: Store, tmp_path: Path
) -> None:
    engine = engine_on(memory_store)
    base = save_sdk_document(tmp_path / "m.json")
    import_pam(engine, base)
    other = copy.deepcopy(base)
    other["owner"] = {"id": "someone-else"}
    other["export_id"] = "another-export"
    other["memories"] = [m for m in other["memories"] if m["id"] == "mem-002-pref"]
    other["memories"][0]["status"] = "retracted"
    other["relations"], other["conversations_index"] = [], []
    other["integrity"] = {
        "checksum": pam.compute_integrity_checksum(other["memories"]),
        "total_memories": 1,
    }
    with pytest.raises(ConflictError, match="owner"):
        import_pam(engine, other)
    assert _recalled(engine, "concise answers code examples")  # nothing changed


# The placeholder the spec's examples/example-memory-store.json carries as its signature value
# (portable-ai-memory/portable-ai-memory, examples/, LICENSE-SPEC): base64url characters that
# decode to no Ed25519 signature.
SPEC_PLACEHOLDER = "eyJhbGciOiJFZERTQSJ9_EXAMPLE_SIGNATURE_Rk9SIERFTU9OU1RSQVRJT04gT05MWQ"


@pytest.mark.req("engram.pam.signature")
@pytest.mark.parametrize("value", [SPEC_PLACEHOLDER, "not a signature!", "AAAA"])
def test_a_placeholder_signature_says_how_to_import_unsigned(
    memory_store: Store, value: str
) -> None:
    source = engine_on(_fresh_store())
    record(source, "The allotment key hangs by the back door", "fact")
    document = loose(export_pam(source, sign_key=PrivateKey.generate()).document)
    document["signature"]["value"] = value
    engine = engine_on(memory_store)
    with pytest.raises(SignatureInvalid, match='remove the document\'s "signature" member'):
        import_pam(engine, document)
    assert recall(engine, "allotment key", 3).hits == ()
    del document["signature"]
    assert import_pam(engine, document).signature == "unsigned"
    assert recall(engine, "allotment key", 3).hits != ()


@pytest.mark.req("engram.pam.type-registry")
def test_the_type_registry_of_an_imported_document_is_exported_again(
    memory_store: Store,
) -> None:
    source = engine_on(_fresh_store())
    record(source, "Prefers tea to coffee", "fact")
    document = loose(export_pam(source).document)
    assert "type_registry" not in document  # engram names none of its own
    document["type_registry"] = "https://portable-ai-memory.org/types/"
    engine = engine_on(memory_store)
    import_pam(engine, document)
    again = loose(export_pam(engine).document)
    assert again["type_registry"] == "https://portable-ai-memory.org/types/"
    sdk_check(again)
