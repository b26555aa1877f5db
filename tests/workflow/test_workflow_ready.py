"""§14.2-§14.3 readiness: staffing participants from cartridge offers, after the signature.

The reference cartridge's offer is read here with stock ``sqlite3`` and ``zlib`` from its §3.2
tables (``cartridge`` meta, the ``capabilities`` records, ``acx_skill`` and the CalSkillSet in
``sqlar``), independently of engram's cartridge reader, which is being re-aligned to that format.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from acx_json_kit import NOW, REFERENCE_CAL, REFERENCE_CARTRIDGE, workflow
from engram.core.keys import PrivateKey
from engram.trust import TrustState
from engram.workflow import (
    CartridgeOffer,
    ProvenLevel,
    find_cartridges,
    load_workflow,
    read_cartridge_offer,
    ready,
    sign_workflow,
    verify_workflow,
)
from engram.workflow.internals import Capability, read_offers


def reference_offer(path: Path = REFERENCE_CARTRIDGE) -> CartridgeOffer:
    """What ada-ridge offers, read with stock sqlite3 (no level: nothing here verifies one)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        meta = dict(db.execute("SELECT key, value FROM cartridge").fetchall())
        records = [json.loads(r) for (r,) in db.execute("SELECT json FROM capabilities")]
        skills = {name for (name,) in db.execute("SELECT name FROM acx_skill")}
        size, data = db.execute(
            "SELECT sz, data FROM sqlar WHERE name = ?", (meta["acx.cal_skillset"],)
        ).fetchone()
    skillset = json.loads(data if size == len(data) else _inflate(data))
    plays = skillset["plays"]
    return CartridgeOffer(
        source=str(path),
        publisher_id=meta["acx.publisher_id"],
        artifact_id=meta["acx.artifact_id"],
        artifact_version=meta["acx.artifact_version"],
        rom_digest=meta["acx.rom_manifest_hash"],
        trust=TrustState.PORTABLE,
        roles=frozenset({meta["acx.role"], *(p["role"] for p in plays)}),
        skills=frozenset(skills | {s for p in plays for s in p.get("canComplete", [])}),
        capabilities=tuple(Capability(r["taskType"], frozenset(r["stack"])) for r in records)
        + tuple(Capability(t) for p in plays for t in p.get("providesCapabilities", [])),
        processes=frozenset(skillset.get("processes", [])),
    )


def _inflate(data: bytes) -> bytes:
    # Stock sqlar rows are zlib streams (what `sqlite3 -Ax` uncompresses). The reference wrote
    # raw DEFLATE instead, which `sqlite3 -Ax` refuses ("error in uncompress()"): read both.
    try:
        return zlib.decompress(data)
    except zlib.error:
        return zlib.decompress(data, -15)


def offer(source: str, **fields: Any) -> CartridgeOffer:
    base: dict[str, Any] = {
        "source": source,
        "publisher_id": "io.github.acme",
        "artifact_id": source,
        "artifact_version": "1.0.0",
        "rom_digest": "sha256:" + source.encode().hex().ljust(64, "0")[:64],
        "trust": TrustState.PORTABLE,
    }
    base.update(fields)
    return CartridgeOffer(**base)


BUILDER = offer("builder-a", roles=frozenset({"builder"}), capabilities=(Capability("build-dag"),))
REVIEWER = offer("reviewer-a", roles=frozenset({"reviewer"}))


def _unsigned(document: dict[str, Any]) -> Any:
    return verify_workflow(document, now=NOW)


@pytest.mark.req("engram.workflow.ready-slot", "engram.workflow.ready-coverage")
def test_a_roster_that_fits_makes_the_workflow_ready() -> None:
    document = workflow()
    report = ready(document, [BUILDER, REVIEWER], verification=_unsigned(document))
    assert report.ready, report.missing
    assert [s.selected.source if s.selected else None for s in report.staffing] == [
        "builder-a",
        "reviewer-a",
    ]
    assert report.approvals == ("review: the host must pause for explicit approval (workspace)",)
    assert any("unsigned" in w for w in report.warnings)


