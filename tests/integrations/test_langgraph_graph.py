"""A real LangGraph 1.x graph with ``EngramStore`` as its long-term memory, on SQLite and
PostgreSQL: what one conversation thread writes, another thread recalls (docs/integrations.md).

The graph is LangGraph's own ``StateGraph`` compiled with a checkpointer (short-term, per
thread) and the store (long-term, across threads); its nodes reach the store as LangGraph
gives it to them (``runtime.store``), sync and async.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from engram.integrations.langgraph import EngramStore


class State(TypedDict):
    user: str
    message: str
    recalled: list[str]


def remember(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    assert runtime.store is not None
    if state["message"].startswith("remember: "):
        text = state["message"].removeprefix("remember: ")
        runtime.store.put(("memories", state["user"]), uuid.uuid4().hex, {"text": text})
    return {}


def recall_node(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    assert runtime.store is not None
    hits = runtime.store.search(("memories", state["user"]), query=state["message"], limit=3)
    return {"recalled": [h.value["text"] for h in hits]}


async def aremember(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    assert runtime.store is not None
    if state["message"].startswith("remember: "):
        text = state["message"].removeprefix("remember: ")
        await runtime.store.aput(("memories", state["user"]), uuid.uuid4().hex, {"text": text})
    return {}


async def arecall(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    assert runtime.store is not None
    hits = await runtime.store.asearch(("memories", state["user"]), query=state["message"])
    return {"recalled": [h.value["text"] for h in hits]}


def build(store: EngramStore, *, asynchronous: bool = False) -> Any:
    builder = StateGraph(State)
    builder.add_node("remember", aremember if asynchronous else remember)
    builder.add_node("recall", arecall if asynchronous else recall_node)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(checkpointer=InMemorySaver(), store=store)


def turn(user: str, message: str) -> State:
    return {"user": user, "message": message, "recalled": []}


def thread(name: str) -> Any:
    return {"configurable": {"thread_id": name}}


@pytest.mark.req("engram.integrations.langgraph-graph")
def test_what_one_thread_remembers_another_recalls(any_database_url: str) -> None:
    with EngramStore.open(any_database_url) as store:
        graph = build(store)
        graph.invoke(turn("ada", "remember: I drink green tea every morning"), thread("t1"))
        graph.invoke(turn("ada", "remember: my cat is called Turing"), thread("t1"))
        graph.invoke(turn("bob", "remember: I drink espresso"), thread("t3"))
    # A second thread, in a fresh store object on the same database (as another process would).
    with EngramStore.open(any_database_url) as store:
        graph = build(store)
        answer = graph.invoke(turn("ada", "what do I drink in the morning?"), thread("t2"))
        assert answer["recalled"][0] == "I drink green tea every morning"
        assert "I drink espresso" not in answer["recalled"]  # Bob's namespace is not Ada's
        cat = graph.invoke(turn("ada", "what is my cat called?"), thread("t2"))
        assert cat["recalled"][0] == "my cat is called Turing"
        # The checkpointer kept thread t2's last state; the store kept both threads' memories.
        assert graph.get_state(thread("t2")).values["message"] == "what is my cat called?"
        assert store.list_namespaces(prefix=("memories",)) == [
            ("memories", "ada"),
            ("memories", "bob"),
        ]


@pytest.mark.req("engram.integrations.langgraph-graph")
def test_an_async_graph_reaches_the_store_through_abatch(any_database_url: str) -> None:
    async def run() -> list[str]:
        with EngramStore.open(any_database_url) as store:
            graph = build(store, asynchronous=True)
            await graph.ainvoke(turn("ada", "remember: the deploy runs on Fridays"), thread("a"))
            answer = await graph.ainvoke(turn("ada", "when does the deploy run?"), thread("b"))
            return list(answer["recalled"])

    assert asyncio.run(run()) == ["the deploy runs on Fridays"]
