"""Piped or redirected, the tables of the ACX document commands never break an id (issue 32):
``engram workflow lint`` and ``graph lint`` folded cells at 160 columns, so a long rule message
or node id was cut mid-word across lines that grep then missed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engram.cli import cli, run_cli
from engram.core.jsonio import dumps_text

LONG_FROM = "build-" + "a" * 150
LONG_TO = "nowhere-" + "b" * 120


@pytest.mark.req("engram.cli.tables-unbroken")
@pytest.mark.parametrize("kind", ["workflow", "graph"])
def test_a_piped_lint_table_keeps_every_row_on_one_line(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    starter = tmp_path / f"starter.{kind}.json"
    assert run_cli(cli, [kind, "new", str(starter)]) == 0
    document = json.loads(starter.read_text(encoding="utf-8"))
    document["id"] = LONG_FROM  # an id far wider than any terminal, echoed in the message
    document["description"] = LONG_TO * 2
    bad = tmp_path / f"bad.{kind}.json"
    bad.write_text(dumps_text(document), encoding="utf-8")
    capsys.readouterr()
    assert run_cli(cli, [kind, "lint", str(bad), "--publish"]) == 1
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if re.search(r"engram\.[a-z]+\.", line)]
    assert rows, out
    # Each issue is one line; a folded row would continue on a line without a rule id.
    body = [line for line in out.splitlines() if line.startswith("│")]
    assert len(body) == len(rows), out
    assert any(LONG_FROM in line for line in rows), out
