"""The CLI's error boundary (docs/spec/cli.md): a bad command line is one line on stderr and
exit 2, on every command group, never click's four-line usage block or a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engram.cli import cli, run_cli


@pytest.mark.req("engram.cli.errors-one-line")
@pytest.mark.parametrize(
    ("args", "command", "message"),
    [
        (["canonicalize", "{missing}"], "engram canonicalize", "No such file or directory"),
        (["keys", "retire"], "engram keys retire", "Missing argument 'KID'."),
        (["keys", "bogus"], "engram keys", "No such command 'bogus'."),
        (["db", "migrate", "--nope"], "engram db migrate", "No such option '--nope'."),
        (["context", "fetch", "--token", "t"], "engram context fetch", "'--provider'"),
        (["conformance", "verify", "{missing}"], "engram conformance verify", "does not exist"),
        (["conformance", "provider", "http://x"], "engram conformance provider", "'--token'"),
        (
            ["conformance", "provider", "http://x", "--token", "t", "--tier", "4"],
            "engram conformance provider",
            "'--tier': 4 is not in the range 1<=x<=3.",
        ),
    ],
)
def test_a_bad_command_line_is_one_line_and_exit_2(
    args: list[str],
    command: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ENGRAM_TOKEN", raising=False)
    monkeypatch.delenv("ENGRAM_PROVIDER_URL", raising=False)
    args = [a.replace("{missing}", str(tmp_path / "missing.json")) for a in args]
    assert run_cli(cli, args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: usage: ")
    assert captured.err.count("\n") == 1
    assert message in captured.err
    assert captured.err.endswith(f" (see: {command} --help)\n")


@pytest.mark.req("engram.cli.errors-one-line")
def test_the_installed_entry_point_reports_a_missing_file_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    run = subprocess.run(
        [sys.executable, "-c", "from engram.cli import main; main()", "canonicalize", str(missing)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert run.returncode == 2
    assert run.stderr == (
        f"error: usage: Invalid value for '[SOURCE]': '{missing}': No such file or directory "
        "(see: engram canonicalize --help)\n"
    )


@pytest.mark.req("engram.cli.errors-one-line")
def test_a_group_run_bare_prints_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(cli, ["keys"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Usage: engram keys [OPTIONS] COMMAND [ARGS]...")
    assert "rotate" in err
