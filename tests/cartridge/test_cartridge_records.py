"""Memory records: tiers, the scrub gate, export partition and the two-key idempotent merge."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from acx_kit import RECORDS, build, check, execute

from engram.cartridge import (
    Cartridge,
    ScrubBlocked,
    TrustState,
    artifact_fingerprint,
    load_rom,
    merge_records,
    plan_import,
    prepare_for_export,
    scan,
    seal,
    validate_record,
)
from engram.core.keys import PrivateKey
from engram.errors import CartridgeFormatError


def _exported() -> list[dict[str, Any]]:
    return [prepare_for_export(r) for r in RECORDS]


@pytest.mark.req("engram.cartridge.memory-partition")
def test_every_record_carries_portable_and_codebase_fingerprint(signed: Path) -> None:
    with Cartridge.open(signed) as cartridge:
        records = load_rom(cartridge).records
    assert len(records) == 3
    for record in records:
        assert "portable" in record
        assert "codebaseFingerprint" in record
        assert record["zone"] == "rom"
        assert record["artifactFingerprint"] == artifact_fingerprint(record["kind"], record["text"])


@pytest.mark.req("engram.cartridge.memory-partition")
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tier": "canon"}, "tier 'canon' is not one of"),
        ({"portable": False}, "malformed tier"),
        ({"codebaseFingerprint": "0123456789abcdef"}, "malformed tier"),
        ({"portable": "yes"}, "booleans"),
        ({"artifactFingerprint": "0000000000"}, "does not match its content"),
        ({"artifactFingerprint": "abc"}, "exactly 10 hex"),
        ({"zone": "save"}, "zone"),
        ({"extra": 1}, "unknown field"),
    ],
)
def test_malformed_transferable_records_are_rejected(change: dict[str, Any], message: str) -> None:
    record = {**_exported()[0], **change}
    with pytest.raises(CartridgeFormatError, match=message):
        validate_record(record)


@pytest.mark.req("engram.cartridge.memory-partition")
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"portable": True}, "malformed tier"),
        ({"codebaseFingerprint": None}, "malformed tier"),
        ({"codebaseFingerprint": "XYZ"}, "malformed tier"),
        ({"quarantined": False}, "must be quarantined"),
    ],
)
def test_malformed_field_learned_records_are_rejected(change: dict[str, Any], message: str) -> None:
    record = {**_exported()[1], **change}
    with pytest.raises(CartridgeFormatError, match=message):
        validate_record(record)


@pytest.mark.req("engram.cartridge.memory-partition")
def test_a_malformed_record_in_rom_refuses_the_cartridge(tmp_path: Path, key: PrivateKey) -> None:
    path = build(tmp_path / "c.acx", key=key)
    line = b'{"id":"x","tier":"both"}\n'
    execute(
        path,
        "UPDATE sqlar SET sz = ?, data = ? WHERE name = 'rom/memory/records.jsonl'",
        (len(line), line),
    )
    with (
        Cartridge.open(path) as cartridge,
        pytest.raises(CartridgeFormatError, match="memory record"),
    ):
        load_rom(cartridge)


@pytest.mark.req("engram.cartridge.export-partition")
def test_export_strips_identity_and_quarantines_field_learned() -> None:
    transferable, field_learned, _ = _exported()
    assert "identity" not in transferable
    assert transferable["portable"] is True
    assert transferable["quarantined"] is False
    assert field_learned["quarantined"] is True
    assert field_learned["portable"] is False
    assert field_learned["codebaseFingerprint"] == "0123456789abcdef"


@pytest.mark.req("engram.cartridge.export-partition")
def test_a_transferable_record_with_identity_is_refused_in_a_cartridge() -> None:
    record = {**_exported()[0], "identity": {"seatId": "seat:x"}}
    with pytest.raises(CartridgeFormatError, match="carries no identity"):
        validate_record(record)


@pytest.mark.req("engram.cartridge.export-partition")
def test_foreign_field_learned_memory_is_never_reprojected(signed: Path) -> None:
    with Cartridge.open(signed) as cartridge:
        foreign = plan_import(
            cartridge, existing=[], codebase_fingerprint="f" * 16, accept={TrustState.PORTABLE}
        )
        unknown = plan_import(cartridge, existing=[], accept={TrustState.PORTABLE})
        home = plan_import(
            cartridge,
            existing=[],
            codebase_fingerprint="0123456789abcdef",
            accept={TrustState.PORTABLE},
        )
    assert foreign.quarantined == unknown.quarantined == ("mem-002",)
    assert [r["id"] for r in foreign.records] == ["mem-001", "mem-003"]
    assert home.quarantined == ()
    assert [r["id"] for r in home.records] == ["mem-001", "mem-002", "mem-003"]


@pytest.mark.req("engram.cartridge.merge-idempotent")
def test_merge_is_idempotent() -> None:
    incoming = _exported()
    first = merge_records([], incoming)
    assert [r["id"] for r in first.added] == ["mem-001", "mem-002", "mem-003"]
    second = merge_records(first.added, incoming)
    assert second.added == []
    assert second.duplicate_id == ["mem-001", "mem-002", "mem-003"]


@pytest.mark.req("engram.cartridge.merge-idempotent")
def test_merge_dedupes_by_artifact_fingerprint_across_different_ids() -> None:
    original = _exported()[0]
    twin = prepare_for_export(
        {**RECORDS[0], "id": "another-id", "text": "  Never force-push\nthe main branch. "}
    )
    assert twin["artifactFingerprint"] == original["artifactFingerprint"]
    result = merge_records([original], [twin])
    assert result.added == []
    assert result.duplicate_fingerprint == ["another-id"]
    within = merge_records([], [original, twin])
    assert [r["id"] for r in within.added] == ["mem-001"]


@pytest.mark.req("engram.cartridge.merge-idempotent")
def test_artifact_fingerprint_is_exactly_10_hex() -> None:
    fingerprint = artifact_fingerprint("invariant", "text")
    assert len(fingerprint) == 10
    assert int(fingerprint, 16) >= 0
    assert fingerprint != artifact_fingerprint("decision", "text")


SECRETS = [
    ("private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n"),
    ("aws-access-key-id", "use AKIAIOSFODNN7EXAMPLE for uploads"),
    ("github-token", "token ghp_" + "a1B2" * 9),
    ("api-key-sk", "OPENAI_KEY=sk-proj-" + "x9" * 15),
    ("slack-token", "xoxb-123456789012-abcdefghij"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"),
    ("secret-assignment", "password = hunter2hunter2"),
    ("url-credentials", "clone https://dana:s3cretpass@git.example.com/repo"),
    ("absolute-home-path", "the config lives in /home/dana/.config/tool"),
    ("absolute-home-path", "see /Users/dana/Library"),
    ("windows-home-path", "see C:\\Users\\dana\\AppData"),
    ("authorization-header", "Authorization: Bearer abcdefghijklmnop12345"),
]


@pytest.mark.req("engram.cartridge.scrub-gate")
@pytest.mark.parametrize(("rule", "text"), SECRETS)
def test_scrub_gate_blocks_the_build(tmp_path: Path, key: PrivateKey, rule: str, text: str) -> None:
    records = copy.deepcopy(RECORDS)
    records[0]["text"] = text
    out = tmp_path / "leaky.acx"
    with pytest.raises(ScrubBlocked, match=rule) as caught:
        build(out, key=key, records=records)
    assert not out.exists()
    assert text.split()[-1] not in caught.value.message  # findings never echo the secret


@pytest.mark.req("engram.cartridge.scrub-gate")
def test_scrub_gate_scans_skill_files_too(tmp_path: Path, skills: Path, key: PrivateKey) -> None:
    (skills / "git-helper" / "scripts" / "deploy.sh").write_text(
        "export TOKEN=ghp_" + "Z" * 36 + "\n"
    )
    with pytest.raises(ScrubBlocked, match=r"scripts/deploy.sh:1: github-token"):
        build(tmp_path / "c.acx", key=key, skills=skills)


@pytest.mark.req("engram.cartridge.scrub-gate")
def test_scrub_gate_blocks_signing_of_a_file_edited_afterwards(
    signed: Path, key: PrivateKey
) -> None:
    before = signed.read_bytes()
    leak = b"#!/bin/sh\ncat /home/dana/.ssh/id_ed25519\n"
    execute(
        signed,
        "UPDATE sqlar SET sz = ?, data = ? WHERE name = 'rom/skills/git-helper/scripts/blame.sh'",
        (len(leak), leak),
    )
    edited = signed.read_bytes()
    with pytest.raises(ScrubBlocked, match="absolute-home-path"):
        seal(signed, key)
    assert signed.read_bytes() == edited != before
    assert check(signed).state is TrustState.TAMPERED


@pytest.mark.req("engram.cartridge.scrub-gate")
def test_placeholders_and_relative_paths_pass() -> None:
    clean = {
        "rom/x.md": b"api_key: <YOUR_KEY>\npassword=${PASSWORD}\nsee ~/.config and ./home/x\n"
        b"token: xxxxxxxxxxxx\n"
    }
    assert scan(clean) == []
