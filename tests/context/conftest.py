"""The context domain's tests run on stores whose context tables exist: a test is a composition
root, so it migrates (domain calls only check the schema, docs/spec/storage.md "Migrations")."""

from __future__ import annotations

import pytest

from engram.context import ensure_schema
from engram.store import Store


@pytest.fixture
def memory_store(memory_store: Store) -> Store:
    ensure_schema(memory_store)
    return memory_store


@pytest.fixture
def sqlite_store(sqlite_store: Store) -> Store:
    ensure_schema(sqlite_store)
    return sqlite_store


@pytest.fixture
def postgres_store(postgres_store: Store) -> Store:
    ensure_schema(postgres_store)
    return postgres_store
