"""Migrations on every backend: ordered, idempotent, atomic per step, refusing newer schemas."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from engram.errors import StoreError
from engram.store import Component, Dialect, Migration, Store, open_store
from engram.store.internals import applied_migrations

ALPHA_V1 = Migration(1, "create alpha", lambda _d: ["CREATE TABLE alpha (id INTEGER PRIMARY KEY)"])
ALPHA_V2 = Migration(
    2,
    "add alpha.name",
    lambda _d: [
        "ALTER TABLE alpha ADD COLUMN name TEXT",
        "CREATE INDEX alpha_name ON alpha (name)",
    ],
)
ALPHA_V3 = Migration(
    3, "seed alpha", lambda _d: ["INSERT INTO alpha (id, name) VALUES (1, 'seed')"]
)


def blob_table(dialect: Dialect) -> list[str]:
    return [f"CREATE TABLE beta (id {dialect.serial_pk}, data {dialect.blob})"]


BETA = Component("beta", [Migration(1, "create beta", blob_table)])


@pytest.mark.req("engram.store.migrations-ordered")
def test_migrations_apply_in_order_and_are_recorded(any_store: Store) -> None:
    alpha = Component("alpha", [ALPHA_V1, ALPHA_V2, ALPHA_V3])
    applied = any_store.migrate(alpha, BETA)
    assert applied == [
        ("alpha", 1, "create alpha"),
        ("alpha", 2, "add alpha.name"),
        ("alpha", 3, "seed alpha"),
        ("beta", 1, "create beta"),
    ]
    assert any_store.schema_versions() == {"alpha": 3, "beta": 1}
    history = applied_migrations(any_store)
    assert [(h.component, h.version, h.name) for h in history] == applied
    assert all(h.applied_at.endswith("Z") for h in history)
    with any_store.read() as tx:
        assert tx.execute("SELECT id, name FROM alpha") == [{"id": 1, "name": "seed"}]


@pytest.mark.req("engram.store.migrations-ordered")
def test_migrate_again_applies_nothing(any_store: Store) -> None:
    alpha = Component("alpha", [ALPHA_V1, ALPHA_V2])
    any_store.migrate(alpha)
    assert any_store.migrate(alpha) == []
    assert any_store.migrate() == []
    assert len(applied_migrations(any_store)) == 2


@pytest.mark.req("engram.store.migrations-ordered")
def test_a_new_release_applies_only_its_new_steps(any_store: Store) -> None:
    any_store.migrate(Component("alpha", [ALPHA_V1]))
    applied = any_store.migrate(Component("alpha", [ALPHA_V1, ALPHA_V2, ALPHA_V3]))
    assert applied == [("alpha", 2, "add alpha.name"), ("alpha", 3, "seed alpha")]


@pytest.mark.req("engram.store.migrations-ordered")
def test_a_fresh_database_has_no_versions(any_store: Store) -> None:
    assert any_store.schema_versions() == {}
    assert applied_migrations(any_store) == []


@pytest.mark.req("engram.store.schema-too-new-refused")
def test_a_database_newer_than_the_code_is_refused(any_store: Store) -> None:
    any_store.migrate(Component("alpha", [ALPHA_V1, ALPHA_V2]))
    with pytest.raises(StoreError, match=r"version 2 for component 'alpha'.*only up to version 1"):
        any_store.migrate(Component("alpha", [ALPHA_V1]))
    assert any_store.schema_versions() == {"alpha": 2}


@pytest.mark.req("engram.store.migrations-atomic")
def test_a_failing_step_rolls_back_alone_and_keeps_earlier_steps(any_store: Store) -> None:
    broken = Migration(
        2,
        "half broken",
        lambda _d: ["CREATE TABLE gamma (id INTEGER)", "CREATE TABLE alpha (id INTEGER)"],
    )
    with pytest.raises(StoreError):
        any_store.migrate(Component("alpha", [ALPHA_V1, broken]))
    assert any_store.schema_versions() == {"alpha": 1}
    # gamma was created in the failed step, so it is gone
    with any_store.read() as tx, pytest.raises(StoreError):
        tx.execute("SELECT * FROM gamma")
    fixed = Component("alpha", [ALPHA_V1, ALPHA_V2])
    assert any_store.migrate(fixed) == [("alpha", 2, "add alpha.name")]


@pytest.mark.req("engram.store.migrations-ordered")
@pytest.mark.parametrize(
    "versions",
    [[2], [1, 3], [2, 1], [1, 1]],
    ids=["starts-at-2", "gap", "unordered", "duplicate"],
)
def test_malformed_version_sequences_are_refused_before_touching_the_database(
    memory_store: Store, versions: list[int]
) -> None:
    steps = [
        Migration(v, f"v{v}", lambda _d: ["CREATE TABLE never (id INTEGER)"]) for v in versions
    ]
    with pytest.raises(StoreError, match="1, 2, 3"):
        memory_store.migrate(Component("bad", steps))
    assert memory_store.schema_versions() == {}


@pytest.mark.req("engram.store.migrations-ordered")
def test_the_same_component_twice_or_a_blank_name_is_refused(memory_store: Store) -> None:
    alpha = Component("alpha", [ALPHA_V1])
    with pytest.raises(StoreError, match="twice"):
        memory_store.migrate(alpha, alpha)
    with pytest.raises(StoreError, match="empty"):
        memory_store.migrate(Component("", [ALPHA_V1]))


class _Counted:
    """Counts the transactions a store opens (reads and writes) by wrapping its methods."""

    def __init__(self, store: Store) -> None:
        self.opened = 0
        for name in ("transaction", "read"):
            original = getattr(store, name)

            def counted(original: Callable[[], object] = original) -> object:
                self.opened += 1
                return original()

            setattr(store, name, counted)


@pytest.mark.req("engram.store.schema-behind-refused")
def test_require_refuses_a_schema_that_is_behind_with_the_command_that_fixes_it(
    any_store: Store,
) -> None:
    alpha = Component("alpha", [ALPHA_V1, ALPHA_V2])
    with pytest.raises(StoreError, match=r"version 0 of component 'alpha'.*needs version 2"):
        any_store.require(alpha)
    any_store.migrate(Component("alpha", [ALPHA_V1]))
    with pytest.raises(StoreError, match=r"run `engram db migrate --database .+`") as caught:
        any_store.require(alpha)
    assert "version 1 of component 'alpha'" in caught.value.message
    any_store.migrate(alpha)
    any_store.require(alpha)  # current now: no refusal
    with pytest.raises(StoreError, match=r"version 2 for component 'alpha'.*only up to version 1"):
        any_store.require(Component("alpha", [ALPHA_V1]))


@pytest.mark.req("engram.store.migrations-at-roots")
def test_a_current_component_costs_no_transaction_after_the_first_check(any_store: Store) -> None:
    alpha = Component("alpha", [ALPHA_V1, ALPHA_V2])
    any_store.migrate(alpha)
    counted = _Counted(any_store)
    for _ in range(5):
        assert any_store.migrate(alpha) == []
        any_store.require(alpha)
    assert counted.opened == 0


@pytest.mark.req("engram.store.migrations-at-roots")
def test_require_reads_the_versions_once_per_store_object(any_store: Store) -> None:
    beta_only = Component("beta", BETA.migrations)
    any_store.migrate(BETA)
    any_store.forget_schema()
    counted = _Counted(any_store)
    for _ in range(5):
        any_store.require(beta_only)
    assert counted.opened == 1


@pytest.mark.req("engram.store.schema-too-new-refused")
def test_after_forget_schema_a_newer_schema_from_another_process_is_refused(
    any_database_url: str,
) -> None:
    mine, theirs = open_store(any_database_url), open_store(any_database_url)
    try:
        v1 = Component("alpha", [ALPHA_V1])
        mine.migrate(v1)
        theirs.migrate(Component("alpha", [ALPHA_V1, ALPHA_V2]))  # a newer engram elsewhere
        mine.require(v1)  # remembered as current by this store object
        mine.forget_schema()
        with pytest.raises(StoreError, match="upgrade engram"):
            mine.require(v1)
    finally:
        mine.close()
        theirs.close()
