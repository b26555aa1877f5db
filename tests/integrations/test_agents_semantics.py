"""EngramSession beside the Agents SDK's own SQLiteSession: the behaviours the SDK's session tests
state (settings default and normalisation, closed sessions, non-JSON items, items kept as given),
checked on both side by side so the SDK's implementation is the oracle; and the session's turns
recorded as memories with their role and time, driven by the SDK's own Runner.run."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, SQLiteSession, set_tracing_disabled
from agents.memory import SessionSettings
from agents_kit import ChatPeer
from openai import AsyncOpenAI

from engram.core.clock import FixedClock
from engram.integrations.agents import EngramSession
from engram.memory import default_manifest_text, open_engine, parse_manifest, recall
from engram.store import Store

set_tracing_disabled(True)

Maker = Callable[..., Any]


@pytest.fixture(params=["sqlite-session", "engram"])
def make(request: pytest.FixtureRequest, any_store: Store) -> Iterator[Maker]:
    """A session factory: the SDK's SQLiteSession (the oracle) or EngramSession."""
    made: list[Any] = []

    def build(session_id: str = "s", **kwargs: Any) -> Any:
        if request.param == "sqlite-session":
            session: Any = SQLiteSession(session_id, **kwargs)
        else:
            session = EngramSession(session_id, any_store, **kwargs)
        made.append(session)
        return session

    yield build
    for session in made:
        session.close()


@pytest.mark.req("engram.integrations.agents-sdk-semantics")
def test_session_settings_default_to_an_empty_sessionsettings_and_dicts_are_normalised(
    make: Maker,
) -> None:
    plain = make()
    assert isinstance(plain.session_settings, SessionSettings)
    assert plain.session_settings.limit is None
    given = make(session_settings={"limit": 2})
    assert given.session_settings == SessionSettings(limit=2)
    with pytest.raises(TypeError, match="Unknown session settings: colour"):
        make(session_settings={"limit": 2, "colour": "red"})

    async def run() -> list[Any]:
        await given.add_items([{"role": "user", "content": str(i)} for i in range(4)])
        got: list[Any] = await given.get_items()
        return got

    assert [i["content"] for i in asyncio.run(run())] == ["2", "3"]


@pytest.mark.req("engram.integrations.agents-sdk-semantics")
def test_every_call_on_a_closed_session_is_a_runtime_error(make: Maker) -> None:
    session = make()
    session.close()

    async def run() -> None:
        with pytest.raises(RuntimeError, match="is closed"):
            await session.add_items([])  # checked before the empty-list shortcut
        with pytest.raises(RuntimeError, match="is closed"):
            await session.add_items([{"role": "user", "content": "late"}])
        with pytest.raises(RuntimeError, match="is closed"):
            await session.get_items()
        with pytest.raises(RuntimeError, match="is closed"):
            await session.pop_item()
        with pytest.raises(RuntimeError, match="is closed"):
            await session.clear_session()

    asyncio.run(run())


@pytest.mark.req("engram.integrations.agents-sdk-semantics")
def test_an_item_that_is_not_json_is_a_type_error_and_nothing_is_added(make: Maker) -> None:
    session = make()

    async def run() -> list[Any]:
        for bad in ({"role": "user", "content": {1, 2}}, {"role": "user", "content": object()}):
            with pytest.raises(TypeError):
                await session.add_items([{"role": "user", "content": "fine"}, bad])
        got: list[Any] = await session.get_items()
        return got

    assert asyncio.run(run()) == []


@pytest.mark.req("engram.integrations.agents-sdk-semantics")
def test_items_come_back_as_given_with_their_unknown_keys(make: Maker) -> None:
    session = make()
    item = {
        "role": "user",
        "content": [{"type": "input_text", "text": "hi"}],
        "x_custom": {"nested": [1, 2.5, None, True]},
    }

    async def run() -> list[Any]:
        await session.add_items([item])
        got: list[Any] = await session.get_items()
        return got

    assert asyncio.run(run()) == [item]


