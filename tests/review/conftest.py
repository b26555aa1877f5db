"""Fixtures: the review page over a fresh store on every backend (see ``review_kit``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
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
