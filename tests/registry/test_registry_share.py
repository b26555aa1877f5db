"""``share`` and ``remix`` (lboel/acx@85f1358 SPEC.md §17.1, §17.3, §17.7, §16.9)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from registry_kit import (
    NOW,
    PUBLISHER,
    cartridge,
    cartridge_path,
    dump,
    signed_graph,
    signed_workflow,
)

from engram.core.keys import PrivateKey
from engram.graph import check_graph, sign_graph
from engram.registry import RegistryRefused, build_index, remix_draft, share
from engram.workflow import check_workflow, sign_workflow, verify_workflow


def engram(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from engram.cli import main; main()", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.mark.req("engram.registry.share", "engram.registry.canonical-paths")
def test_share_places_each_kind_at_its_coordinate_and_never_overwrites(tmp_path: Path) -> None:
    key = PrivateKey.generate()
    registry = tmp_path / "registry"
    registry.mkdir()
    flow = signed_workflow(key)
    flow_file = dump(tmp_path / "mine.cal.json", flow)
    graph_file = dump(
        tmp_path / "team.agent-graph.json",
        signed_graph(key, flow, id="team-graph", version="1.0.0"),
    )
    acx = cartridge(tmp_path, key)

    # The graph's pinned workflow is not in the registry yet: refused, fail-closed.
    with pytest.raises(RegistryRefused, match="not in the registry"):
        share("graph", graph_file, registry, now=NOW)
    planned = share("workflow", flow_file, registry, now=NOW, dry_run=True)
    assert planned.changed
    assert not (registry / planned.path).exists()
    placed = share("workflow", flow_file, registry, now=NOW)
    assert placed.path == f"cals/{PUBLISHER}/review-loop/1.2.0.cal.json"
    assert (registry / placed.path).read_bytes() == flow_file.read_bytes()
    assert (
        share("graph", graph_file, registry, now=NOW).path
        == f"graphs/{PUBLISHER}/team-graph/1.0.0.agent-graph.json"
    )
    agent = share("agent", acx, registry, now=NOW)
    assert agent.path == cartridge_path(acx)
    assert (registry / agent.path).parent.joinpath("README.md").read_text().startswith("# ")
    assert build_index(registry, now=NOW).ok

    again = share("workflow", flow_file, registry, now=NOW)
    assert not again.changed
    resigned = dump(
        tmp_path / "resigned.cal.json",
        signed_workflow(key, description="Same coordinate, other signed bytes, still valid."),
    )
    with pytest.raises(RegistryRefused, match="never replaced"):
        share("workflow", resigned, registry, now=NOW)
    assert (registry / placed.path).read_bytes() == flow_file.read_bytes()
    with pytest.raises(RegistryRefused, match="not the signed publisher"):
        share("workflow", flow_file, registry, now=NOW, publisher_id="io.github.someone-else")


@pytest.mark.req("engram.registry.share", "engram.registry.live-verify")
def test_share_refuses_what_does_not_verify(tmp_path: Path) -> None:
    key = PrivateKey.generate()
    document = signed_workflow(key)
    document["name"] = "Edited after signing"
    with pytest.raises(RegistryRefused, match="tampered"):
        share("workflow", dump(tmp_path / "x.cal.json", document), tmp_path / "registry", now=NOW)
    unsigned = {k: v for k, v in signed_workflow(key).items() if k != "integrity"}
    with pytest.raises(RegistryRefused, match="unsigned"):
        share("workflow", dump(tmp_path / "y.cal.json", unsigned), tmp_path / "registry", now=NOW)


@pytest.mark.req("engram.registry.share", "engram.registry.cli")
def test_share_from_the_command_line(tmp_path: Path) -> None:
    key = PrivateKey.generate()
    flow_file = dump(tmp_path / "mine.cal.json", signed_workflow(key))
    registry = tmp_path / "registry"
    dry = engram("share", "workflow", str(flow_file), "--registry", str(registry), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would place cals/io.github.example/review-loop/1.2.0.cal.json" in dry.stdout
    done = engram("share", "workflow", str(flow_file), "--registry", str(registry), "--json")
    assert json.loads(done.stdout)["changed"] is True
    other = dump(
        tmp_path / "other.cal.json",
        signed_workflow(key, description="Other signed bytes at the same coordinate."),
    )
    refused = engram("share", "workflow", str(other), "--registry", str(registry))
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: registry_refused: ")
    index = engram("registry", "index", str(registry))
    assert index.returncode == 0, index.stdout + index.stderr
    assert (registry / "index.json").is_file()


@pytest.mark.req("engram.registry.remix")
def test_a_remix_drops_integrity_pins_the_parent_and_needs_a_new_signature(tmp_path: Path) -> None:
    parent_key, remixer = PrivateKey.generate(), PrivateKey.generate()
    parent = signed_workflow(parent_key)
    draft = remix_draft(
        parent,
        new_id="review-loop-fast",
        new_version="1.0.0",
        source="https://example.com/exchange/",
        now=NOW,
    )
    assert "integrity" not in draft
    assert verify_workflow(draft, now=NOW).verdict == "unsigned"
    (lineage,) = draft["lineage"]["parents"]
    assert lineage == {
        "artifactType": "workflow",
        "publisherId": PUBLISHER,
        "id": "review-loop",
        "version": "1.2.0",
        "digest": verify_workflow(parent, now=NOW).digest,
        "relation": "remix",
        "source": "https://example.com/exchange/",
    }
    signed = sign_workflow(draft, remixer, publisher_id="io.github.remixer", signed_at=NOW)
    assert check_workflow(signed, now=NOW).ok
    assert "PRIVATE KEY" not in json.dumps(signed)  # noqa: TID251
    with pytest.raises(RegistryRefused, match="new id or a new version"):
        remix_draft(parent, new_id="review-loop", new_version="1.2.0", now=NOW)
    tampered = {**parent, "name": "changed after signing"}
    with pytest.raises(RegistryRefused, match="signed, intact"):
        remix_draft(tampered, new_id="x", new_version="1.0.0", now=NOW)


@pytest.mark.req("engram.registry.remix")
def test_a_graph_remix_from_the_command_line_signs_and_verifies(tmp_path: Path) -> None:
    key = PrivateKey.generate()
    flow = signed_workflow(key)
    parent = dump(
        tmp_path / "team.agent-graph.json",
        signed_graph(key, flow, id="team-graph", version="1.0.0"),
    )
    out = tmp_path / "draft.agent-graph.json"
    done = engram(
        "registry",
        "remix",
        str(parent),
        "--id",
        "team-graph-remix",
        "--version",
        "0.1.0",
        "--relation",
        "fork",
        "-o",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    draft = json.loads(out.read_text())
    assert draft["lineage"]["parents"][0]["relation"] == "fork"
    signed = sign_graph(draft, PrivateKey.generate(), publisher_id="io.github.other", signed_at=NOW)
    assert check_graph(signed, now=NOW).ok


@pytest.mark.req("engram.registry.artifact-types-one-source")
def test_every_artifact_type_is_declared_once_and_summarised(tmp_path: Path) -> None:
    # An artifact type's folder, suffixes, index members, Exchange names and share words are one
    # ArtifactType; its summariser is the only other per-kind piece. The index lists the types
    # in that order, check counts them under the same names, and share names them.
    from engram.registry.internals import ARTIFACTS, SUMMARIZE

    assert set(SUMMARIZE) == {a.name for a in ARTIFACTS}
    build = build_index(tmp_path, now=NOW)
    members = list(build.index)
    for artifact in ARTIFACTS:
        at = members.index(artifact.count_key)
        assert members[at + 1] == artifact.index_key
    words = [a.share_words[0] for a in ARTIFACTS]
    with pytest.raises(RegistryRefused, match=f"say {', '.join(words[:-1])} or {words[-1]}"):
        share("nonsense", tmp_path / "x", tmp_path, now=NOW)