@pytest.mark.req("engram.workflow.ready-level-proven", "engram.workflow.ready-slot")
def test_the_reference_cartridge_never_meets_min_level_with_a_declared_level() -> None:
    document = load_workflow(REFERENCE_CAL.read_bytes())
    ada = reference_offer()
    assert (
        ada.rom_digest == "sha256:318b930a1942eb9d3e8088906c6b32f91def9e156d4cbb3a178e676d4e28aaca"
    )
    assert "devops_engineer" in ada.roles
    assert "build-dag" in ada.task_types
    report = ready(document, [ada], verification=verify_workflow(document, now=NOW))
    builder = {s.alias: s for s in report.staffing}["builder"]
    assert builder.selected is None
    assert "proven level of at least acxLevel 15" in builder.reason
    assert "declared level never counts" in builder.reason
    assert not report.ready
    assert len(report.missing) == 3
    # With a level a verified credential proved, the same cartridge takes the builder seat.
    proven = replace(ada, level=ProvenLevel(28, "principal"))
    report = ready(document, [proven], verification=verify_workflow(document, now=NOW))
    builder = {s.alias: s for s in report.staffing}["builder"]
    assert builder.selected == proven
    assert [s.alias for s in report.staffing if s.selected is None] == ["architect", "reviewer"]
    assert report.missing[0] == (
        "architect: no cartridge offers capability 'design-api'; role 'architect'"
    )


@pytest.mark.req("engram.workflow.ready-slot")
def test_every_slot_constraint_must_hold_and_the_choice_is_exposed() -> None:
    document = workflow()
    document["participants"][0]["slot"] = {
        "role": "builder",
        "minLevel": {"acxLevel": 10, "careerTier": "senior"},
        "capabilities": [{"taskType": "build-dag", "stack": ["pkg:pypi/apache-airflow"]}],
    }
    stack = frozenset({"pkg:pypi/apache-airflow", "pkg:pypi/dbt-core"})
    good = offer("good", roles=frozenset({"builder"}), level=ProvenLevel(12, "staff"),
                 capabilities=(Capability("build-dag", stack),))  # fmt: skip
    better = replace(good, source="better", level=ProvenLevel(20, "principal"))
    junior = replace(good, source="junior", level=ProvenLevel(30, "junior"))
    wrong_stack = replace(good, source="stack", capabilities=(Capability("build-dag"),))
    low = replace(good, source="low", level=ProvenLevel(9, "legend"))
    tampered = replace(better, source="tampered", level=ProvenLevel(99, "legend"),
                       trust=TrustState.TAMPERED)  # fmt: skip
    roster = [good, better, junior, wrong_stack, low, tampered, REVIEWER]
    report = ready(document, roster, verification=_unsigned(document))
    builder = report.staffing[0]
    assert builder.selected == better
    assert builder.candidates == ("better", "good")
    assert "best of 2" in builder.reason


@pytest.mark.req("engram.workflow.ready-hash")
def test_a_pinned_participant_is_never_substituted() -> None:
    document = workflow()
    pinned = "sha256:" + "5a" * 32
    document["participants"][1] = {"alias": "reviewer", "bind": "hash", "romDigest": pinned}
    lookalike = replace(REVIEWER, source="lookalike")
    report = ready(document, [BUILDER, lookalike], verification=_unsigned(document))
    assert report.staffing[1].selected is None
    assert "never substituted" in report.staffing[1].reason
    exact = replace(REVIEWER, source="exact", rom_digest=pinned)
    report = ready(document, [BUILDER, lookalike, exact], verification=_unsigned(document))
    assert report.staffing[1].selected == exact
    assert report.ready
    broken = replace(exact, trust=TrustState.TAMPERED)
    report = ready(document, [BUILDER, broken], verification=_unsigned(document))
    assert report.staffing[1].selected is None


@pytest.mark.req("engram.workflow.ready-optional")
def test_optional_participants_may_stay_unstaffed() -> None:
    document = workflow()
    document["participants"][1]["required"] = False
    report = ready(document, [BUILDER], verification=_unsigned(document))
    assert report.ready
    assert any("unstaffed optional participant 'reviewer'" in w for w in report.warnings)
    document["participants"][1]["required"] = True
    assert not ready(document, [BUILDER], verification=_unsigned(document)).ready


