"""``engram db migrate|status`` and ``engram keys ...`` as a user runs them."""

from __future__ import annotations

import stat
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from engram.cli import cli, run_cli
from engram.cli.internals import discover_components
from engram.core.canonical import parse_strict
from engram.core.clock import parse_instant
from engram.core.keys import load_private_key
from engram.store import open_store


def engram(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(cli, list(args))
    out, err = capsys.readouterr()
    return code, out, err


def as_list(text: str) -> list[dict[str, object]]:
    value = parse_strict(text)
    assert isinstance(value, list)
    assert all(isinstance(item, dict) for item in value)
    return [dict(item) for item in value if isinstance(item, dict)]


def as_dict(text: str) -> dict[str, object]:
    value = parse_strict(text)
    assert isinstance(value, dict)
    return dict(value)


@pytest.mark.req("engram.store.cli-db-migrate")
def test_db_migrate_applies_every_component_once(
    capsys: pytest.CaptureFixture[str], any_database_url: str
) -> None:
    code, out, _ = engram(capsys, "db", "migrate", "--database", any_database_url, "--json")
    assert code == 0
    report = as_dict(out)
    versions = report["versions"]
    assert isinstance(versions, dict)
    assert {"keys", "idempotency"} <= set(versions)
    assert versions == {c.name: len(c.migrations) for c in discover_components()}
    assert report["applied"]
    code, out, _ = engram(capsys, "db", "migrate", "--database", any_database_url)
    assert code == 0
    assert "already up to date" in out
    code, out, _ = engram(capsys, "db", "status", "--database", any_database_url, "--json")
    status = as_dict(out)
    components = status["components"]
    assert isinstance(components, list)
    assert all(c["applied"] == c["known"] for c in components)


@pytest.mark.req("engram.store.cli-db-migrate", "engram.store.schema-too-new-refused")
def test_db_migrate_refuses_a_newer_database_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"sqlite://{tmp_path / 'engram.db'}"
    assert engram(capsys, "db", "migrate", "--database", url)[0] == 0
    store = open_store(url)
    with store.transaction() as tx:
        tx.execute("UPDATE engram_schema SET version = 99 WHERE component = ?", ("keys",))
    store.close()
    code, out, err = engram(capsys, "db", "migrate", "--database", url)
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert "version 99 for component 'keys'" in err
    assert "upgrade engram" in err


@pytest.mark.req("engram.store.cli-keys")
def test_keys_create_list_rotate_retire(
    capsys: pytest.CaptureFixture[str], any_database_url: str
) -> None:
    db = ("--database", any_database_url)
    code, out, _ = engram(capsys, "keys", "create", *db, "--json")
    assert code == 0
    (first,) = as_list(out)
    assert first["status"] == "active"
    code, out, _ = engram(
        capsys, "keys", "rotate", *db, "--lifetime-days", "7", "--immediately", "--json"
    )
    (second,) = as_list(out)
    assert second["kid"] != first["kid"]
    code, out, _ = engram(capsys, "keys", "list", *db, "--json")
    listed = {k["kid"]: k for k in as_list(out)}
    assert listed[str(first["kid"])]["status"] == "retired"
    assert listed[str(second["kid"])]["status"] == "active"
    assert set(listed[str(second["kid"])]) >= {"kid", "created_at", "expires_at", "published_until"}
    code, out, _ = engram(capsys, "keys", "retire", str(second["kid"]), *db)
    assert code == 0
    assert "retired" in out
    code, out, _ = engram(capsys, "keys", "list", *db)
    lines = out.strip().splitlines()
    assert len(lines) == 2
    assert all("retired" in line and "published_until" in line for line in lines)
    assert "PRIVATE" not in out


@pytest.mark.req("engram.store.cli-keys", "engram.store.database-url")
def test_keys_use_engram_home_when_no_database_is_given(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ENGRAM_DATABASE_URL", raising=False)
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path / "home"))
    assert engram(capsys, "keys", "list")[1].startswith("no signing keys")
    assert engram(capsys, "keys", "create", "--kid", "k1")[0] == 0
    assert (tmp_path / "home" / "engram.db").exists()
    monkeypatch.setenv("ENGRAM_DATABASE_URL", f"sqlite://{tmp_path / 'other.db'}")
    assert engram(capsys, "keys", "list")[1].startswith("no signing keys")


@pytest.mark.req("engram.store.keys-private", "engram.store.cli-keys")
def test_keys_export_writes_a_private_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    db = ("--db", str(tmp_path / "engram.db"))  # a bare path means a SQLite file
    code, out, _ = engram(capsys, "keys", "create", *db, "--json")
    (info,) = as_list(out)
    target = tmp_path / "signing.pem"
    code, out, _ = engram(capsys, "keys", "export", str(info["kid"]), str(target), *db)
    assert code == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert load_private_key(target).public_key().b64url == info["public_key"]
    assert "BEGIN" not in out
    code, _, err = engram(capsys, "keys", "export", str(info["kid"]), str(target), *db)
    assert code == 1
    assert "already exists" in err


def run_engram(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command line in a fresh interpreter, as a user's shell would run it."""
    return subprocess.run(
        [sys.executable, "-c", "from engram.cli import main; main()", *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.req("engram.store.cli-keys")
def test_unknown_kid_and_bad_database_are_one_line_errors_from_the_real_command(
    tmp_path: Path,
) -> None:
    url = f"sqlite://{tmp_path / 'engram.db'}"
    run = run_engram("keys", "retire", "ed25519:none", "--database", url)
    assert run.returncode == 1
    assert run.stderr == "error: not_found: no signing key with kid 'ed25519:none'\n"
    bad = run_engram("keys", "list", "--database", "postgresql://u:hunter2@127.0.0.1:1/x")
    assert bad.returncode == 1
    assert bad.stderr.startswith("error: server_error: postgresql: cannot connect")
    assert bad.stderr.count("\n") == 1
    assert "hunter2" not in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.mark.req("engram.store.keys-published-before-signing", "engram.store.cli-keys")
def test_keys_rotate_publishes_the_new_key_before_it_signs(
    capsys: pytest.CaptureFixture[str], any_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_KEYS_MAX_AGE_SECONDS", "600")
    db = ("--database", any_database_url)
    code, out, _ = engram(capsys, "keys", "create", *db, "--json")
    (first,) = as_list(out)
    code, out, _ = engram(capsys, "keys", "rotate", *db, "--json")
    assert code == 0
    (second,) = as_list(out)
    assert second["status"] == "next"
    signs_from = parse_instant(str(second["signs_from"]))
    created = parse_instant(str(second["created_at"]))
    assert signs_from - created == timedelta(seconds=600)  # the key list's cache lifetime
    code, out, _ = engram(capsys, "keys", "list", *db, "--json")
    listed = {k["kid"]: k for k in as_list(out)}
    assert listed[str(first["kid"])]["status"] == "active"  # it signs until the handover
    assert listed[str(first["kid"])]["retired_at"] == second["signs_from"]
    assert listed[str(second["kid"])]["published"] is True
