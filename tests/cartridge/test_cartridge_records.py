"""Memory records: tiers, fingerprints, the export boundary, the scrub gate and the two-key merge.

SPEC §7.1-§7.5 and §12 items 8 and 10 (lboel/acx@85f1358). The fingerprint checks recompute
SHA-1 and HMAC-SHA-256 with ``hashlib``/``hmac`` and RFC 8785 with the ``rfc8785`` package.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cartridge_kit import NOW, RECORDS, SALT, Seat, build, fingerprint_members, write_package

from engram.cartridge import (
    Cartridge,
    Contents,
    ExportOptions,
    ScrubBlocked,
    load_rom,
    merge_records,
    package_contents,
    spec_report,
    write,
)
from engram.cartridge.internals import (
    artifact_fingerprint,
    canonical_repo_identity,
    codebase_fingerprint,
    export_record,
    scan,
    validate_record,
)
from engram.cli.internals import seat_engine
from engram.core.keys import PrivateKey
from engram.errors import CartridgeFormatError
from engram.transfer import import_cartridge
from engram.trust import TrustState

CBF = "cbf1_" + "0123456789" * 4


def _transferable() -> dict[str, Any]:
    return export_record(RECORDS[0])


def _field_learned() -> dict[str, Any]:
    return export_record(RECORDS[1], codebase=CBF)


def _independent_fingerprint(record: dict[str, Any]) -> str:
    """§7.3 from the text, hashed over the independent ``rfc8785`` package."""
    return hashlib.sha1(
        rfc8785.dumps(fingerprint_members(record)), usedforsecurity=False
    ).hexdigest()[:10]


@pytest.mark.req("engram.cartridge.memory-partition", "engram.cartridge.export-partition")
def test_every_stored_record_carries_its_tier(tmp_path: Path) -> None:
    package = write_package(tmp_path / "pkg", records=RECORDS)
    path = build(tmp_path / "c.acx", key=None, package=package, include_field_learned=True)
    with Cartridge.open(path) as cartridge:
        rom = load_rom(cartridge)
    assert sorted(rom.memories) == ["mem-001", "mem-002", "mem-003"]
    for row in rom.memories.values():
        record = row.record()
        assert isinstance(record["portable"], bool)
        assert "codebaseFingerprint" in record
        assert record["repoId"] is None  # stripped at the export boundary (§7.4)
        assert record["zone"] == row.zone == ("rom" if record["portable"] else "save")
        assert (record["codebaseFingerprint"] is None) == record["portable"]
        assert record["artifactFingerprint"] == _independent_fingerprint(record)
        assert row.payload.encode() == rfc8785.dumps(record)  # canonical JSON (§3.2)
        assert row.oid == "sha256:" + hashlib.sha256(row.payload.encode()).hexdigest()


@pytest.mark.req("engram.cartridge.memory-partition")
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"portable": False}, "malformed tier"),
        ({"codebaseFingerprint": CBF}, "malformed tier"),
        ({"portable": "yes"}, "portable"),
        ({"artifactFingerprint": "0000000000"}, "not the §7.3 hash"),
        ({"artifactFingerprint": "abc"}, "artifactFingerprint"),
        ({"zone": "save"}, "zone"),
        ({"repoId": "acme/widgets"}, "repoId"),
        ({"extra": 1}, "extra"),
        ({"identity": {"seatId": "seat:x"}}, "identity"),
        ({"impact": "catastrophic"}, "impact"),
    ],
)
def test_malformed_transferable_records_are_rejected(change: dict[str, Any], message: str) -> None:
    with pytest.raises(CartridgeFormatError, match=message):
        validate_record({**_transferable(), **change})


@pytest.mark.req("engram.cartridge.memory-partition")
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"portable": True}, "malformed tier"),
        ({"codebaseFingerprint": None}, "malformed tier"),
        ({"codebaseFingerprint": "XYZ"}, "codebaseFingerprint|malformed tier"),
        ({"codebaseFingerprint": "cbf1_" + "A" * 40}, "codebaseFingerprint|malformed tier"),
        ({"zone": "rom"}, "zone"),
    ],
)
def test_malformed_field_learned_records_are_rejected(change: dict[str, Any], message: str) -> None:
    with pytest.raises(CartridgeFormatError, match=message):
        validate_record({**_field_learned(), **change})


@pytest.mark.req("engram.cartridge.memory-partition", "engram.cartridge.store-round-trip")
@pytest.mark.parametrize(
    "change",
    [
        {"codebaseFingerprint": CBF},  # portable=true with a fingerprint
        {"portable": False, "zone": "rom"},  # field-learned without one
        {"repoId": "acme/widgets"},  # a raw repo id that escaped the export boundary
    ],
)
def test_a_malformed_record_signed_by_a_sloppy_producer_is_refused_at_import(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    """§7.1: malformed tier combinations are rejected at import, signed or not."""
    contents, _ = package_contents(
        write_package(tmp_path / "pkg", records=RECORDS[:1]), ExportOptions("io.github.acme", NOW)
    )
    (first,) = contents.memories  # the package's one record
    contents.memories = [{**first, **change}]
    path = tmp_path / "sloppy.acx"
    write(path, contents, key=PrivateKey.generate(), signed_at=NOW)
    seat = Seat(tmp_path / "seat")
    with seat_engine(seat.ote, seat.url) as engine, pytest.raises(CartridgeFormatError):
        import_cartridge(engine, path, accept={TrustState.PORTABLE})
    assert seat.memories("seat:engram-implementer") == []
    with Cartridge.open(path) as cartridge:
        assert not spec_report(load_rom(cartridge)).clean


@pytest.mark.req("engram.cartridge.memory-partition")
def test_fingerprints_are_tier_independent() -> None:
    """§7.3: portable and codebaseFingerprint are left out, so re-tiering forks no duplicate."""
    transferable = _transferable()
    retiered = {**transferable, "portable": False, "codebaseFingerprint": CBF, "zone": "save"}
    assert artifact_fingerprint(retiered) == artifact_fingerprint(transferable)


@pytest.mark.req("engram.cartridge.memory-partition")
def test_the_codebase_fingerprint_is_an_hmac_that_never_carries_the_repo_name() -> None:
    identity = canonical_repo_identity(
        origin_url="https://dana:s3cret@GitHub.com:443/Acme/Widgets.git"
    )
    assert identity == "github.com/acme/widgets"
    fingerprint = codebase_fingerprint(SALT, identity)
    assert (
        fingerprint == "cbf1_" + hmac.new(SALT, identity.encode(), hashlib.sha256).hexdigest()[:40]
    )
    assert "widgets" not in fingerprint
    assert "acme" not in fingerprint
    assert codebase_fingerprint(b"t" * 32, identity) != fingerprint  # org-scoped, not correlatable
    with pytest.raises(CartridgeFormatError, match="256 bits"):
        codebase_fingerprint(b"short", identity)


@pytest.mark.req("engram.cartridge.memory-partition")
@pytest.mark.parametrize(
    ("origin", "identity"),
    [
        ("git@github.com:acme/widgets.git", "github.com/acme/widgets"),
        ("ssh://git@github.com:22/acme/widgets.git", "github.com/acme/widgets"),
        ("https://gitlab.example.com:8443/Team/App", "gitlab.example.com:8443/team/app"),
        ("https://token@github.com/acme/widgets/", "github.com/acme/widgets"),
        ("http://example.com:80/a/b.git", "example.com/a/b"),
    ],
)
def test_the_canonical_repo_identity(origin: str, identity: str) -> None:
    assert canonical_repo_identity(origin_url=origin) == identity


@pytest.mark.req("engram.cartridge.memory-partition")
def test_without_a_remote_the_root_commit_names_the_repo() -> None:
    assert canonical_repo_identity(root_commit=" ABC123 ") == "commit:abc123"
    with pytest.raises(CartridgeFormatError):
        canonical_repo_identity()


@pytest.mark.req("engram.cartridge.export-partition")
def test_export_strips_transferable_and_namespaces_field_learned() -> None:
    transferable, field_learned = _transferable(), _field_learned()
    assert transferable["repoId"] is None
    assert transferable["codebaseFingerprint"] is None
    assert transferable["repoLabel"] == transferable["projectLabel"] == "portable-core"
    assert "foreign" not in transferable
    assert field_learned["repoId"] is None
    assert field_learned["repoLabel"] == field_learned["projectLabel"] == "field-learned"
    assert field_learned["foreign"] is True
    assert field_learned["codebaseFingerprint"] == CBF
    with pytest.raises(CartridgeFormatError, match="field-learned"):
        export_record(RECORDS[1])  # a field-learned record cannot be exported without its cbf


@pytest.mark.req("engram.cartridge.export-partition")
def test_field_learned_memory_is_quarantined_unless_asked(tmp_path: Path) -> None:
    package = write_package(tmp_path / "pkg", records=RECORDS)
    contents, quarantined = package_contents(package, ExportOptions("io.github.acme", NOW))
    assert quarantined == 1
    assert [m["id"] for m in contents.memories] == ["mem-001", "mem-003"]
    with pytest.raises(CartridgeFormatError, match="installation salt"):
        package_contents(package, ExportOptions("io.github.acme", NOW, include_field_learned=True))


@pytest.mark.req("engram.cartridge.merge-idempotent")
def test_merge_is_idempotent() -> None:
    incoming = [_transferable(), _field_learned(), export_record(RECORDS[2])]
    first = merge_records([], incoming)
    assert first.added == ("mem-001", "mem-002", "mem-003")
    second = merge_records(first.records, incoming)
    assert second.added == ()
    assert second.by_id == ("mem-001", "mem-002", "mem-003")
    assert second.records == first.records


@pytest.mark.req("engram.cartridge.merge-idempotent")
def test_merge_dedupes_by_artifact_fingerprint_across_ids() -> None:
    original = _transferable()
    twin = export_record(
        {
            **RECORDS[0],
            "id": "another-id",
            "summary": "  NEVER force-push the main branch; open a revert instead. ",
            "tags": ["safety", "GIT"],
        }
    )
    assert twin["artifactFingerprint"] == original["artifactFingerprint"]
    result = merge_records([original], [twin])
    assert result.added == ()
    assert result.by_fingerprint == ("another-id",)
    within = merge_records([], [original, twin])
    assert within.added == ("mem-001",)
    assert within.by_fingerprint == ("another-id",)
    # One survivor, whose identity is the lower id whatever the order (§7.3, commutative).
    assert [r["id"] for r in within.records] == ["another-id"]
    assert merge_records([], [twin, original]).records == within.records


@pytest.mark.req("engram.cartridge.merge-idempotent", "engram.cartridge.export-partition")
def test_the_second_key_never_crosses_the_tier_or_codebase_boundary() -> None:
    portable = _transferable()
    retiered = {
        **portable,
        "id": "x",
        "portable": False,
        "codebaseFingerprint": CBF,
        "zone": "save",
    }
    merged = merge_records([portable], [retiered])
    assert merged.added == ("x",)  # same content address, other tier: not a duplicate
    other_codebase = {**retiered, "id": "y", "codebaseFingerprint": "cbf1_" + "f" * 40}
    assert merge_records([retiered], [other_codebase]).added == ("y",)


@pytest.mark.req("engram.cartridge.merge-idempotent")
def test_conflicts_resolve_deterministically_whatever_the_order() -> None:
    base = {k: v for k, v in _transferable().items() if k != "artifactFingerprint"}
    a = {
        **base,
        "id": "a",
        "summary": "short",
        "impact": "positive",
        "xpAwarded": 3,
        "tags": ["x"],
        "timestamp": "2026-01-01T00:00:00.000Z",
        "artifactFingerprint": "ffffffffff",
    }
    b = {
        **base,
        "id": "b",
        "summary": "a longer text",
        "impact": "negative",
        "xpAwarded": 1,
        "tags": ["y"],
        "timestamp": "2026-02-01T00:00:00.000Z",
        "artifactFingerprint": "ffffffffff",
    }
    one = merge_records([], [a, b]).records
    other = merge_records([], [b, a]).records
    assert len(one) == len(other) == 1
    (merged,) = one
    assert {k: v for k, v in merged.items() if k != "id"} == {
        k: v for k, v in other[0].items() if k != "id"
    }
    assert merged["summary"] == "a longer text"  # longer text wins
    assert merged["impact"] == "negative"  # worse impact wins
    assert merged["xpAwarded"] == 3  # max
    assert merged["tags"] == ["x", "y"]  # union
    assert merged["timestamp"] == "2026-02-01T00:00:00.000Z"  # latest


@pytest.mark.req("engram.cartridge.merge-idempotent")
def test_the_artifact_fingerprint_is_exactly_10_hex() -> None:
    fingerprint = artifact_fingerprint(_transferable())
    assert len(fingerprint) == 10
    int(fingerprint, 16)
    assert fingerprint == _independent_fingerprint(_transferable())
    assert fingerprint != artifact_fingerprint({**_transferable(), "title": "other"})


SECRETS = [
    ("private-key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n"),
    ("aws-access-key-id", "use AKIAIOSFODNN7EXAMPLE for uploads"),
    ("github-token", "token ghp_" + "a1B2" * 9),
    ("api-key-sk", "OPENAI_KEY=sk-proj-" + "x9" * 15),
    ("slack-token", "xoxb-123456789012-abcdefghij"),
    ("google-api-key", "key AIza" + "SyD" * 11 + "xy"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"),
    ("secret-assignment", "password = hunter2hunter2"),
    ("url-credentials", "clone https://dana:s3cretpass@git.example.com/repo"),
    ("absolute-home-path", "the config lives in /home/dana/.config/tool"),
    ("absolute-home-path", "see /Users/dana/Library"),
    ("windows-home-path", "see C:\\Users\\dana\\AppData"),
    ("authorization-header", "Authorization: Bearer abcdefghijklmnop12345"),
    ("high-entropy", "blob Zq8Xv2Lp0Rt7Wm4Yk9Bn3Cd6Fg1Hj5"),
]


@pytest.mark.req("engram.cartridge.scrub-gate")
@pytest.mark.parametrize(("rule", "text"), SECRETS)
def test_the_scrub_gate_blocks_the_build(tmp_path: Path, rule: str, text: str) -> None:
    records = [{**RECORDS[0], "summary": text}]
    package = write_package(tmp_path / "pkg", records=records)
    out = tmp_path / "leaky.acx"
    with pytest.raises(ScrubBlocked, match=rule) as caught:
        build(out, key=PrivateKey.generate(), package=package)
    assert not out.exists()
    assert text.split()[-1] not in caught.value.message  # findings never echo the secret


@pytest.mark.req("engram.cartridge.scrub-gate")
@pytest.mark.parametrize(
    ("name", "content", "rule"),
    [
        (
            "skills/git-helper/scripts/deploy.sh",
            b"export TOKEN=ghp_" + b"Z" * 36 + b"\n",
            "github-token",
        ),
        (
            "skills/git-helper/SKILL.md",
            b"---\nname: git-helper\ndescription: d\n---\nkey AKIAIOSFODNN7EXAMPLE\n",
            "aws-access-key-id",
        ),
        ("SKILLS.md", b"# Skills\n\nsee /home/dana/notes\n", "absolute-home-path"),
        (
            "skills/git-helper/assets/blob.bin",
            b"\x00\x01xoxb-123456789012-abcdefghij\x00",
            "slack-token",
        ),
    ],
)
def test_the_scrub_gate_scans_every_rom_file(
    tmp_path: Path, name: str, content: bytes, rule: str
) -> None:
    package = write_package(tmp_path / "pkg", extra={name: content})
    with pytest.raises(ScrubBlocked, match=rule):
        build(tmp_path / "c.acx", key=None, package=package)


@pytest.mark.req("engram.cartridge.scrub-gate")
def test_the_scrub_gate_scans_meta_values(tmp_path: Path) -> None:
    package = write_package(
        tmp_path / "pkg", manifest={"description": "deploy with password=hunter2hunter2 please"}
    )
    with pytest.raises(ScrubBlocked, match=r"cartridge:acx\.description"):
        build(tmp_path / "c.acx", key=None, package=package)


@pytest.mark.req("engram.cartridge.scrub-gate", "engram.cartridge.export-partition")
def test_a_raw_repo_identifier_never_survives_the_export_boundary(tmp_path: Path) -> None:
    """§7.5: the gate verifies no raw repoId/repoLabel/projectLabel literal survives §7.4."""
    records = [
        {**RECORDS[0], "summary": "Learned while fixing acme-widgets-api tests."},
        {**RECORDS[1], "repoLabel": "acme-widgets-api"},
    ]
    package = write_package(tmp_path / "pkg", records=records)
    with pytest.raises(ScrubBlocked, match="repo-identifier-leak"):
        build(tmp_path / "c.acx", key=None, package=package)


@pytest.mark.req("engram.cartridge.scrub-gate")
def test_the_scrub_gate_runs_on_every_writer_not_only_export(tmp_path: Path) -> None:
    """write() itself scrubs (before any signature), whatever built its Contents."""
    contents, _ = package_contents(
        write_package(tmp_path / "pkg"), ExportOptions("io.github.acme", NOW)
    )
    contents.files["rom/knowledge/NOTES.md"] = (
        b"aws_secret_access_key = " + b"A" * 40,
        0o100644,
        0,
    )
    out = tmp_path / "c.acx"
    with pytest.raises(ScrubBlocked, match="aws-secret-key"):
        write(out, contents, key=PrivateKey.generate(), signed_at=NOW)
    assert not out.exists()
    assert isinstance(contents, Contents)


@pytest.mark.req("engram.cartridge.scrub-gate")
def test_findings_are_file_byte_offset_and_rule() -> None:
    (finding,) = scan({"rom/knowledge/x.md": b"ok\nAKIAIOSFODNN7EXAMPLE\n"})
    assert finding.to_wire() == {
        "file": "rom/knowledge/x.md",
        "byteOffset": 3,
        "ruleId": "aws-access-key-id",
    }
    assert finding.line == 2


@pytest.mark.req("engram.cartridge.scrub-gate")
def test_placeholders_digests_and_relative_paths_pass() -> None:
    clean = {
        "rom/x.md": b"api_key: <YOUR_KEY>\npassword=${PASSWORD}\nsee ~/.config and ./home/x\n"
        b"token: xxxxxxxxxxxx\nsha256:" + hashlib.sha256(b"x").hexdigest().encode() + b"\n"
    }
    assert scan(clean) == []
