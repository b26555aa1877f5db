"""``execute_many`` binds exactly what ``execute`` binds, row by row, on every backend.

Bulk inserts skip per-value normalisation when every value is already plain (text, numbers,
bytes, NULL); these tests pin that a bool, a datetime or a memoryview anywhere in the batch,
even in the last row only, is still stored as INTEGER 0/1, sortable TEXT and bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from engram.core.clock import format_instant_precise
from engram.store import Component, Migration, Store

BULK = Component(
    "bulk_notes",
    [
        Migration(
            1,
            "create bulk_notes",
            lambda d: [
                f"CREATE TABLE bulk_notes (id {d.serial_pk}, body TEXT NOT NULL, data {d.blob},"
                " at TEXT, flag INTEGER NOT NULL, score REAL)"
            ],
        )
    ],
)
INSERT = "INSERT INTO bulk_notes (body, data, at, flag, score) VALUES (?, ?, ?, ?, ?)"
WHEN = datetime(2026, 3, 1, 12, 30, 5, 123456, tzinfo=UTC)


@pytest.fixture
def bulk(any_store: Store) -> Store:
    any_store.migrate(BULK)
    return any_store


def stored(store: Store) -> list[dict[str, Any]]:
    with store.read() as tx:
        rows = tx.execute("SELECT body, data, at, flag, score FROM bulk_notes ORDER BY id")
    return [{**r, "data": None if r["data"] is None else bytes(r["data"])} for r in rows]


def one_by_one(store: Store, rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    with store.transaction() as tx:
        tx.execute("DELETE FROM bulk_notes")
        for row in rows:
            tx.execute(INSERT, tuple(row))
    return stored(store)


PLAIN = [
    ("plain", b"\x00\x01", "2026-01-01T00:00:00.000000Z", 1, 0.5),
    ("nulls", None, None, 0, None),
]


@pytest.mark.req("engram.store.portable-sql")
@pytest.mark.parametrize(
    "rows",
    [
        pytest.param(PLAIN, id="all-plain"),
        pytest.param([*PLAIN, ("bool-last", None, None, True, 1.0)], id="bool-in-last-row"),
        pytest.param([*PLAIN, ("when", None, WHEN, False, 2)], id="datetime-in-last-row"),
        pytest.param(
            [("view", memoryview(b"\xff\xfe"), None, 0, 3.0), *PLAIN], id="memoryview-first"
        ),
        pytest.param([["list-row", bytearray(b"ab"), None, 1, 4.25]], id="lists-and-bytearray"),
    ],
)
def test_execute_many_stores_what_execute_stores(bulk: Store, rows: list[Sequence[Any]]) -> None:
    with bulk.transaction() as tx:
        tx.execute_many(INSERT, rows)
    batch = stored(bulk)
    assert batch == one_by_one(bulk, rows)
    assert len(batch) == len(rows)
    for got, row in zip(batch, rows, strict=True):
        assert got["flag"] == int(row[3])
        assert type(got["flag"]) is int
        assert got["at"] == (
            format_instant_precise(row[2]) if isinstance(row[2], datetime) else row[2]
        )
        assert got["data"] == (None if row[1] is None else bytes(row[1]))


@pytest.mark.req("engram.store.portable-sql")
def test_execute_many_takes_an_iterator_of_rows(bulk: Store) -> None:
    def rows() -> Iterator[tuple[Any, ...]]:
        yield ("first", None, WHEN, True, 1.0)
        yield ("second", b"x", None, 0, None)

    with bulk.transaction() as tx:
        tx.execute_many(INSERT, rows())  # type: ignore[arg-type]  # callers may pass one anyway
    assert [(r["body"], r["flag"], r["at"]) for r in stored(bulk)] == [
        ("first", 1, format_instant_precise(WHEN)),
        ("second", 0, None),
    ]
