"""Hostile documents at the entry points of issue 31, and the limits of docs/spec/limits.md §2.

Command-line cases run in a child process each: one ``error: …`` line (or a report naming the
problem), no traceback, within 10 s and 300 MB of the child's own peak RSS (``peak_kit``). The
library entry points that are not commands (the LangGraph store's ``search(filter=…)``, the PAM
reader) run in a child too, through a few lines that print the error as the CLI would.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from acx_json_kit import REFERENCE, workflow
from engram.memory import default_manifest_text
from peak_kit import run_python_peak

WALL_BOUND = 10.0
RSS_BOUND_KIB = 300 * 1024
CLI = "import sys; from engram.cli import cli, run_cli; sys.exit(run_cli(cli, sys.argv[1:]))"
POLICY = REFERENCE / "policy" / "ada-ridge-1.0.0.loop-context-policy.json"
CREDENTIAL = REFERENCE / "proofs" / "level-credential.example.json"

LIBRARY = """
import json, sys
from engram.errors import EngramError
kind, path = sys.argv[1], sys.argv[2]
try:
    if kind == "langgraph-filter":
        from engram.integrations.langgraph import EngramStore
        from engram.store import open_store
        store = EngramStore(open_store("memory://"))
        store.put(("ns",), "k", {"a": 1})
        deep = []
        for _ in range(5000):  # built here: json itself cannot read or write 5,000 levels
            deep = [deep]
        store.search(("ns",), filter={"a": deep})
    else:
        from engram.transfer import check_pam_document
        with open(path) as f:
            check_pam_document(json.load(f))
except (EngramError, ValueError) as e:
    print(f"error: {getattr(e, 'message', e)}", file=sys.stderr)
    sys.exit(1)
