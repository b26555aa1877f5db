"""The adapters' five-line examples run as written, taken from README.md and
docs/integrations.md: the LangGraph one against a real ``StateGraph`` on the engram database the
environment names, the Agents SDK one through ``Runner.run`` with the provider and a fake model
on loopback (the names each example leaves to its reader, ``builder``, ``engram`` and ``model``,
are all the test provides)."""

from __future__ import annotations

import ast
import asyncio
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from agents import OpenAIChatCompletionsModel, set_tracing_disabled
from agents_kit import ChatPeer, Provider, provider_on_loopback, system_prompts
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from openai import AsyncOpenAI

from engram.runtime import AsyncEngramClient, RuntimeConfig

set_tracing_disabled(True)
REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", REPO / "docs" / "integrations.md"]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def examples(module: str) -> list[tuple[str, str]]:
    found = [
        (path.name, code)
        for path in DOCS
        for code in BLOCK.findall(path.read_text(encoding="utf-8"))
        if f"from engram.integrations.{module} import" in code
    ]
    assert {where for where, _ in found} == {"README.md", "integrations.md"}, module
    return found


def five_lines(code: str) -> bool:
    return len([line for line in code.splitlines() if line.strip()]) <= 5


class State(TypedDict):
    drink: str


def ask(state: State, runtime: Runtime[None]) -> dict[str, Any]:
    assert runtime.store is not None
    [hit] = runtime.store.search(("users", "ada"), query="drink", limit=1)
    return {"drink": hit.value["text"]}


@pytest.mark.req("engram.integrations.readme-examples")
@pytest.mark.parametrize(("where", "code"), examples("langgraph"))
def test_the_langgraph_example_runs_as_written(
    where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert five_lines(code), f"{where}: the example grew past five lines"
    monkeypatch.delenv("ENGRAM_DATABASE_URL", raising=False)
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path))
    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    namespace: dict[str, Any] = {"builder": builder}
    exec(compile(code, where, "exec"), namespace)  # noqa: S102 - the documented example
    assert namespace["hits"][0].value == {"text": "Ada drinks green tea, never coffee"}
    assert namespace["graph"].invoke({"drink": ""}) == {
        "drink": "Ada drinks green tea, never coffee"
    }
    namespace["store"].close()
    assert (tmp_path / "engram.db").is_file()  # the database every engram command uses


@pytest.fixture
def peers(openai_peer: Callable[[], ChatPeer]) -> Iterator[tuple[Provider, ChatPeer]]:
    with provider_on_loopback() as provider:
        yield provider, openai_peer()


@pytest.mark.req("engram.integrations.readme-examples")
@pytest.mark.parametrize(("where", "code"), examples("agents"))
def test_the_agents_example_runs_as_written(
    where: str,
    code: str,
    peers: tuple[Provider, ChatPeer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert five_lines(code), f"{where}: the example grew past five lines"
    monkeypatch.delenv("ENGRAM_DATABASE_URL", raising=False)
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path))
    provider, fake = peers
    compiled = compile(code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)

    async def run() -> dict[str, Any]:
        config = RuntimeConfig(provider.url, provider.demo.token, runtime_id="docs")
        async with AsyncEngramClient(config) as engram:
            client = AsyncOpenAI(base_url=fake.url, api_key="sk-test", max_retries=0)
            namespace: dict[str, Any] = {
                "engram": engram,
                "model": OpenAIChatCompletionsModel(model="fake", openai_client=client),
            }
            awaited = eval(compiled, namespace)  # noqa: S307 - the documented example
            if awaited is not None:
                await awaited
            return namespace

    namespace = asyncio.run(run())
    assert namespace["result"].final_output == "re: What should I cook?"
    [prompt] = system_prompts(fake)
    assert prompt.startswith("Be concise.")
    assert "User: Ada Example (Europe/London)." in prompt
