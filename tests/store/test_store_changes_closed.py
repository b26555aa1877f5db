"""A poll that meets a closed store says nothing (issue 32, point 5): ``engram serve`` printed
"change feed poll failed ... the store is closed" as it started, because the store it sets up
with is closed while the feed's poller may be mid-poll. A poll failing on an open store is
still a warning (docs/spec/storage.md "Change feed")."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from engram.errors import StoreError
from engram.store import Tx
from engram.store.internals import ChangeFeed


@contextmanager
def closed_store() -> Iterator[Tx]:
    raise StoreError("the store is closed")
    yield  # pragma: no cover - never reached


@pytest.mark.req("engram.store.changes-quiet-after-close")
def test_a_poll_after_close_is_quiet_and_before_close_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    feed = ChangeFeed(closed_store, remote=True)
    with caplog.at_level(logging.DEBUG, logger="engram.store"):
        assert feed.poll() is False
        warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert [r.getMessage() for r in warned] == [
            "change feed poll failed (memory is trusted for at most the bound): the store is closed"
        ]
        caplog.clear()
        feed.close()
        assert feed.poll() is False
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
