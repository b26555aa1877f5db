"""The worked example (docs/worked-example.md: package -> export -> verify -> push -> level ->
workflow -> graph -> registry) works as written (issue 32).

Every ``sh`` block runs, in order, in one bash with ``set -euo pipefail``, with a fresh ``HOME``,
against the real ``engram`` on PATH. The page pushes to an OCI registry on ``localhost:5000``;
the test starts the small OCI registry of ``tests/oci/referrers_registry.py`` (which imports
nothing of engram) on a free loopback port and points the page's lines at it (the only change
made to the page's text). A block preceded by ``<!-- worked-example: not run (reason) -->`` is
skipped.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from docs_kit import REPO

# tests/oci is not on the type checker's path (each test folder is checked on its own).
sys.path.insert(0, str(REPO / "tests" / "oci"))
ReferrersRegistry: Any = importlib.import_module("referrers_registry").ReferrersRegistry

PAGE = REPO / "docs" / "worked-example.md"
BLOCK = re.compile(r"(?P<before>[^\n]*)\n```sh\n(?P<body>.*?)\n```", re.S)
NOT_RUN = "<!-- worked-example: not run"
PAGE_REGISTRY = "localhost:5000"


def blocks() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    return [m["body"] for m in BLOCK.finditer(text) if not m["before"].startswith(NOT_RUN)]


@pytest.mark.slow
@pytest.mark.req("engram.docs.worked-example-runs")
def test_every_block_of_the_worked_example_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    with ReferrersRegistry() as registry:
        script = ["set -euo pipefail"]
        script += [body.replace(PAGE_REGISTRY, registry.host) for body in blocks()]
        result = subprocess.run(
            ["bash", "-c", "\n".join(script)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        pushed = {repo for (repo, _tag) in registry.state.tags}
    assert result.returncode == 0, (
        f"stdout:\n{result.stdout[-4000:]}\nstderr:\n{result.stderr[-4000:]}"
    )
    out = result.stdout
    # What the page says the reader will see.
    assert "trust:    trusted" in out
    assert "ISSUED A DEMO LEVEL" in out
    assert {"acme/builder", "acme/reviewer"} <= pushed
    assert "ok  application/vnd.acx.level-attestation.v1" in out
    assert "not ready" not in out
    assert re.search(r"^ready", out, re.M), out[-2000:]
    work = tmp_path / "acme"
    assert (work / "registry" / "index.json").is_file()
    assert (work / "site" / "index.html").is_file()


@pytest.mark.req("engram.docs.worked-example-runs")
def test_the_worked_example_covers_every_step_and_says_why_a_block_is_not_run() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.startswith(NOT_RUN):
            assert re.fullmatch(r"<!-- worked-example: not run \(.+\) -->", line), line
    commands = "\n".join(blocks())
    for step in (
        "cartridge new",
        "cartridge export",
        "cartridge verify",
        "cartridge push",
        "cartridge level prove",
        "workflow ready",
        "graph sign",
        "registry index",
    ):
        assert f"engram {step}" in commands, step  # fmt: skip
