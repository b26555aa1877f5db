"""Domain calls never migrate: they check the schema once per store object and refuse one that
is behind, naming the command that fixes it (docs/spec/storage.md "Migrations")."""

from __future__ import annotations

import pytest

from engram.context import (
    add_belief,
    confirm_correction,
    create_subject,
    get_subject,
    issue_token,
    list_beliefs,
    propose_correction,
    revoke_token,
)
from engram.core.clock import FixedClock
from engram.errors import ResourceNotFound, StoreError
from engram.store import Component, Store, open_store


@pytest.mark.req("engram.store.schema-behind-refused")
def test_a_domain_call_on_an_unmigrated_store_is_refused_with_the_fix() -> None:
    store = open_store("memory://")
    try:
        with pytest.raises(StoreError, match=r"component '(changes|context)'.*engram db migrate"):
            create_subject(store, FixedClock(), "Ada", "UTC")
        assert store.schema_versions() == {}  # nothing was created on the way
    finally:
        store.close()


@pytest.mark.req("engram.store.migrations-at-roots")
def test_domain_calls_never_migrate(any_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FixedClock()

    def refuse(*_: Component) -> list[tuple[str, int, str]]:
        raise AssertionError("a domain call migrated")

    monkeypatch.setattr(any_store, "migrate", refuse)
    subject = create_subject(any_store, clock, "Ada", "UTC")
    belief = add_belief(any_store, clock, subject.id, "goal", "Run a marathon.")
    correction = propose_correction(any_store, clock, subject.id, belief.id, "Run 10 km.", "rt")
    confirm_correction(any_store, clock, subject.id, correction.id)
    issue_token(any_store, clock, subject.id, ["read"])
    get_subject(any_store, subject.id)
    assert [b.statement for b in list_beliefs(any_store, subject.id)] == ["Run 10 km."]
    with pytest.raises(ResourceNotFound, match="no active token"):
        revoke_token(any_store, clock, subject.id, "tok_unknown")
