"""``index.json`` from verified bytes only (lboel/acx@85f1358 SPEC.md §17.1-§17.5; the published
``registry-index.schema.json``; the reference's own generated ``registry/index.json``)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from registry_kit import (
    NOW,
    PUBLISHER,
    REFERENCE_INDEX,
    REFERENCE_REGISTRY,
    cartridge,
    cartridge_path,
    dump,
    make_registry,
    signed_graph,
    signed_workflow,
)

from engram.registry import build_index

SCHEMA = json.loads(
    (Path(__file__).parents[1] / "vectors/acx-spec/schemas/registry-index.schema.json").read_text()
)
DIFFERENCES = {("templates", "templates/starter-agent-package/manifest.json", "license")}
"""Where engram's entries for the reference's files depart from the reference's index (docs)."""


def rules(build: Any) -> set[str]:
    return {p.rule for p in build.problems}


@pytest.mark.req("engram.registry.index-content", "engram.registry.coordinate")
def test_the_reference_registry_files_reproduce_the_reference_index_entries(tmp_path: Path) -> None:
    root = tmp_path / "registry"
    shutil.copytree(REFERENCE_REGISTRY, root)
    build = build_index(root, now=NOW)
    assert build.ok, [str(p) for p in build.problems]
    ours, theirs = build.index, json.loads(REFERENCE_INDEX.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(ours)
    compared = 0
    for collection in ("cartridges", "workflows", "agentGraphs", "templates"):
        reference = {e["path"]: e for e in theirs[collection]}
        for entry in ours[collection]:
            expected = reference[entry["path"]]
            assert list(entry) == list(expected), "members in the reference's order"
            for member in expected:
                if (collection, entry["path"], member) in DIFFERENCES:
                    continue
                assert entry[member] == expected[member], (entry["path"], member)
            compared += 1
    assert compared == 5  # every reference artifact copied here; rex-calder's bytes are not
    assert ours["generatedAt"] == theirs["generatedAt"]
    (template,) = ours["templates"]
    assert template["license"] is None  # the documented difference: not invented


@pytest.mark.req("engram.registry.index-deterministic")
def test_the_same_registry_gives_the_same_index_bytes(tmp_path: Path) -> None:
    registry = make_registry(tmp_path)
    first = build_index(registry.root, now=NOW).to_bytes()
    copy = tmp_path / "copy"
    shutil.copytree(registry.root, copy)
    for path in copy.rglob("*"):
        os.utime(path, (1, 1))
    second = build_index(copy, now=NOW.replace(hour=5)).to_bytes()
    assert first == second
    index = json.loads(first)
    assert index["generatedAt"] == "2026-09-01T00:00:00Z"  # the newest signedAt, not the clock
    jsonschema.Draft202012Validator(SCHEMA).validate(index)
    assert first.endswith(b"}\n")


@pytest.mark.req("engram.registry.live-verify")
def test_an_artifact_whose_live_bytes_do_not_verify_is_not_indexed(tmp_path: Path) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    text = registry.workflow.read_text().replace("Build and review", "Build and revieW")
    registry.workflow.write_text(text)
    with sqlite3.connect(registry.cartridge) as db:
        db.execute("UPDATE cartridge SET value = 'Mallory' WHERE key = 'acx.agent_name'")
    build = build_index(registry.root, now=NOW)
    found = {p.path: p.message for p in build.problems}
    assert "tampered" in found[registry.workflow.relative_to(registry.root).as_posix()]
    assert "tampered" in found[registry.cartridge.relative_to(registry.root).as_posix()]
    assert build.index["workflowCount"] == 0
    assert build.index["count"] == 0
    # The graph's pinned workflow is gone from the accepted set, so the graph fails too.
    assert "registry.pinned-dependencies" in rules(build)


@pytest.mark.req("engram.registry.live-verify")
def test_unsigned_documents_and_cartridges_with_save_data_are_refused(tmp_path: Path) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    document = json.loads(registry.workflow.read_text())
    del document["integrity"]
    dump(registry.workflow, document)
    with sqlite3.connect(registry.cartridge) as db:
        db.execute(
            "INSERT INTO sqlar(name, mode, mtime, sz, data) "
            "VALUES ('save/notes.md', 420, 0, 2, CAST('hi' AS BLOB))"
        )
    messages = " ".join(p.message for p in build_index(registry.root, now=NOW).problems)
    assert "unsigned" in messages
    assert "ROM-only" in messages


@pytest.mark.req("engram.registry.path-binding", "engram.registry.canonical-paths")
def test_a_path_that_disagrees_with_the_verified_identity_is_refused(tmp_path: Path) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    wrong = registry.root / f"cals/{PUBLISHER}/review-loop/9.9.9.cal.json"
    shutil.move(registry.workflow, wrong)
    legacy = registry.root / "cartridges/io.github.acme/agent.acx"
    shutil.copyfile(registry.cartridge, legacy)
    (registry.root / "cals" / "notes.txt").write_text("stray")
    build = build_index(registry.root, now=NOW)
    by_path = {p.path: p for p in build.problems}
    assert by_path[f"cals/{PUBLISHER}/review-loop/9.9.9.cal.json"].rule == "registry.path-binding"
    assert (
        "belongs at cals/io.github.example/review-loop/1.2.0.cal.json"
        in by_path[f"cals/{PUBLISHER}/review-loop/9.9.9.cal.json"].message
    )
    assert by_path["cartridges/io.github.acme/agent.acx"].rule == "registry.path-binding"
    assert by_path["cals/notes.txt"].rule == "registry.canonical-paths"


@pytest.mark.req("engram.registry.latest", "engram.registry.semver")
def test_latest_follows_semver_precedence_and_every_version_stays(tmp_path: Path) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    for version in ("1.10.0", "1.9.0", "2.0.0-rc.1", "1.10.0-beta"):
        dump(
            registry.root / f"cals/{PUBLISHER}/review-loop/{version}.cal.json",
            signed_workflow(registry.key, version=version),
        )
    build = build_index(registry.root, now=NOW)
    assert build.ok, [str(p) for p in build.problems]
    versions = [(w["version"], w["latest"]) for w in build.index["workflows"]]
    assert versions == [
        ("2.0.0-rc.1", True),
        ("1.10.0", False),
        ("1.10.0-beta", False),
        ("1.9.0", False),
        ("1.2.0", False),
    ]
    # The graph still depends on the exact version it pinned, never on `latest`.
    (graph_entry,) = build.index["agentGraphs"]
    assert [d["version"] for d in graph_entry["dependencies"]] == ["1.2.0"]


@pytest.mark.req("engram.registry.latest", "engram.registry.semver")
def test_build_metadata_gives_no_precedence_and_the_tie_is_deterministic(tmp_path: Path) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    twin = cartridge(tmp_path, registry.key, version="1.0.0+b1", name="twin.acx")
    target = registry.root / cartridge_path(twin)
    target.parent.mkdir(parents=True)
    shutil.move(twin, target)
    build = build_index(registry.root, now=NOW)
    assert build.ok, [str(p) for p in build.problems]
    flags = {c["version"]: c["latest"] for c in build.index["cartridges"]}
    # 1.0.0 and 1.0.0+b1 have equal precedence: the one whose path sorts first stays latest.
    assert flags == {"1.0.0": True, "1.0.0+b1": False}
    assert build_index(registry.root, now=NOW).to_bytes() == build.to_bytes()


@pytest.mark.req("engram.registry.pinned-dependencies")
def test_a_graph_whose_pin_is_missing_or_mismatched_is_refused(tmp_path: Path) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    flow = signed_workflow(registry.key)
    flow_other = signed_workflow(
        registry.key, description="Another description that is long enough to pass."
    )
    graph = signed_graph(registry.key, flow_other, id="team-graph", version="1.0.0")
    dump(registry.graph, graph)
    build = build_index(registry.root, now=NOW)
    (problem,) = [p for p in build.problems if p.rule == "registry.pinned-dependencies"]
    assert "digest-mismatch" in problem.message
    graph["loops"][0]["workflowRef"]["version"] = "7.0.0"
    dump(
        registry.graph,
        signed_graph(registry.key, {**flow, "version": "7.0.0"}, id="team-graph", version="1.0.0"),
    )
    build = build_index(registry.root, now=NOW)
    assert any("is missing" in p.message for p in build.problems)
    assert build.index["agentGraphCount"] == 0


def _status(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schemaVersion": "acx.registry-status/1",
        "updatedAt": "2026-09-02T00:00:00Z",
        "entries": entries,
    }


@pytest.mark.req("engram.registry.status-ledger", "engram.registry.status-projection")
def test_the_status_ledger_is_validated_and_projected_without_touching_artifacts(
    tmp_path: Path,
) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    first = build_index(registry.root, now=NOW)
    (flow,) = first.index["workflows"]
    identity = {
        "artifactType": "workflow",
        "publisherId": PUBLISHER,
        "id": "review-loop",
        "version": "1.2.0",
        "digest": flow["digest"],
    }
    successor_doc = signed_workflow(registry.key, version="1.3.0")
    dump(registry.root / f"cals/{PUBLISHER}/review-loop/1.3.0.cal.json", successor_doc)
    successor = {
        **identity,
        "version": "1.3.0",
        "digest": build_index(registry.root, now=NOW).index["workflows"][0]["digest"],
    }
    before = registry.workflow.read_bytes()
    dump(
        registry.root / "status.json",
        _status(
            [
                {
                    "artifact": identity,
                    "status": "superseded",
                    "reason": "Replaced by 1.3.0 with a fixed review gate.",
                    "recordedAt": "2026-09-02T00:00:00Z",
                    "successor": successor,
                    "advisory": "https://example.com/advisories/1",
                }
            ]
        ),
    )
    build = build_index(registry.root, now=NOW)
    assert build.ok, [str(p) for p in build.problems]
    old = next(w for w in build.index["workflows"] if w["version"] == "1.2.0")
    assert old["registryStatus"] == {
        "status": "superseded",
        "reason": "Replaced by 1.3.0 with a fixed review gate.",
        "recordedAt": "2026-09-02T00:00:00Z",
        "successor": successor,
        "advisory": "https://example.com/advisories/1",
    }
    assert old["trust"] == "portable"  # advice, not revocation: the verdict is unchanged
    assert registry.workflow.read_bytes() == before
    assert build.index["generatedAt"] == "2026-09-02T00:00:00Z"
    assert (
        next(g for g in build.index["agentGraphs"])["dependencies"][0]["registryStatus"]
        == "superseded"
    )


@pytest.mark.req("engram.registry.status-ledger")
@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda e: e.update(status="superseded"), "successor"),
        (lambda e: e.update(reason="short"), "reason"),
        (lambda e: e.update(advisory="http://example.com/a"), "advisory"),
        (lambda e: e.update(advisory="https://user:pw@example.com/a"), "advisory"),
        (lambda e: e["artifact"].update(digest="sha256:" + "0" * 64), "not in the registry"),
        (lambda e: e.update(status="revoked"), "status"),
        (lambda e: e.update(successor=dict(e["artifact"])), "another coordinate"),
    ],
)
def test_a_bad_status_entry_is_refused(tmp_path: Path, change: Any, expected: str) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    (flow,) = build_index(registry.root, now=NOW).index["workflows"]
    entry = {
        "artifact": {
            "artifactType": "workflow",
            "publisherId": PUBLISHER,
            "id": "review-loop",
            "version": "1.2.0",
            "digest": flow["digest"],
        },
        "status": "deprecated",
        "reason": "Deprecated: use the research council instead.",
        "recordedAt": "2026-09-02T00:00:00Z",
    }
    change(entry)
    dump(registry.root / "status.json", _status([entry]))
    build = build_index(registry.root, now=NOW)
    assert any(
        expected in p.message for p in build.problems if p.rule == "registry.status-ledger"
    ), [str(p) for p in build.problems]


