"""Registries for the tests: the reference's registry files beside artifacts engram signed.

The reference's files are copied from ``tests/vectors/acx-reference/registry`` (its own
``index.json`` removed: it also lists a cartridge not copied here); our own cartridge, workflow
and Agent Graph (pinning that workflow) are signed here with a fresh key.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acx_json_kit import graph, workflow
from engram.cartridge import Cartridge, ExportOptions, package_contents, verify, write
from engram.core.keys import PrivateKey
from engram.graph import sign_graph
from engram.registry import build_index
from engram.workflow import sign_workflow, workflow_digest

TESTS = Path(__file__).resolve().parents[1]
REFERENCE_REGISTRY = TESTS / "vectors/acx-reference/registry"
REFERENCE_INDEX = REFERENCE_REGISTRY / "index.json"
SAMPLE_PACKAGE = TESTS / "vectors/acx-reference/examples/sample-agent-package"
NOW = datetime(2026, 9, 1, tzinfo=UTC)
PUBLISHER = "io.github.example"


@dataclass
class Registry:
    root: Path
    key: PrivateKey
    workflow: Path
    graph: Path
    cartridge: Path

    def index(self) -> bytes:
        build = build_index(self.root, now=NOW)
        assert build.ok, [str(p) for p in build.problems]
        (self.root / "index.json").write_bytes(build.to_bytes())
        return build.to_bytes()


def dump(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")  # noqa: TID251 - a file under test
    return path


def signed_workflow(key: PrivateKey, **changes: Any) -> dict[str, Any]:
    document = {**workflow(), **changes}
    return sign_workflow(document, key, publisher_id=PUBLISHER, signed_at=NOW)


def signed_graph(key: PrivateKey, pinned: dict[str, Any], **changes: Any) -> dict[str, Any]:
    document = {**graph(), **changes}
    document["loops"][0]["workflowRef"] = {
        "publisherId": PUBLISHER,
        "id": pinned["id"],
        "version": pinned["version"],
        "digest": workflow_digest(pinned),
    }
    return sign_graph(document, key, publisher_id=PUBLISHER, signed_at=NOW)


def cartridge(
    folder: Path, key: PrivateKey, *, version: str = "1.0.0", name: str = "agent.acx"
) -> Path:
    contents, _ = package_contents(
        SAMPLE_PACKAGE, ExportOptions("io.github.acme", NOW, artifact_version=version)
    )
    out = folder / name
    write(out, contents, key=key, signed_at=NOW)
    return out


def cartridge_path(acx: Path) -> str:
    with Cartridge.open(acx) as opened:
        report = verify(opened)
    publisher, artifact, version = report.publisher_id, report.artifact_id, report.artifact_version
    return f"cartridges/{publisher}/{artifact}/{version}/cartridge.acx"


def make_registry(tmp: Path, *, with_reference: bool = True) -> Registry:
    root = tmp / "registry"
    if with_reference:
        shutil.copytree(REFERENCE_REGISTRY, root)
        (root / "index.json").unlink()
    root.mkdir(exist_ok=True)
    key = PrivateKey.generate()
    flow = signed_workflow(key)
    workflow_file = dump(root / f"cals/{PUBLISHER}/review-loop/1.2.0.cal.json", flow)
    graph_file = dump(
        root / f"graphs/{PUBLISHER}/team-graph/1.0.0.agent-graph.json",
        signed_graph(key, flow, id="team-graph", version="1.0.0"),
    )
    built = cartridge(tmp, key)
    target = root / cartridge_path(built)
    target.parent.mkdir(parents=True)
    shutil.move(built, target)
    return Registry(root, key, workflow_file, graph_file, target)


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()