"""


def _nested_not(depth: int) -> dict[str, object]:
    condition: dict[str, object] = {"always": True}
    for _ in range(depth):
        condition = {"not": condition}
    return condition


def _hostile_workflow(path: Path) -> Path:
    document = workflow()
    document["edges"][3]["when"] = _nested_not(180)
    path.write_text(json.dumps(document))  # noqa: TID251 - a test input file
    return path


def _billion_laughs() -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def _deep_block(levels: int) -> str:
    return "".join(" " * i + f"k{i}:\n" for i in range(levels)) + " " * levels + "v\n"


def _pam(memories: list[dict[str, object]]) -> dict[str, object]:
    return {"schema": "portable-ai-memory", "schema_version": "1.0", "memories": memories}


YAML = {
    "flow-1000": "a: " + "[" * 1000 + "]" * 1000 + "\n",
    "integer-5001": "tokenSpend:\n  dailyPerAgent: " + "9" * 5001 + "\n",
    "block-300": _deep_block(300),
    "aliases-1e9": _billion_laughs(),
}
JSON_DOCS: dict[str, object] = {
    "langgraph-filter": {},  # the child builds the 5,000-deep filter itself
    "pam-memories": _pam([{"id": f"m{i}"} for i in range(50_001)]),
    "pam-content": _pam([{"id": "m", "content": "x" * (20 << 20)}]),
    "pam-id": _pam([{"id": "i" * 1_000_000, "content": "x"}]),
}
# What `engram memory import` reads a memory at a time: the values cap applies to each memory,
# and to the members it holds whole together (those past the cap are not kept).
PAM_FILES: dict[str, object] = {
    "member-values": _pam([{"id": "m", "metadata": {"n": [None] * 1_000_001}}]),
    "held-values": {**_pam([]), **{f"x{i}": [[None] * 400_000] for i in range(4)}},
}

CASES = [
    # (name, how to build the argv from the case folder, a fragment of the one error line)
    ("workflow lint", "workflow", "nests deeper than 64 levels"),
    ("workflow lint --publish", "workflow", "nests deeper than 64 levels"),
    ("workflow verify", "workflow", "nests deeper than 64 levels"),
    ("policy --host-limits flow-1000", "yaml", "nests deeper than 64 levels"),
    ("policy --host-limits integer-5001", "yaml", "number longer than 64 digits"),
    ("policy --host-limits block-300", "yaml", "indented more than 128 columns"),
    ("policy --host-limits aliases-1e9", "yaml", "more than 1000000 values"),
    ("level verify proofValue-200000", "credential", "longer than 256 characters"),
    ("library langgraph-filter", "library", "nests deeper than 64 levels"),
    ("library pam-memories", "library", "more than 50000 memories"),
    ("library pam-content", "library", "content: longer than 100000 characters"),
    ("library pam-id", "library", "id: longer than 256 characters"),
    ("memory import member-values", "pam-file", "$.memories[0] has more than 1000000 values"),
    ("memory import held-values", "pam-file", "the PAM document has more than 1000000 values"),
]


def _child(name: str, kind: str, folder: Path) -> tuple[str, list[str]]:
    """The code the child runs and its arguments."""
    case = name.rsplit(" ", 1)[-1]
    if kind == "workflow":
        hostile = str(_hostile_workflow(folder / "hostile.cal.json"))
        return CLI, [*name.split(" "), hostile]
    if kind == "yaml":
        limits = folder / "resource-limits.yaml"
        limits.write_text(YAML[case])
        return CLI, ["cartridge", "policy", str(POLICY), "--host-limits", str(limits)]
    if kind == "credential":
        credential = json.loads(CREDENTIAL.read_text())
        credential["proof"]["proofValue"] = "z" + "2" * 200_000
        credential.pop("credentialStatus", None)  # no status host to reach: the proof is the case
        path = folder / "credential.json"
        path.write_text(json.dumps(credential))  # noqa: TID251 - a test input file
        return CLI, ["cartridge", "level", "verify", str(path)]
    path = folder / f"{case}.json"
    if kind == "pam-file":
        path.write_text(json.dumps(PAM_FILES[case]))  # noqa: TID251 - a test input file
        ote = folder / "ote.toml"
        ote.write_text(default_manifest_text(), encoding="utf-8")
        seat = ["--ote", str(ote), "--database", f"sqlite://{folder / 'seat.db'}"]
        return CLI, ["memory", "import", "--format", "pam", str(path), *seat]
    path.write_text(json.dumps(JSON_DOCS[case]))  # noqa: TID251 - a test input file
    return LIBRARY, [case, str(path)]


@pytest.mark.req(
    "engram.limits.document-depth",
    "engram.limits.number-length",
    "engram.limits.yaml-shape",
    "engram.limits.document-elements",
    "engram.limits.base58-length",
    "engram.limits.pam-caps",
    "engram.pam.stream-caps",
)
@pytest.mark.parametrize(("name", "kind", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_hostile_document_gets_one_error_line_in_bounded_time_and_memory(
    name: str, kind: str, expected: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "OPENAI_"))}
    env["ENGRAM_HOME"] = str(tmp_path / "home")
    code, args = _child(name, kind, tmp_path)
    started = time.monotonic()
    done, rss_kib = run_python_peak(code, args, timeout=60, cwd=tmp_path, env=env)
    elapsed = time.monotonic() - started
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-2000:]
    assert done.returncode in (1, 2), (
        name,
        done.returncode,
        done.stderr[-500:],
        done.stdout[-500:],
    )
    said = done.stderr.strip() or done.stdout.strip()
    if done.stderr.strip():
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]
        assert done.stderr.startswith("error: "), done.stderr[-500:]
    assert expected in said, (name, said[-500:])
    line = next(x for x in said.splitlines() if expected in x)
    print(f"\n{name}: {elapsed:.2f} s, {rss_kib // 1024} MiB: {line[:160]}")
    assert elapsed < WALL_BOUND, (name, elapsed)
    assert 0 < rss_kib < RSS_BOUND_KIB, (name, rss_kib)
