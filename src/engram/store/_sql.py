"""Helpers shared by the backends: placeholder rewriting, parameter values, URL redaction.

The portable SQL subset (``engram.store._base`` and docs/spec/storage.md "Portable SQL") is
written with ``?`` placeholders. PostgreSQL's driver wants ``%s`` and reads every ``%`` in the
query text as the start of a placeholder, so :func:`to_pyformat` rewrites ``?`` outside string
literals, quoted identifiers and comments, and doubles every ``%`` (psycopg turns ``%%`` back
into ``%``). Parameter values are normalised the same way for every backend so a test that
passes on SQLite passes on PostgreSQL.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from engram.core.clock import format_instant_precise
from engram.store._base import Params, Tx

LOG = logging.getLogger("engram.store")
_PASSWORD_KV = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def to_pyformat(sql: str) -> str:
    """Rewrite ``?`` placeholders to ``%s`` and escape ``%``, leaving quoted text intact.

    Inside ``'...'`` literals, ``"..."`` identifiers and comments a ``?`` is text, not a
    placeholder. ``%`` is doubled everywhere because psycopg scans the whole query for it.
    """
    out: list[str] = []
    i = 0
    n = len(sql)
    while i < n:
        ch = sql[i]
        if ch in ("'", '"'):
            # A quoted run ends at the next unpaired quote ('' and "" are escaped quotes).
            j = i + 1
            while j < n:
                if sql[j] == ch:
                    if j + 1 < n and sql[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            out.append(sql[i : j + 1].replace("%", "%%"))
            i = j + 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            out.append(sql[i:j].replace("%", "%%"))
            i = j
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(sql[i:j].replace("%", "%%"))
            i = j
        elif ch == "?":
            out.append("%s")
            i += 1
        elif ch == "%":
            out.append("%%")
            i += 1
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def normalise_params(params: Params) -> tuple[Any, ...]:
    """Portable parameter values: booleans become 0/1, aware datetimes sortable TEXT.

    Booleans are stored as INTEGER 0/1 and instants as TEXT (the portable subset); converting
    here keeps PostgreSQL from refusing a ``boolean`` for an ``integer`` column.
    """
    return tuple(_normalise(value) for value in params)


def normalise_rows(rows: Sequence[Params]) -> Sequence[Params]:
    """:func:`normalise_params` for every row of an ``execute_many``, at C speed when no value
    needs converting (the usual bulk insert: text, numbers, bytes and NULLs).

    The types are collected column by column (``zip(*rows)`` and ``map(type, ...)`` run in C)
    instead of value by value in Python; if any value is not of a plain type (a bool, a
    datetime, a memoryview, a subclass) or the rows differ in length, every row is normalised
    as before, so what is bound never changes.
    """
    if not isinstance(rows, list | tuple):
        rows = list(rows)  # one pass over an iterator, not two
    if not rows:
        return []
    width = len(rows[0])
    if all(len(row) == width for row in rows):
        types: set[type] = set()
        for column in zip(*rows, strict=True):
            types.update(map(type, column))
        if types <= PLAIN_TYPES:
            return rows
    return [normalise_params(row) for row in rows]


# Values every driver binds as they are: normalise_params returns them unchanged.
PLAIN_TYPES = frozenset({str, int, float, bytes, type(None)})


def _normalise(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, datetime):
        return format_instant_precise(value)
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    return value


def redact_url(url: str) -> str:
    """The URL with any password replaced by ``***`` (user names and hosts stay visible)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable database URL>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        if ":" in userinfo:
            user = userinfo.split(":", 1)[0]
            netloc = f"{user}:***@{hostport}"
    query = re.sub(r"(^|&)(password=)[^&]*", r"\1\2***", parts.query, flags=re.IGNORECASE)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub(message: str, secrets: Iterable[str]) -> str:
    """Remove each non-empty secret (a password) from an error message."""
    for secret in secrets:
        if secret:
            message = message.replace(secret, "***")
    return _PASSWORD_KV.sub(r"\1***", message)


def run_committed(callbacks: Sequence[Callable[[], None]]) -> None:
    """Run a committed transaction's ``after_commit`` callbacks. The transaction is durable by
    now, so a failing callback is logged, never raised as if the commit had failed."""
    for callback in callbacks:
        try:
            callback()
        except Exception:
            LOG.exception("an after-commit callback failed")


def advisory_lock(tx: Tx, name: str) -> None:
    """Serialise the rest of ``tx`` against other transactions taking the same ``name``.

    For read-modify-write steps that a unique constraint cannot guard (``ensure_active`` creating
    the first signing key, say). On SQLite a ``transaction()`` already holds the database write
    lock (``BEGIN IMMEDIATE``), so this is a no-op there; on PostgreSQL it takes
    ``pg_advisory_xact_lock`` on a key derived from the schema and the name, released at commit.
    """
    if tx.dialect.is_sqlite:
        return
    tx.execute("SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':' || ?))", (name,))


__all__ = [
    "PLAIN_TYPES",
    "advisory_lock",
    "normalise_params",
    "normalise_rows",
    "redact_url",
    "run_committed",
    "scrub",
    "to_pyformat",
]