@pytest.mark.req("engram.registry.status-ledger")
def test_duplicate_status_identities_are_refused(tmp_path: Path) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    (flow,) = build_index(registry.root, now=NOW).index["workflows"]
    entry = {
        "artifact": {
            "artifactType": "workflow",
            "publisherId": PUBLISHER,
            "id": "review-loop",
            "version": "1.2.0",
            "digest": flow["digest"],
        },
        "status": "deprecated",
        "reason": "Deprecated: use the research council instead.",
        "recordedAt": "2026-09-02T00:00:00Z",
    }
    dump(registry.root / "status.json", _status([entry, {**entry, "status": "withdrawn"}]))
    assert any("repeats" in p.message for p in build_index(registry.root, now=NOW).problems)


@pytest.mark.req("engram.registry.lineage")
@pytest.mark.parametrize(
    ("lineage", "expected"),
    [
        ({"parents": []}, "one to eight"),
        (
            {
                "parents": [
                    {
                        "artifactType": "workflow",
                        "publisherId": "io.github.x",
                        "id": "a",
                        "digest": "sha256:" + "1" * 64,
                        "relation": "fork",
                    }
                ]
                * 2
            },
            "repeats",
        ),
        (
            {
                "parents": [
                    {
                        "artifactType": "workflow",
                        "publisherId": PUBLISHER,
                        "id": "review-loop",
                        "digest": "sha256:" + "1" * 64,
                        "relation": "remix",
                    }
                ]
            },
            "own coordinate",
        ),
        (
            {
                "parents": [
                    {
                        "artifactType": "workflow",
                        "publisherId": "io.github.x",
                        "id": "a",
                        "digest": "sha256:" + "1" * 64,
                        "relation": "remix",
                        "source": "https://u:p@example.com/",
                    }
                ]
            },
            "source",
        ),
    ],
)
def test_signed_lineage_is_checked_with_the_childs_full_coordinate(
    tmp_path: Path, lineage: dict[str, Any], expected: str
) -> None:
    from engram.registry import Coordinate
    from engram.registry.internals import lineage_problems

    own = Coordinate("workflow", PUBLISHER, "review-loop", "1.2.0", "sha256:" + "2" * 64)
    problems = lineage_problems({"lineage": lineage}, own, "cals/x.cal.json")
    assert any(expected in p.message for p in problems), problems


@pytest.mark.req("engram.registry.lineage")
def test_a_valid_lineage_is_copied_into_the_index(tmp_path: Path) -> None:
    registry = make_registry(tmp_path, with_reference=False)
    parent = {
        "artifactType": "workflow",
        "publisherId": "io.github.lboel",
        "id": "ship-a-feature",
        "version": "1.0.0",
        "digest": "sha256:588424a9ec12483ce13f28e81e9d0833777676bbd2c0c0686bbc27bb58f93dee",
        "relation": "remix",
        "source": "https://lboel.github.io/acx/exchange/",
    }
    dump(
        registry.root / f"cals/{PUBLISHER}/remixed/1.0.0.cal.json",
        signed_workflow(registry.key, id="remixed", version="1.0.0", lineage={"parents": [parent]}),
    )
    build = build_index(registry.root, now=NOW)
    assert build.ok, [str(p) for p in build.problems]
    remixed = next(w for w in build.index["workflows"] if w["id"] == "remixed")
    assert remixed["lineage"] == [parent]
