"""Choosing a backend from a database URL (docs/spec/storage.md "Database URLs").

``memory://``; ``sqlite:///abs/path.db`` (everything after ``sqlite://`` is the path, so three
slashes give an absolute path and ``sqlite://rel.db`` a path relative to the working directory);
``postgresql://user[:password]@host[:port]/db[?options]`` (``postgres://`` is accepted too).
Only the CLI and the provider settings read the environment, through
:func:`database_url_from_env`; domain code is handed a :class:`Store`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote

from engram.errors import StoreError
from engram.store._base import Store
from engram.store._sql import redact_url

DEFAULT_HOME = "~/.engram"
DATABASE_FILE = "engram.db"


def open_store(url: str) -> Store:
    """Open the store named by ``url``; a bad URL or an unreachable database is a StoreError."""
    if url == "memory://" or url == "memory:":
        from engram.store._sqlite import MemoryStore

        return MemoryStore()
    if url.startswith("sqlite://"):
        from engram.store._sqlite import SqliteStore

        raw = unquote(url[len("sqlite://") :])
        if not raw or "?" in raw or raw == ":memory:":
            raise StoreError(
                f"not a SQLite database URL: {redact_url(url)!r} (use sqlite:///absolute/path.db "
                "or memory://)"
            )
        return SqliteStore(Path(raw).expanduser().absolute())
    if url.startswith(("postgresql://", "postgres://")):
        from engram.store._postgres import PostgresStore

        return PostgresStore(url)
    raise StoreError(
        f"unsupported database URL {redact_url(url)!r}: use memory://, sqlite:///path or "
        "postgresql://user@host/db"
    )


def engram_home(environ: Mapping[str, str]) -> Path:
    """``$ENGRAM_HOME`` or ``~/.engram``, created with mode 0700 if missing."""
    home = Path(environ.get("ENGRAM_HOME") or DEFAULT_HOME).expanduser()
    if not home.is_absolute():
        home = home.absolute()
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        raise StoreError(f"cannot create ENGRAM_HOME {home}: {e.strerror or e}") from e
    return home


def database_url_from_env(environ: Mapping[str, str] | None = None) -> str:
    """``$ENGRAM_DATABASE_URL``, else ``sqlite:///$ENGRAM_HOME/engram.db``."""
    env = os.environ if environ is None else environ
    url = env.get("ENGRAM_DATABASE_URL", "").strip()
    if url:
        return url
    return f"sqlite://{engram_home(env) / DATABASE_FILE}"


__all__ = ["DATABASE_FILE", "DEFAULT_HOME", "database_url_from_env", "engram_home", "open_store"]
