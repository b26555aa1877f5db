"""A missing input file is a usage error, exit 2, in every command (docs/spec/cli.md "errors
and exit codes"; issue 32, point 5): commands that open a path themselves used to answer
``error: No such file or directory: PATH`` with exit 1 where click's FILE arguments said
``error: usage: …`` with exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.cli import cli, run_cli


@pytest.mark.req("engram.cli.missing-file-exit-2")
@pytest.mark.parametrize(
    "command",
    [
        ["memory", "import"],
        ["memory", "import", "--format", "pam"],
        ["distill"],
        ["canonicalize"],
        ["cartridge", "verify"],
        ["ote", "check"],
    ],
)
def test_a_missing_input_file_is_a_usage_error_with_exit_2(
    command: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ENGRAM_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".engram").mkdir()
    assert run_cli(cli, ["default-ote"]) == 0
    (tmp_path / ".engram" / "ote.toml").write_text(capsys.readouterr().out)
    missing = tmp_path / "missing.json"
    assert run_cli(cli, [*command, str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert str(missing) in err or "missing.json" in err
    assert err.startswith(("error: usage: ", "error: invalid_manifest: "))


@pytest.mark.req("engram.cli.missing-file-exit-2")
def test_the_line_names_the_path_and_the_commands_help(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path / "home"))
    missing = tmp_path / "memories.json"
    assert run_cli(cli, ["memory", "import", "--format", "pam", str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"error: usage: no such file or directory: {missing} (see: engram memory import --help)\n"
    )


REFERENCE_ACX = next(
    (Path(__file__).resolve().parents[1] / "vectors" / "acx-reference").rglob("*.acx")
)


@pytest.mark.req("engram.cli.missing-file-exit-2")
@pytest.mark.parametrize(
    "command",
    [
        ["cartridge", "level", "verify", "{credential}", "--status-list", "{missing}"],
        ["cartridge", "level", "verify", "{credential}", "--status-list", "file://{missing}"],
        ["workflow", "ready", "{credential}", "--status-list", "{missing}"],
        [
            "cartridge",
            "attach-level",
            str(REFERENCE_ACX),
            "localhost:9/x:1",
            "{credential}",
            "--status-list",
            "{missing}",
        ],
    ],
)
def test_a_missing_status_list_file_is_a_usage_error_not_a_failed_check(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 32: `--status-list FILE` naming no file was read as a status list that could not be
    # retrieved: the verdict "not verified", exit 1, instead of a mistyped path, exit 2.
    credential = tmp_path / "level.json"
    credential.write_text("{}")
    missing = tmp_path / "missing-list.json"
    args = [a.format(credential=credential, missing=missing) for a in command]
    assert run_cli(cli, args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: usage: ")
    assert err.count("\n") == 1
    assert "missing-list.json" in err