@pytest.mark.req("engram.workflow.ready-coverage")
def test_each_task_is_covered_by_its_cartridge() -> None:
    document = workflow()
    document["nodes"][1]["requires"] = {"skills": ["security-review"], "capabilities": ["audit"]}
    report = ready(document, [BUILDER, REVIEWER], verification=_unsigned(document))
    assert [str(g) for g in report.gaps] == [
        "task 'review': 'reviewer' lacks capability 'audit'",
        "task 'review': 'reviewer' lacks skill 'security-review'",
    ]
    covered = replace(REVIEWER, skills=frozenset({"security-review"}),
                      capabilities=(Capability("audit"),))  # fmt: skip
    assert ready(document, [BUILDER, covered], verification=_unsigned(document)).ready


@pytest.mark.req("engram.workflow.verify-before-staffing")
def test_a_tampered_or_invalid_workflow_resolves_no_slot() -> None:
    signed: dict[str, Any] = sign_workflow(workflow(), PrivateKey.generate(),
                                           publisher_id="io.github.x", signed_at=NOW)  # fmt: skip
    assert ready(signed, [BUILDER, REVIEWER], verification=verify_workflow(signed, now=NOW)).ready
    signed["participants"][0]["slot"]["role"] = "anyone"
    report = ready(signed, [BUILDER, REVIEWER], verification=verify_workflow(signed, now=NOW))
    assert report.staffing == ()
    assert report.refused
    assert "tampered" in report.refused
    invalid = workflow()
    invalid["nodes"][0]["agent"] = "ghost"
    report = ready(invalid, [BUILDER, REVIEWER], verification=_unsigned(invalid))
    assert report.staffing == ()
    assert report.refused
    assert "not valid" in report.refused


@pytest.mark.req("engram.workflow.ready-cartridges")
def test_engram_reads_the_reference_cartridge_offer_as_stock_sqlite3_does() -> None:
    ours = read_cartridge_offer(REFERENCE_CARTRIDGE)
    theirs = reference_offer()
    assert ours.trust is TrustState.PORTABLE  # verified ROM, signer not in any registry
    assert (ours.publisher_id, ours.artifact_id, ours.artifact_version, ours.rom_digest) == (
        theirs.publisher_id, theirs.artifact_id, theirs.artifact_version, theirs.rom_digest,
    )  # fmt: skip
    assert ours.roles == theirs.roles
    assert ours.skills == theirs.skills
    assert set(ours.capabilities) == set(theirs.capabilities)
    assert ours.level is None


@pytest.mark.req("engram.workflow.ready-cartridges")
def test_cartridges_are_found_recursively_and_a_tampered_one_offers_nothing(
    tmp_path: Path,
) -> None:
    roster = tmp_path / "roster"
    (roster / "team" / "deep").mkdir(parents=True)
    copy = roster / "team" / "deep" / "ada.acx"
    shutil.copyfile(REFERENCE_CARTRIDGE, copy)
    tampered = roster / "tampered.acx"
    shutil.copyfile(REFERENCE_CARTRIDGE, tampered)
    with sqlite3.connect(tampered) as db:
        db.execute("UPDATE cartridge SET value = 'architect' WHERE key = 'acx.role'")
    (roster / "broken.acx").write_bytes(b"not a cartridge")
    (roster / "notes.txt").write_text("ignored")
    outside = tmp_path / "outside.acx"
    shutil.copyfile(REFERENCE_CARTRIDGE, outside)
    (roster / "link.acx").symlink_to(outside)
    found = find_cartridges(roster)
    assert found == [
        (roster / n).resolve() for n in ("broken.acx", "tampered.acx", "team/deep/ada.acx")
    ]
    offers, unreadable = read_offers(found, read_cartridge_offer)
    assert [(o.artifact_id, o.trust) for o in offers] == [
        ("ada-ridge", TrustState.TAMPERED),
        ("ada-ridge", TrustState.PORTABLE),
    ]
    assert offers[0].roles == frozenset()  # a tampered cartridge offers nothing
    assert len(unreadable) == 1
    assert "broken.acx" in unreadable[0]
    document = load_workflow(REFERENCE_CAL.read_bytes())
    report = ready(document, offers, verification=verify_workflow(document, now=NOW))
    assert all(s.selected is None for s in report.staffing)
