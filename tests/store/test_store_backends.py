"""Backend-specific promises: URLs, file modes, SQLite pragmas, password hiding, SQL rewriting."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest

from engram.errors import StoreError
from engram.store import database_url_from_env, open_store
from engram.store.internals import redact_url, to_pyformat


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.req("engram.store.sqlite-file-private")
def test_the_sqlite_file_is_created_0600_even_under_a_loose_umask(tmp_path: Path) -> None:
    path = tmp_path / "home" / "engram.db"
    old = os.umask(0)
    try:
        store = open_store(f"sqlite://{path}")
        with store.transaction() as tx:
            tx.execute("CREATE TABLE t (x INTEGER)")
            tx.execute("INSERT INTO t VALUES (1)")
        assert mode(path) == 0o600
        assert mode(path.parent) == 0o700
        wal = path.with_name("engram.db-wal")
        assert wal.exists()
        assert mode(wal) & 0o077 == 0
        store.close()
    finally:
        os.umask(old)


@pytest.mark.req("engram.store.sqlite-file-private")
def test_a_database_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "engram.db"
    sqlite3.connect(path).close()
    path.chmod(0o644)
    with pytest.raises(StoreError, match="chmod 600"):
        open_store(f"sqlite://{path}")


@pytest.mark.req("engram.store.sqlite-pragmas")
def test_sqlite_runs_in_wal_with_foreign_keys_and_a_busy_timeout(tmp_path: Path) -> None:
    store = open_store(f"sqlite://{tmp_path / 'engram.db'}")
    try:
        with store.read() as tx:
            assert tx.scalar("PRAGMA journal_mode") == "wal"
            assert tx.scalar("PRAGMA foreign_keys") == 1
            assert tx.scalar("PRAGMA busy_timeout") >= 5000
            assert tx.scalar("PRAGMA synchronous") == 1  # NORMAL
    finally:
        store.close()
    assert store.url == f"sqlite://{tmp_path / 'engram.db'}"


@pytest.mark.req("engram.store.errors-wrapped")
def test_a_closed_store_refuses_work(tmp_path: Path) -> None:
    for url in ("memory://", f"sqlite://{tmp_path / 'engram.db'}"):
        store = open_store(url)
        store.close()
        with pytest.raises(StoreError, match="closed"), store.transaction():
            pass


@pytest.mark.req("engram.store.database-url")
def test_database_url_from_env_prefers_engram_database_url(tmp_path: Path) -> None:
    env = {"ENGRAM_DATABASE_URL": "postgresql://u@h/db", "ENGRAM_HOME": str(tmp_path / "h")}
    assert database_url_from_env(env) == "postgresql://u@h/db"
    assert not (tmp_path / "h").exists()


@pytest.mark.req("engram.store.database-url")
def test_database_url_defaults_to_engram_db_in_engram_home_created_0700(tmp_path: Path) -> None:
    home = tmp_path / "home"
    url = database_url_from_env({"ENGRAM_HOME": str(home)})
    assert url == f"sqlite://{home}/engram.db"
    assert mode(home) == 0o700
    store = open_store(url)
    store.close()
    assert (home / "engram.db").exists()


@pytest.mark.req("engram.store.database-url")
def test_database_url_default_home_is_dot_engram(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert database_url_from_env({}) == f"sqlite://{tmp_path}/.engram/engram.db"


@pytest.mark.req("engram.store.database-url")
@pytest.mark.parametrize(
    "url",
    ["mysql://root@localhost/x", "sqlite://", "sqlite:///tmp/x.db?mode=ro", "", "engram.db"],
)
def test_unsupported_urls_are_a_clear_store_error(url: str) -> None:
    with pytest.raises(StoreError, match="URL"):
        open_store(url)


@pytest.mark.req("engram.store.password-hidden")
def test_redact_url_hides_passwords_only() -> None:
    assert redact_url("postgresql://alice:s3cr%40t@db:5432/engram") == (
        "postgresql://alice:***@db:5432/engram"
    )
    assert redact_url("postgresql://bob@db/engram?password=hunter2&sslmode=require") == (
        "postgresql://bob@db/engram?password=***&sslmode=require"
    )
    assert redact_url("postgresql://db/engram") == "postgresql://db/engram"


@pytest.mark.req("engram.store.password-hidden")
def test_a_postgres_connection_failure_never_shows_the_password() -> None:
    # Port 1 on loopback refuses at once: the driver's error comes back without the secret.
    url = "postgresql://alice:TopSecret99@127.0.0.1:1/engram"
    with pytest.raises(StoreError) as caught:
        open_store(url)
    message = str(caught.value)
    assert "TopSecret99" not in message
    assert "127.0.0.1" in message
    assert "\n" not in message


@pytest.mark.req("engram.store.password-hidden")
def test_the_postgres_url_property_hides_the_password(postgres_url: str) -> None:
    with_password = postgres_url.replace("postgres@", "postgres:unused-secret@", 1)
    store = open_store(with_password)  # trust auth ignores the password
    try:
        assert "unused-secret" not in store.url
        assert ":***@" in store.url
    finally:
        store.close()


@pytest.mark.req("engram.store.portable-sql")
@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT ? , ?", "SELECT %s , %s"),
        ("SELECT '?' || ?", "SELECT '?' || %s"),
        ("SELECT 'it''s ?' , ?", "SELECT 'it''s ?' , %s"),
        ('SELECT "we?ird" FROM t WHERE a = ?', 'SELECT "we?ird" FROM t WHERE a = %s'),
        ("SELECT 1 -- why?\n, ?", "SELECT 1 -- why?\n, %s"),
        ("SELECT /* ? */ ?", "SELECT /* ? */ %s"),
        ("SELECT '50%' , a % 2", "SELECT '50%%' , a %% 2"),
        ("SELECT '%s'", "SELECT '%%s'"),
    ],
)
def test_placeholders_are_rewritten_outside_quotes_and_comments(sql: str, expected: str) -> None:
    assert to_pyformat(sql) == expected
