"""Hostile files at every ACX JSON entry point (issue 15, "Tests": the hostile-input suite).

Entry points: ``workflow lint | verify | inspect | digest | ready``, ``graph lint | verify |
inspect | digest``, ``cartridge level verify`` (the credential, ``--status-list FILE``,
``--did-document``), ``registry index | check`` (a hostile document inside the registry), and the
trust registry each of them loads (``--registry`` / ``--trust``). Inputs: an integer literal of
5,000 digits, 100,000 levels of nesting, duplicate members, a file far larger than any limit
(sparse, so the test costs no disk), and a FIFO nobody writes to (which blocks a naive ``read``
forever).

Each run is a subprocess under an address-space limit (``RLIMIT_AS``) and a wall-clock timeout;
it must answer with an exit code of 1 or 2 and a readable refusal (``error: ...`` on stderr, or
a report on stdout naming the problem), never a traceback, never the hostile bytes echoed.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acx_json_kit import NOW, REFERENCE, REFERENCE_GRAPH, registry_for, workflow
from engram.core.keys import PrivateKey
from engram.workflow import sign_workflow
from process_kit import run_measured

MEMORY_LIMIT = 1536 * 1024**2
HUGE_BYTES = 3 * 1024**3  # larger than the address-space limit: reading it whole cannot work
TIMEOUT = 60
DIGITS = "9" * 5000


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def make_hostile(kind: str, path: Path) -> Path:
    """Write the hostile input ``kind`` at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "huge":
        with path.open("wb") as out:
            out.write(b'{"a": "')
            out.truncate(HUGE_BYTES)  # sparse: no disk is used for the hole
    else:
        path.write_text(TEXTS[kind])
    return path


TEXTS = {
    "big-integer": f'{{"schemaVersion": "acx.cal/1", "n": {DIGITS}}}',
    "deep-nesting": "[" * 100_000 + "]" * 100_000,
    "duplicate-keys": '{"schemaVersion": "acx.cal/1", "id": "a", "id": "b"}',
}
KINDS = [*TEXTS, "huge", "fifo"]


DRIVER = Path(__file__).resolve().parent / "cli_driver.py"
PEAK: dict[str, int] = {}


