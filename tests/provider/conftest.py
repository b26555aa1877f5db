"""Fixtures: a provider over a fresh store on every backend (see ``provider_harness``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from provider_harness import Provider, make_provider

from engram.store import Store


@pytest.fixture
def provider(any_store: Store) -> Iterator[Provider]:
    p = make_provider(any_store)
    with p.client:
        yield p


@pytest.fixture
def memory_provider(memory_store: Store) -> Iterator[Provider]:
    p = make_provider(memory_store)
    with p.client:
        yield p


@pytest.fixture
def memory_rest(any_store: Store, tmp_path: Path) -> Iterator[Provider]:
    """A provider serving the memory REST API, on every backend."""
    p = make_provider(any_store, memory_folder=tmp_path)
    with p.client:
        yield p
