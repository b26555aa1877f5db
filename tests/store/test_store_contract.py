"""The Store contract: one suite, every backend (docs/spec/storage.md).

Each test gets a fresh empty store from ``any_store`` (memory, sqlite, postgresql).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engram.core.clock import format_instant_precise
from engram.errors import StoreError
from engram.store import Component, Dialect, Migration, Store

NOTES = Component(
    "notes",
    [
        Migration(
            1,
            "create notes",
            lambda d: [
                f"CREATE TABLE notes (id {d.serial_pk}, body TEXT NOT NULL, data {d.blob},"
                " at TEXT, flag INTEGER NOT NULL DEFAULT 0)"
            ],
        ),
        Migration(
            2,
            "unique body",
            lambda _d: ["CREATE UNIQUE INDEX notes_body ON notes (body)"],
        ),
    ],
)


@pytest.fixture
def notes(any_store: Store) -> Store:
    any_store.migrate(NOTES)
    return any_store


def count(store: Store) -> int:
    with store.read() as tx:
        return int(tx.scalar("SELECT COUNT(*) FROM notes"))


@pytest.mark.req("engram.store.transaction-atomic")
def test_a_committed_transaction_is_visible_afterwards(notes: Store) -> None:
    with notes.transaction() as tx:
        tx.execute("INSERT INTO notes (body) VALUES (?)", ("first",))
        tx.execute_many("INSERT INTO notes (body) VALUES (?)", [("second",), ("third",)])
    with notes.read() as tx:
        rows = tx.execute("SELECT body FROM notes ORDER BY body")
    assert rows == [{"body": "first"}, {"body": "second"}, {"body": "third"}]


@pytest.mark.req("engram.store.transaction-atomic")
def test_an_exception_rolls_the_whole_transaction_back(notes: Store) -> None:
    class BoomError(Exception):
        pass

    def insert_then_fail() -> None:
        with notes.transaction() as tx:
            tx.execute("INSERT INTO notes (body) VALUES (?)", ("lost",))
            raise BoomError

    with pytest.raises(BoomError):
        insert_then_fail()
    assert count(notes) == 0


@pytest.mark.req("engram.store.transaction-atomic", "engram.store.errors-wrapped")
def test_a_failed_statement_is_a_store_error_and_leaves_the_store_usable(notes: Store) -> None:
    with notes.transaction() as tx:
        tx.execute("INSERT INTO notes (body) VALUES (?)", ("kept",))

    def insert_duplicate() -> None:
        with notes.transaction() as tx:
            tx.execute("INSERT INTO notes (body) VALUES (?)", ("also lost",))
            tx.execute("INSERT INTO notes (body) VALUES (?)", ("kept",))  # unique violation

    with pytest.raises(StoreError) as caught:
        insert_duplicate()
    assert caught.value.__cause__ is not None
    with notes.transaction() as tx:
        tx.execute("INSERT INTO notes (body) VALUES (?)", ("after",))
    with notes.read() as tx:
        assert [r["body"] for r in tx.execute("SELECT body FROM notes ORDER BY id")] == [
            "kept",
            "after",
        ]


@pytest.mark.req("engram.store.read-only")
def test_a_write_inside_read_is_refused(notes: Store) -> None:
    with pytest.raises(StoreError), notes.read() as tx:
        tx.execute("INSERT INTO notes (body) VALUES (?)", ("nope",))
    assert count(notes) == 0
    with notes.transaction() as tx:  # the connection is writable again afterwards
        tx.execute("INSERT INTO notes (body) VALUES (?)", ("yes",))
    assert count(notes) == 1


@pytest.mark.req("engram.store.nested-transaction-refused")
def test_a_transaction_inside_another_on_the_same_thread_is_refused(notes: Store) -> None:
    with notes.transaction() as outer:
        outer.execute("INSERT INTO notes (body) VALUES (?)", ("outer",))
        with pytest.raises(StoreError, match="nested transaction"), notes.read():
            pass
    assert count(notes) == 1


@pytest.mark.req("engram.store.portable-sql")
def test_one_one_scalar_and_returning(notes: Store) -> None:
    with notes.transaction() as tx:
        created = tx.execute("INSERT INTO notes (body) VALUES (?) RETURNING id, body", ("r",))
        assert created[0]["body"] == "r"
        assert isinstance(created[0]["id"], int)
        assert tx.one("SELECT body FROM notes WHERE id = ?", (created[0]["id"],)) == {"body": "r"}
        assert tx.one("SELECT body FROM notes WHERE id = ?", (-1,)) is None
        assert tx.scalar("SELECT body FROM notes WHERE id = ?", (-1,)) is None
        assert tx.execute("UPDATE notes SET flag = ? WHERE id = ?", (1, created[0]["id"])) == []


@pytest.mark.req("engram.store.portable-sql")
def test_on_conflict_do_nothing_and_do_update(notes: Store) -> None:
    with notes.transaction() as tx:
        tx.execute("INSERT INTO notes (body, flag) VALUES (?, ?)", ("k", 0))
        skipped = tx.execute(
            "INSERT INTO notes (body, flag) VALUES (?, ?) ON CONFLICT (body) DO NOTHING"
            " RETURNING id",
            ("k", 1),
        )
        assert skipped == []
        tx.execute(
            "INSERT INTO notes (body, flag) VALUES (?, ?)"
            " ON CONFLICT (body) DO UPDATE SET flag = excluded.flag",
            ("k", 1),
        )
        assert tx.scalar("SELECT flag FROM notes WHERE body = ?", ("k",)) == 1


@pytest.mark.req("engram.store.portable-sql")
def test_question_marks_and_percent_signs_in_values_and_literals_survive(notes: Store) -> None:
    tricky = ["what?", "100% sure", "%s and ?", "it's '?'", "%(name)s", "-- not a comment"]
    with notes.transaction() as tx:
        for text in tricky:
            tx.execute("INSERT INTO notes (body) VALUES (?)", (text,))
        assert tx.scalar("SELECT COUNT(*) FROM notes WHERE body LIKE '%?%'") == 3
        assert tx.scalar("SELECT 'a?b' || ? FROM notes WHERE body = ?", ("!", "what?")) == "a?b!"
        assert tx.scalar("SELECT body FROM notes WHERE body = 'it''s ''?'''") == "it's '?'"
        assert tx.scalar('SELECT "body" FROM notes WHERE body = ? /* ? */', ("100% sure",)) == (
            "100% sure"
        )
    with notes.read() as tx:
        stored = [r["body"] for r in tx.execute("SELECT body FROM notes ORDER BY id")]
    assert stored == tricky


@pytest.mark.req("engram.store.portable-sql")
def test_unicode_and_large_blobs_round_trip(notes: Store) -> None:
    text = "naïve café — 日本語 — 🧠 emoji — \u202e rtl — zero\u200bwidth"
    blob = bytes(range(256)) * 8192  # 2 MiB, every byte value including NUL
    with notes.transaction() as tx:
        tx.execute("INSERT INTO notes (body, data) VALUES (?, ?)", (text, blob))
        tx.execute("INSERT INTO notes (body, data) VALUES (?, ?)", ("view", memoryview(b"\x00mv")))
    with notes.read() as tx:
        row = tx.one("SELECT body, data FROM notes WHERE body = ?", (text,))
        view = tx.scalar("SELECT data FROM notes WHERE body = ?", ("view",))
    assert row is not None
    assert row["body"] == text
    assert bytes(row["data"]) == blob
    assert isinstance(row["data"], bytes)
    assert view == b"\x00mv"


@pytest.mark.req("engram.store.portable-sql")
def test_instants_stored_as_text_order_by_time(notes: Store) -> None:
    base = datetime(2026, 1, 1, 9, 59, 59, 999999, tzinfo=UTC)
    moments = [base + timedelta(microseconds=1), base, base + timedelta(days=400), base]
    with notes.transaction() as tx:
        for i, moment in enumerate(moments):
            # A datetime parameter is stored in format_instant_precise form.
            tx.execute("INSERT INTO notes (body, at) VALUES (?, ?)", (f"n{i}", moment))
    with notes.read() as tx:
        stored = [r["at"] for r in tx.execute("SELECT at FROM notes ORDER BY at, id")]
    assert stored == [format_instant_precise(m) for m in sorted(moments)]
    assert stored[0] == "2026-01-01T09:59:59.999999Z"


@pytest.mark.req("engram.store.portable-sql")
def test_booleans_are_stored_as_integers(notes: Store) -> None:
    with notes.transaction() as tx:
        tx.execute("INSERT INTO notes (body, flag) VALUES (?, ?)", ("t", True))
        tx.execute("INSERT INTO notes (body, flag) VALUES (?, ?)", ("f", False))
    with notes.read() as tx:
        assert tx.execute("SELECT body, flag FROM notes ORDER BY body") == [
            {"body": "f", "flag": 0},
            {"body": "t", "flag": 1},
        ]


@pytest.mark.req("engram.store.portable-sql")
def test_foreign_keys_are_enforced(any_store: Store) -> None:
    parent_child = Component(
        "family",
        [
            Migration(
                1,
                "tables",
                lambda _d: [
                    "CREATE TABLE parent (id INTEGER PRIMARY KEY)",
                    "CREATE TABLE child (id INTEGER PRIMARY KEY,"
                    " parent_id INTEGER NOT NULL REFERENCES parent (id))",
                ],
            )
        ],
    )
    any_store.migrate(parent_child)
    with pytest.raises(StoreError), any_store.transaction() as tx:
        tx.execute("INSERT INTO child (id, parent_id) VALUES (?, ?)", (1, 42))


@pytest.mark.req("engram.store.portable-sql")
def test_dialect_spells_types_for_its_backend(any_store: Store) -> None:
    dialect: Dialect = any_store.dialect
    if dialect.is_sqlite:
        assert (dialect.blob, dialect.bigint) == ("BLOB", "INTEGER")
    else:
        assert (dialect.blob, dialect.bigint) == ("BYTEA", "BIGINT")
    with any_store.read() as tx:
        assert tx.dialect == dialect