@pytest.mark.req("engram.integrations.agents-sdk-semantics")
def test_not_a_number_is_refused_where_sqlitesession_stores_it(any_store: Store) -> None:
    """A deliberate difference (docs/integrations.md): engram stores I-JSON only."""

    odd: Any = {"role": "user", "content": "x", "score": math.nan}

    async def run() -> None:
        oracle = SQLiteSession("s")
        await oracle.add_items([odd])
        oracle.close()
        ours = EngramSession("s", any_store)
        with pytest.raises(TypeError, match="non_finite_number at items"):
            await ours.add_items([odd])

    asyncio.run(run())


@pytest.mark.req("engram.integrations.agents-session-memories")
def test_a_runs_turns_become_memories_with_role_time_and_thread(
    openai_peer: Callable[[], ChatPeer], any_store: Store, tmp_path: Path
) -> None:
    peer = openai_peer()
    clock = FixedClock(datetime(2026, 3, 14, 9, 30, tzinfo=UTC))
    manifest = default_manifest_text().replace(
        'embedding_provider = "minilm-l6-v2"', 'embedding_provider = "local-hash-128"'
    )
    engine = open_engine(any_store, parse_manifest(manifest, str(tmp_path / "ote.toml")), clock)
    client = AsyncOpenAI(base_url=peer.url, api_key="sk-test", max_retries=0)
    agent = Agent(name="helper", model=OpenAIChatCompletionsModel(model="m", openai_client=client))
    session = EngramSession("ada-chat", any_store, clock=clock, memory=engine)

    async def run() -> None:
        await Runner.run(agent, "My sister Lena lives in Porto.", session=session)
        await Runner.run(agent, "My sister Lena lives in Porto.", session=session)

    asyncio.run(run())
    assert len(asyncio.run(session.get_items())) == 4  # the history keeps every item
    hits = recall(engine, "Where does Lena live?", 5).hits
    said = [h.memory for h in hits if h.memory.provenance.get("role") == "user"]
    assert len(said) == 1  # the second, identical turn is the same memory
    memory = said[0]
    assert memory.text == "[14 Mar 2026, 09:30 UTC] user: My sister Lena lives in Porto."
    assert memory.thread == "agents:ada-chat"
    assert memory.provenance["occurred_at"] == "2026-03-14T09:30:00.000000Z"
    replies = [h.memory for h in hits if h.memory.provenance.get("role") == "assistant"]
    assert [m.text.split("] ", 1)[1] for m in replies] == [
        "assistant: re: My sister Lena lives in Porto."
    ]
    session.close()


@pytest.mark.req("engram.integrations.agents-session-memories")
def test_a_subjects_session_records_into_that_subjects_ring(
    any_store: Store, tmp_path: Path
) -> None:
    manifest = default_manifest_text().replace(
        'embedding_provider = "minilm-l6-v2"', 'embedding_provider = "local-hash-128"'
    )
    engine = open_engine(
        any_store, parse_manifest(manifest, str(tmp_path / "o.toml")), FixedClock()
    )
    session = EngramSession("chat", any_store, subject="ada", memory=engine)
    asyncio.run(session.add_items([{"role": "user", "content": "I keep bees on the roof."}]))
    assert recall(engine, "bees roof", 5).hits == ()  # not the seat's memory
    assert session.memory is not None
    [hit] = recall(session.memory, "bees roof", 5).hits
    assert hit.memory.ring_id.startswith("subject:")


@pytest.mark.req("engram.integrations.agents-sdk-semantics")
def test_limits_zero_negative_and_past_the_end_read_as_sqlitesession_reads_them(
    make: Maker,
) -> None:
    session = make()

    async def run() -> list[list[str]]:
        await session.add_items([{"role": "user", "content": str(i)} for i in range(4)])
        got = []
        for limit in (None, 0, -1, 2, 10):
            items: list[Any] = await session.get_items(limit=limit)
            got.append([i["content"] for i in items])
        return got

    assert asyncio.run(run()) == [
        ["0", "1", "2", "3"],
        [],
        ["0", "1", "2", "3"],
        ["2", "3"],
        ["0", "1", "2", "3"],
    ]
