"""The options every command shares (``engram.cli._common``; docs/spec/cli.md "Options every
command shares"): a mistyped ``--db`` directory is refused, tokens come from the environment or
a file as well as the command line, and ``token create`` shows the id ``token revoke`` needs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest

from engram.cli import cli, run_cli
from engram.cli.internals import token_option
from engram.core.canonical import parse_strict

ENGRAM = [sys.executable, "-c", "from engram.cli import main; main()"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(cli, list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.req("engram.cli.db-missing-directory")
@pytest.mark.parametrize(
    "args",
    [
        ["subject", "list"],
        ["token", "list", "--subject", "s"],
        ["keys", "list"],
        ["db", "status"],
        ["demo"],
        ["review-link"],
    ],
)
def test_a_database_in_a_missing_directory_is_refused_and_nothing_is_created(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo" / "deeper" / "engram.db"
    code, out, err = _run(capsys, *args, "--db", str(missing))
    assert (code, out) == (2, "")
    assert err == (
        f"error: invalid_request: no such directory for the database: {missing.parent} (check "
        f"the path; `engram db migrate --db {missing}` creates a new store there)\n"
    )
    assert not (tmp_path / "typo").exists()


@pytest.mark.req("engram.cli.db-missing-directory")
def test_the_memory_commands_refuse_it_too(tmp_path: Path) -> None:
    ote = tmp_path / "ote.toml"
    seed = subprocess.run([*ENGRAM, "default-ote"], check=True, capture_output=True, text=True)
    ote.write_text(seed.stdout, encoding="utf-8")
    missing = tmp_path / "typo" / "engram.db"
    done = subprocess.run(
        [
            *ENGRAM,
            "status",
            "--ote",
            str(ote),
            "--database",
            str(missing),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: invalid_request: no such directory for the database")
    assert not missing.parent.exists()


@pytest.mark.req("engram.cli.db-missing-directory")
def test_the_environment_variable_is_held_to_the_same_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_DATABASE_URL", f"sqlite://{tmp_path / 'nope' / 'engram.db'}")
    code, _, err = _run(capsys, "subject", "list")
    assert code == 2
    assert "no such directory for the database" in err
    assert not (tmp_path / "nope").exists()


@pytest.mark.req("engram.cli.db-missing-directory")
def test_db_migrate_creates_the_store_and_its_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = tmp_path / "new" / "place" / "engram.db"
    code, _, err = _run(capsys, "db", "migrate", "--db", str(new))
    assert code == 0, err
    assert new.is_file()
    code, out, _ = _run(capsys, "subject", "list", "--db", str(new))
    assert (code, out) == (0, "no subjects\n")


@pytest.mark.req("engram.cli.db-missing-directory")
def test_the_default_home_is_still_created_for_a_first_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ENGRAM_DATABASE_URL", raising=False)
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path / "fresh-home"))
    code, out, _ = _run(capsys, "subject", "list")
    assert (code, out) == (0, "no subjects\n")
    assert (tmp_path / "fresh-home" / "engram.db").is_file()


@pytest.mark.req("engram.cli.token-id-shown")
def test_token_create_shows_the_id_that_token_revoke_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "t.db")
    _, sid, _ = _run(capsys, "subject", "create", "--name", "Ada", "--db", db)
    sid = sid.strip()
    code, out, err = _run(capsys, "token", "create", "--subject", sid, "--ttl", "1h", "--db", db)
    assert code == 0
    token = out.strip()
    assert token.startswith("eng_")
    assert "\n" not in token
    token_id = err.split()[2]
    assert err.startswith(f"token id {token_id} (for `engram token revoke --subject {sid} ")
    assert token not in err

    code, out, _ = _run(
        capsys, "token", "revoke", "--subject", sid, "--token-id", token_id, "--db", db
    )
    assert (code, out) == (0, f"revoked {token_id}\n")

    code, out, _ = _run(capsys, "token", "create", "--subject", sid, "--json", "--db", db)
    made = parse_strict(out)
    assert isinstance(made, dict)
    assert str(made["token_id"]).startswith("tok_")
    assert made["permissions"] == ["correct", "read"]


# A stand-in command with the shared token options, to pin down their precedence exactly.
@click.group()
def probe_group() -> None:
    pass


@probe_group.command("show")
@token_option(envvar="PROBE_TOKEN", required=True, help="Bearer token")
@token_option("admin_token", envvar="PROBE_ADMIN_TOKEN", required=False, help="Admin token")
def show_command(token: str, admin_token: str | None) -> None:
    click.echo(f"{token} {admin_token}")


@pytest.fixture(autouse=True)
def _no_probe_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PROBE_TOKEN", "PROBE_TOKEN_FILE", "PROBE_ADMIN_TOKEN", "PROBE_ADMIN_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)


def _show(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(probe_group, ["show", *args])
    out, err = capsys.readouterr()
    return code, out.strip(), err


@pytest.mark.req("engram.cli.token-from-env-or-file")
def test_a_token_comes_from_the_command_line_a_file_or_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from_file = tmp_path / "token"
    from_file.write_text("  eng_file \n", encoding="utf-8")
    env_file = tmp_path / "env-token"
    env_file.write_text("eng_envfile\n", encoding="utf-8")

    assert _show(capsys, "--token", "eng_arg")[:2] == (0, "eng_arg None")
    assert _show(capsys, "--token-file", str(from_file))[:2] == (0, "eng_file None")
    monkeypatch.setenv("PROBE_TOKEN_FILE", str(env_file))
    assert _show(capsys)[:2] == (0, "eng_envfile None")
    monkeypatch.setenv("PROBE_TOKEN", "eng_env")
    assert _show(capsys)[:2] == (0, "eng_env None")  # the variable beats the variable's file
    assert _show(capsys, "--token-file", str(from_file))[:2] == (0, "eng_file None")
    assert _show(capsys, "--token", "eng_arg")[:2] == (0, "eng_arg None")
    monkeypatch.setenv("PROBE_ADMIN_TOKEN_FILE", str(from_file))
    assert _show(capsys)[:2] == (0, "eng_env eng_file")


@pytest.mark.req("engram.cli.token-from-env-or-file")
def test_token_sources_fail_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    two_lines = tmp_path / "two"
    two_lines.write_text("eng_a\neng_b\n", encoding="utf-8")
    token = tmp_path / "t"
    token.write_text("eng_a", encoding="utf-8")

    code, _, err = _show(capsys)
    assert code == 2
    assert err.startswith("error: usage: Missing option '--token' (or --token-file, $PROBE_TOKEN")
    code, _, err = _show(capsys, "--token", "x", "--token-file", str(token))
    assert (code, err.count("\n")) == (2, 1)
    assert "give --token or --token-file, not both" in err
    code, _, err = _show(capsys, "--token-file", str(two_lines))
    assert (code, err) == (
        2,
        f"error: invalid_request: --token-file: {two_lines} must hold one token on one line\n",
    )
    code, _, err = _show(capsys, "--token-file", str(tmp_path / "missing"))
    assert code == 2
    assert err.startswith(
        f"error: invalid_request: --token-file: cannot read {tmp_path / 'missing'}"
    )
    assert "eng_a" not in err
