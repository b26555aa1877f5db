"""Facts from a conversation through an OpenAI-compatible chat model: a recording fake model on
loopback (a real HTTP server that imports nothing of engram) answers from the turns it is sent."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from memory_kit import manifest_text

from engram.core.clock import FixedClock
from engram.errors import RemoteError
from engram.memory import (
    ChatFactExtractor,
    MemoryEngine,
    get_memory,
    open_engine,
    parse_manifest,
    recall,
    record_conversation,
)
from engram.store import Store

CHAT = [
    {
        "role": "user",
        "name": "Ada",
        "content": "I moved to Leeds in March.",
        "timestamp": 1773480600,
    },
    {"role": "assistant", "content": "Nice! How is the new flat?", "timestamp": 1773480660},
    {
        "role": "user",
        "name": "Ada",
        "content": "Great, but my bike was stolen.",
        "timestamp": 1773480720,
    },
]


@dataclass
class FakeModel:
    """Answers each chat request with one fact per line that mentions a known topic."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    answer: str | None = None  # a fixed answer instead (to send something malformed)
    status: int = 200


def _facts_for(prompt: str) -> list[str]:
    facts = []
    for line in prompt.splitlines():
        said = re.match(r"^\[[^\]]+\] (\w+): (.*)$", line)
        if said and "Leeds" in said.group(2):
            facts.append(f"{said.group(1)} lives in Leeds since March 2026.")
        if said and "stolen" in said.group(2):
            facts.append(f"{said.group(1)}'s bike was stolen.")
    return facts


def _handler(model: FakeModel) -> type[BaseHTTPRequestHandler]:
    class Chat(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            model.requests.append({"path": self.path, "body": body})
            prompt = body["messages"][0]["content"]
            content = model.answer
            if content is None:
                content = "```json\n" + json.dumps({"facts": _facts_for(prompt)}) + "\n```"  # noqa: TID251 - the fake's wire body
            raw = json.dumps(  # noqa: TID251 - the fake's wire body
                {"choices": [{"message": {"role": "assistant", "content": content}}]}
            ).encode()
            self.send_response(model.status)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: object) -> None:
            return

    return Chat


@pytest.fixture
def model() -> Iterator[tuple[FakeModel, str]]:
    fake = FakeModel()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.req("engram.memory.conversation.facts")
def test_a_configured_model_adds_the_facts_it_finds_citing_their_turns(
    engine: MemoryEngine, model: tuple[FakeModel, str]
) -> None:
    fake, url = model
    result = record_conversation(
        engine, CHAT, thread="ada", extractor=ChatFactExtractor(url, "toy")
    )
    assert result.extraction == "ok:llm:toy"
    assert result.counts()["recorded"] == 3
    assert result.counts()["facts"] == 2
    assert len(fake.requests) == 1
    request = fake.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "toy"
    assert request["body"]["temperature"] == 0
    prompt = request["body"]["messages"][0]["content"]
    assert "Ada: I moved to Leeds in March." in prompt
    assert "assistant: Nice!" in prompt
    turn_ids = [m.memory_id for m in result.messages]
    leeds = result.facts[0].memory
    assert leeds.text == "Ada lives in Leeds since March 2026."
    assert leeds.kind == "fact"
    assert leeds.thread == "ada"
    assert leeds.provenance["extractor"] == "llm:toy"
    assert leeds.provenance["turns"] == turn_ids
    assert leeds.provenance["occurred_at"] == "2026-03-14T09:32:00.000000Z"  # the latest turn
    hits = recall(engine, "Which city does Ada live in?", 5).hits
    assert any(h.memory.id == leeds.id for h in hits)
    # Re-sending the conversation asks the model nothing and adds nothing.
    again = record_conversation(engine, CHAT, thread="ada", extractor=ChatFactExtractor(url, "toy"))
    assert len(fake.requests) == 1
    assert again.counts()["recorded"] == 0
    assert again.counts()["facts"] == 0


@pytest.mark.req("engram.memory.conversation.facts")
def test_without_a_model_the_turns_are_the_memories(engine: MemoryEngine) -> None:
    result = record_conversation(engine, CHAT, thread="ada")
    assert result.extraction == "disabled"
    assert result.facts == ()
    assert [get_memory(engine, str(m.memory_id)) is not None for m in result.messages] == [True] * 3


@pytest.mark.req("engram.memory.conversation.facts")
def test_a_long_conversation_goes_to_the_model_in_windows(
    engine: MemoryEngine, model: tuple[FakeModel, str]
) -> None:
    fake, url = model
    turns = [{"role": "user", "content": f"Fact number {i} about gardening."} for i in range(95)]
    record_conversation(engine, turns, thread="long", extractor=ChatFactExtractor(url, "toy"))
    sent = [r["body"]["messages"][0]["content"].count("Fact number") for r in fake.requests]
    assert sent == [40, 40, 15]


@pytest.mark.req("engram.memory.conversation.facts")
@pytest.mark.parametrize(
    ("answer", "status"),
    [("not json at all", 200), ('{"facts": "one"}', 200), ('{"facts": []}', 500)],
)
def test_a_failing_model_degrades_to_the_turns_when_fail_open(
    engine: MemoryEngine, model: tuple[FakeModel, str], answer: str, status: int
) -> None:
    fake, url = model
    fake.answer, fake.status = answer, status
    result = record_conversation(
        engine, CHAT, thread="ada", extractor=ChatFactExtractor(url, "toy")
    )
    assert result.extraction.startswith("degraded: ")
    assert result.counts()["recorded"] == 3
    assert result.facts == ()


@pytest.mark.req("engram.memory.conversation.facts")
def test_a_failing_model_writes_nothing_when_fail_closed(
    any_store: Store, tmp_path: Path, model: tuple[FakeModel, str]
) -> None:
    fake, url = model
    fake.answer = "no facts here"
    text = manifest_text().replace("fail_open = true", "fail_open = false")
    assert "fail_open = false" in text
    engine = open_engine(any_store, parse_manifest(text, str(tmp_path / "ote.toml")), FixedClock())
    with pytest.raises(RemoteError, match="not the JSON asked for"):
        record_conversation(engine, CHAT, thread="ada", extractor=ChatFactExtractor(url, "toy"))
    assert recall(engine, "Leeds", 5).hits == ()


@pytest.mark.req("engram.memory.conversation.facts")
def test_an_unreachable_model_is_one_remote_error_line(engine: MemoryEngine) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    extractor = ChatFactExtractor(f"http://127.0.0.1:{port}", "gone", timeout=2)
    result = record_conversation(engine, CHAT, extractor=extractor)
    assert result.extraction.startswith("degraded: ")
    assert "\n" not in result.extraction
