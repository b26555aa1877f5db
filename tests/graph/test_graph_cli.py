"""``engram graph ...`` from a shell, and ``inspect`` drawing the graph for a person."""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

from acx_json_kit import REFERENCE_CAL, REFERENCE_GRAPH, graph, index_digest
from engram.core.keys import PrivateKey, save_private_key

Shell = Callable[..., "subprocess.CompletedProcess[str]"]
SVG = "{http://www.w3.org/2000/svg}"


def _write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")  # noqa: TID251
    return path


@pytest.mark.req("engram.graph.cli", "engram.graph.sign-publishable")
def test_lint_sign_verify_digest(tmp_path: Path, engram_shell: Shell) -> None:
    source = _write(tmp_path / "team.agent-graph.json", graph())
    assert engram_shell("graph", "lint", str(source), "--publish").returncode == 0
    key = tmp_path / "k.key"
    save_private_key(key, PrivateKey.generate())
    signed = tmp_path / "signed.agent-graph.json"
    done = engram_shell("graph", "sign", str(source), "--publisher", "io.github.example",
                        "--sign-key", str(key), "-o", str(signed))  # fmt: skip
    assert done.returncode == 0, done.stderr
    verify = engram_shell("graph", "verify", str(signed), "--json")
    assert verify.returncode == 0
    assert json.loads(verify.stdout)["verdict"] == "portable"
    digest = engram_shell("graph", "digest", str(REFERENCE_GRAPH)).stdout.strip()
    assert digest == index_digest("agentGraphs", "product-delivery")
    broken = graph()
    broken["limits"]["maxFanout"] = 1
    lint = engram_shell("graph", "lint", str(_write(tmp_path / "b.json", broken)))
    assert lint.returncode == 1
    assert "engram.graph.route-fanout" in lint.stdout
    unsigned = engram_shell("graph", "verify", str(source))
    assert unsigned.returncode == 1
    assert "unsigned" in unsigned.stdout
    bad = engram_shell("graph", "lint", str(tmp_path / "missing.json"))
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: usage:")


@pytest.mark.req("engram.graph.cli", "engram.graph.workflow-resolution")
def test_workflows_folder_resolves_pins(tmp_path: Path, engram_shell: Shell) -> None:
    folder = tmp_path / "cals"
    folder.mkdir()
    shutil.copy(REFERENCE_CAL, folder / "ship-a-feature.cal.json")
    lint = engram_shell("graph", "lint", str(REFERENCE_GRAPH), "--workflows", str(folder), "--json")
    report = json.loads(lint.stdout)
    assert lint.returncode == 1
    assert [(e["rule"], e["path"]) for e in report["errors"]] == [
        ("engram.graph.workflow-resolution", "$.loops[0].workflowRef")
    ]
    assert "research-council" in report["errors"][0]["message"]


@pytest.mark.req("engram.graph.inspect")
def test_inspect_text_tree_and_card(tmp_path: Path, engram_shell: Shell) -> None:
    tree = engram_shell("graph", "inspect", str(REFERENCE_GRAPH))
    assert tree.returncode == 0, tree.stderr
    for text in (
        "Product Owner [product-owner] mixed (1..1)",
        "stewards product-intent, delivery-brief, product-decision",
        "→ direct Developer team [must]: delivery-brief; expects delivery-status via "
        "developers-report-po within 1 d",
        "delivery-loop (acx-workflow) → workflow io.github.lboel/ship-a-feature@1.0.0",
        "Developer team ⇐ architect, builder, reviewer",
        "product-steering (steward-synthesis), steward Product Owner",
        "⇒ product-decision (≤ 2 round(s), ≤ 1 h wait)",
        "portable by io.github.lboel",
    ):
        assert text in tree.stdout, text
    card = json.loads(engram_shell("graph", "inspect", str(REFERENCE_GRAPH), "--json").stdout)
    assert card["intents"] == ["advise", "direct", "report", "request"]
    assert [a["id"] for a in card["actors"]] == ["product-owner", "developers", "researchers"]
    assert card["digest"] == index_digest("agentGraphs", "product-delivery")


@pytest.mark.req("engram.graph.inspect")
def test_inspect_draws_dot_and_svg(tmp_path: Path, engram_shell: Shell) -> None:
    dot = engram_shell("graph", "inspect", str(REFERENCE_GRAPH), "--format", "dot")
    assert dot.returncode == 0
    assert dot.stdout.startswith("digraph agent_graph {")
    for node in ('"actor:product-owner"', '"loop:delivery-loop"', '"convergence:product-steering"'):
        assert node in dot.stdout
    if shutil.which("dot") is None:
        pytest.skip("Graphviz dot is not installed (.ci/run installs it)")
    out = tmp_path / "team.svg"
    svg = engram_shell("graph", "inspect", str(REFERENCE_GRAPH), "--format", "svg", "-o", str(out))
    assert svg.returncode == 0, svg.stderr
    root = ET.fromstring(out.read_bytes())  # noqa: S314 - our own dot output
    assert root.tag == f"{SVG}svg"
    texts = {"".join(t.itertext()) for t in root.iter(f"{SVG}text")}
    for label in ("Product Owner", "Developer team", "Research council", "delivery-loop",
                  "workflow ship-a-feature 1.0.0", "product-steering", "◆ Delivery brief",
                  "direct · must", "Delivery brief", "⇒ Product decision"):  # fmt: skip
        assert label in texts, label
    titles = {"".join(t.itertext()) for t in root.iter(f"{SVG}title")}
    assert "actor:product-owner->actor:developers" in titles
    assert "convergence:product-steering->actor:product-owner" in titles


@pytest.mark.req("engram.graph.inspect")
def test_inspect_refuses_an_invalid_graph(tmp_path: Path, engram_shell: Shell) -> None:
    broken = graph()
    broken["routes"][0]["to"] = ["ghost"]
    result = engram_shell("graph", "inspect", str(_write(tmp_path / "x.json", broken)))
    assert result.returncode == 1
    assert "engram graph lint" in result.stderr
    assert result.stderr.count("\n") == 1
