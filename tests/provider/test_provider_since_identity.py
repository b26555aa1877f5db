"""Two provider behaviours a runtime written by others depends on (issue 12, "Provider"):
``since`` with an unencoded ``+HH:MM`` offset (a space after query decoding) is read as the
instant meant, and a pending correction does not change ``identity.last_updated``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from engram.context import delete_belief, propose_correction, reject_correction
from engram.context.internals import seed_demo
from engram.core.clock import FixedClock
from engram.provider import ProviderConfig, create_app
from engram.store import Store


@pytest.mark.req("engram.provider.since-offset-space")
async def test_since_with_an_unencoded_plus_offset_is_the_instant_meant(
    memory_store: Store,
) -> None:
    clock = FixedClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    demo = seed_demo(memory_store, clock)
    clock.advance(timedelta(hours=1))
    delete_belief(memory_store, clock, demo.subject.id, demo.beliefs[0].id)
    app = create_app(ProviderConfig(), memory_store, clock)
    auth = {"Authorization": f"Bearer {demo.token}"}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://p"
    ) as http:
        # 10:30+02:00 is 08:30Z, before the deletion at 10:00Z; written raw, "+" arrives as " ".
        raw = await http.get("/v1/context/diff?since=2026-03-01T10:30:00+02:00", headers=auth)
        encoded = await http.get(
            "/v1/context/diff", params={"since": "2026-03-01T10:30:00+02:00"}, headers=auth
        )
        minus = await http.get("/v1/context/diff?since=2026-03-01T06:30:00-02:00", headers=auth)
        bogus = await http.get("/v1/context/diff?since=2026-03-01T10:30:00 2:00", headers=auth)
    for answer in (raw, encoded, minus):
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["since"] == "2026-03-01T08:30:00Z"
        assert [t["id"] for t in body["tombstones"]] == [demo.beliefs[0].id]
    assert bogus.status_code == 400
    assert bogus.json()["error"]["code"] == "invalid_request"


@pytest.mark.req("engram.provider.pending-keeps-last-updated")
async def test_a_pending_correction_does_not_change_identity_last_updated(
    memory_store: Store,
) -> None:
    clock = FixedClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    demo = seed_demo(memory_store, clock)
    app = create_app(ProviderConfig(), memory_store, clock)
    auth = {"Authorization": f"Bearer {demo.token}"}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://p"
    ) as http:
        before = (await http.get("/v1/context", headers=auth)).json()
        clock.advance(timedelta(hours=2))
        correction = propose_correction(
            memory_store, clock, demo.subject.id, demo.beliefs[0].id, "new value", "rt"
        )
        pending = (await http.get("/v1/context", headers=auth)).json()
        clock.advance(timedelta(hours=1))
        reject_correction(memory_store, clock, demo.subject.id, correction.id)
        rejected = (await http.get("/v1/context", headers=auth)).json()
        clock.advance(timedelta(hours=1))
        delete_belief(memory_store, clock, demo.subject.id, demo.beliefs[1].id)
        changed = (await http.get("/v1/context", headers=auth)).json()
    assert [c["id"] for c in pending["corrections"]] == [correction.id]  # the export did change
    assert pending["identity"]["last_updated"] == before["identity"]["last_updated"]
    assert rejected["identity"]["last_updated"] == before["identity"]["last_updated"]
    assert changed["identity"]["last_updated"] == "2026-03-01T13:00:00Z"
