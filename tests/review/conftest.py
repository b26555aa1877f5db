"""Fixtures: the review page over a fresh store on every backend (see ``review_kit``), and the
/memories page with a memory engine (see ``memories_kit``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from memories_kit import MemoriesKit, make_memories_kit
from review_kit import ReviewKit, make_kit

from engram.store import Store


@pytest.fixture
async def kit(any_store: Store) -> AsyncIterator[ReviewKit]:
    k = make_kit(any_store)
    async with k.client:
        yield k


@pytest.fixture
async def https_kit(memory_store: Store) -> AsyncIterator[ReviewKit]:
    k = make_kit(memory_store, "https://provider.test")
    async with k.client:
        yield k


@pytest.fixture
async def mkit(any_store: Store, tmp_path: Path) -> AsyncIterator[MemoriesKit]:
    k = make_memories_kit(any_store, tmp_path)
    async with k.client:
        yield k
