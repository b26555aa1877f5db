"""The settings (ENGRAM_HOME, ENGRAM_DATABASE_URL, ENGRAM_OTE, ENGRAM_TOKEN, ENGRAM_PROVIDER_URL,
...) are read once, at the CLI's edge, and passed in (issue 28): a command line run with an
environment given to run_cli sees that environment, not the process's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.cli import cli, run_cli


@pytest.mark.req("engram.cli.settings-at-the-edge")
def test_a_command_reads_the_environment_it_was_handed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    process_home = tmp_path / "process-home"
    monkeypatch.setenv("ENGRAM_HOME", str(process_home))
    monkeypatch.setenv("ENGRAM_PUBLIC_URL", "https://process.example")
    monkeypatch.delenv("ENGRAM_DATABASE_URL", raising=False)
    handed = {
        "ENGRAM_HOME": str(tmp_path / "handed-home"),
        "ENGRAM_DATABASE_URL": f"sqlite://{tmp_path / 'handed.db'}",
        "ENGRAM_PUBLIC_URL": "https://handed.example",
    }
    assert run_cli(cli, ["db", "migrate"], environ=handed) == 0
    capsys.readouterr()
    assert run_cli(cli, ["demo", "--json"], environ=handed) == 0
    demo = json.loads(capsys.readouterr().out)
    assert demo["url"] == "https://handed.example"
    assert Path(demo["token_file"]).parent == tmp_path  # beside handed.db
    assert (tmp_path / "handed.db").is_file()
    assert not process_home.exists()


@pytest.mark.req("engram.cli.settings-at-the-edge")
def test_the_provider_and_token_come_from_the_handed_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ENGRAM_PROVIDER_URL", raising=False)
    monkeypatch.delenv("ENGRAM_TOKEN", raising=False)
    # No provider anywhere: the usage error names the option.
    assert run_cli(cli, ["context", "fetch"], environ={}) == 2
    assert "Missing option '--provider'" in capsys.readouterr().err
    # The handed environment names both; the fetch then fails on the (unreachable) provider,
    # not on a missing option: the settings were read from what run_cli was given.
    handed = {"ENGRAM_PROVIDER_URL": "http://127.0.0.1:9", "ENGRAM_TOKEN": "eng_x"}
    code = run_cli(cli, ["context", "fetch"], environ=handed)
    err = capsys.readouterr().err
    assert code == 1, err
    assert "Missing option" not in err
    assert "127.0.0.1:9" in err