def run_all(runs: list[list[str]], cwd: Path) -> list[dict[str, Any]]:
    """Every command line in one child under the memory limit (cli_driver.py), each timed."""
    plan = cwd / "runs.json"
    plan.write_text(json.dumps(runs))  # noqa: TID251 - a test input file
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "OPENAI_"))}
    env["ENGRAM_HOME"] = str(cwd / "home")
    done, PEAK["children"] = run_measured(
        [sys.executable, str(DRIVER), str(plan), str(TIMEOUT)],
        timeout=TIMEOUT * len(runs) + 120,
        preexec_fn=_cap,
        cwd=cwd,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: list[dict[str, Any]] = json.loads(done.stdout)
    return results


def _refused_cleanly(label: str, run: dict[str, Any]) -> None:
    out, err, code = run["stdout"], run["stderr"], run["code"]
    detail = f"{label}: exit {code}\nout {out[:600]!r}\nerr {err[-600:]!r}\n{run['crash']}"
    assert not run["hung"], f"{label}: still running after {TIMEOUT} s"
    assert run["crash"] is None, detail
    assert code in (1, 2), detail
    assert "error: usage" not in err, detail  # the hostile input was read, not the arguments
    assert "Traceback" not in out + err, detail
    assert DIGITS[:100] not in out + err, detail
    if code == 2 or err.strip():
        assert err.startswith("error: "), detail
        assert err.count("\n") == 1, detail
    else:
        assert out.strip(), detail  # a report that says what failed


@pytest.fixture(scope="module")
def material(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Hostile files, a good signed workflow and graph, and a good trust registry."""
    root = tmp_path_factory.mktemp("hostile-acx")
    paths = {kind: make_hostile(kind, root / "hostile" / f"{kind}.json") for kind in KINDS}
    key = PrivateKey.generate()
    signed = sign_workflow(workflow(), key, publisher_id="io.github.example", signed_at=NOW)
    good = root / "good.cal.json"
    good.write_text(json.dumps(signed))  # noqa: TID251 - a test input file
    registry = root / "trust.json"
    registry.write_bytes(registry_for(key.public_key().to_pem().decode(), "io.github.example"))
    paths["good-workflow"] = good
    paths["good-graph"] = REFERENCE_GRAPH
    paths["good-registry"] = registry
    paths["good-credential"] = REFERENCE / "proofs" / "level-credential.example.json"
    paths["registry"] = root / "registry"
    shutil.copytree(REFERENCE / "registry", paths["registry"])
    paths["root"] = root
    return paths


ENTRY_POINTS: dict[str, tuple[str, ...]] = {
    # "{H}" is the hostile file; "{name}" another file of ``material``.
    "workflow lint": ("workflow", "lint", "{H}"),
    "workflow verify": ("workflow", "verify", "{H}"),
    "workflow inspect": ("workflow", "inspect", "{H}"),
    "workflow digest": ("workflow", "digest", "{H}"),
    "workflow ready": ("workflow", "ready", "{H}"),
    "workflow verify --registry": ("workflow", "verify", "{good-workflow}", "--registry", "{H}"),
    "workflow ready --registry": ("workflow", "ready", "{good-workflow}", "--registry", "{H}"),
    "graph lint": ("graph", "lint", "{H}"),
    "graph verify": ("graph", "verify", "{H}"),
    "graph inspect": ("graph", "inspect", "{H}"),
    "graph digest": ("graph", "digest", "{H}"),
    "graph verify --registry": ("graph", "verify", "{good-graph}", "--registry", "{H}"),
    "level verify": ("cartridge", "level", "verify", "{H}"),
    "level verify --status-list": (
        "cartridge", "level", "verify", "{good-credential}", "--status-list", "{H}",
    ),
    "level verify --did-document": (
        "cartridge", "level", "verify", "{good-credential}", "--did-document", "{H}",
    ),
    "level verify --registry": (
        "cartridge", "level", "verify", "{good-credential}", "--registry", "{H}",
    ),
    "registry index --trust": ("registry", "index", "{registry}", "--trust", "{H}"),
    "registry check --trust": (
        "registry", "check", "{registry}", "--no-history", "--trust", "{H}",
    ),
}  # fmt: skip


def _args(entry: str, material: dict[str, Path], hostile: Path) -> list[str]:
    out = []
    for arg in ENTRY_POINTS[entry]:
        if arg == "{H}":
            out.append(str(hostile))
        elif arg.startswith("{"):
            out.append(str(material[arg.strip("{}")]))
        else:
            out.append(arg)
    return out


@pytest.mark.req("engram.cli.acx-hostile-inputs")
def test_each_acx_entry_point_refuses_each_hostile_file_cleanly(
    material: dict[str, Path], record_property: Callable[[str, object], None]
) -> None:
    labels = [(entry, kind) for entry in sorted(ENTRY_POINTS) for kind in KINDS]
    runs = [_args(entry, material, material[kind]) for entry, kind in labels]
    # A hostile document inside a registry (each kind in its own copy): a finding, not a hang.
    for kind in KINDS:
        registry = material["root"] / f"registry-{kind}"
        shutil.copytree(REFERENCE / "registry", registry)
        published = registry / "cals/io.github.lboel/ship-a-feature/1.0.0.cal.json"
        published.unlink()
        make_hostile(kind, published)
        for verb in (["index"], ["check", "--no-history"]):
            labels.append((f"registry {verb[0]} (inside)", kind))
            runs.append(["registry", verb[0], str(registry), *verb[1:]])
    results = run_all(runs, material["root"])
    for (entry, kind), run in zip(labels, results, strict=True):
        _refused_cleanly(f"{entry} <{kind}>", run)
        if entry.endswith("(inside)"):
            assert "ship-a-feature" in run["stdout"] + run["stderr"], run  # names the file
    peak = PEAK["children"]
    record_property("peak_rss_kib", peak)
    print(f"\n{len(runs)} hostile runs; peak RSS of the child {peak // 1024} MiB")
    assert peak < MEMORY_LIMIT // 1024  # KiB: the address-space cap held (and was not needed)
