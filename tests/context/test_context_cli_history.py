"""``engram belief history`` in words (issue 32, point 5): a creation shows its text, a
correction the change and who proposed it, and a deleted belief says its text was erased,
where it used to print ``None -> 'Swim.'`` and ``None -> None``."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.cli import cli, run_cli
from engram.context import propose_correction
from engram.core.clock import SystemClock
from engram.store import open_store


def _out(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert run_cli(cli, list(args)) == 0
    return capsys.readouterr().out.strip()


@pytest.mark.req("engram.cli.belief-history-words")
def test_history_says_what_changed_and_never_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite://{tmp_path / 'engram.db'}"
    db = ["--db", url]
    sid = _out(capsys, "subject", "create", "--name", "Ada", *db)
    add = ["--subject", sid, "--category", "goal", "--statement", "Swim."]
    bid = _out(capsys, "belief", "add", *add, *db)
    store = open_store(url)
    try:
        proposal = propose_correction(store, SystemClock(), sid, bid, "Run.", "my-bot/1.0")
    finally:
        store.close()
    _out(capsys, "correction", "confirm", "--subject", sid, proposal.id, *db)

    history = ["belief", "history", "--subject", sid, "--belief", bid, *db]
    corrected, created = _out(capsys, *history).splitlines()
    assert created.startswith("v1 created ")
    assert created.endswith(": 'Swim.'")
    assert corrected.startswith("v2 corrected ")
    assert corrected.endswith(f": 'Swim.' -> 'Run.' (correction {proposal.id} from my-bot/1.0)")

    _out(capsys, "belief", "delete", "--subject", sid, "--belief", bid, *db)
    lines = _out(capsys, *history).splitlines()
    assert [line.split()[1] for line in lines] == ["deleted", "corrected", "created"]
    assert lines[0].endswith("(every version's text erased)")
    assert lines[2].endswith("(text erased when the belief was deleted)")
    assert not [line for line in lines if "None" in line]
