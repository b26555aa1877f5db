"""Fixtures for the framework adapters: a LangGraph store and an Agents SDK session on every
backend (``any_store`` from tests/conftest.py), both on a clock the test moves."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engram.core.clock import FixedClock
from engram.integrations.langgraph import EngramStore
from engram.store import Store


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def lg_store(any_store: Store, clock: FixedClock) -> Iterator[EngramStore]:
    """A LangGraph store on a fresh engram store (memory, SQLite, PostgreSQL)."""
    store = EngramStore(any_store, clock=clock)
    try:
        yield store
    finally:
        store.close()
