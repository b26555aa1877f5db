"""``engram record --from`` with a conversation: a chat export (a JSON array or {"messages"}) or
JSON lines of OpenAI messages, told apart from the memory line format or named by --format."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner, Result
from memory_kit import manifest_text

from engram.cli import cli
from engram.core.canonical import parse_strict
from engram.errors import InvalidRequest

CHAT = [
    {"role": "system", "content": "Be brief."},
    {
        "role": "user",
        "name": "Noor",
        "content": "Our allotment plot is number 14.",
        "timestamp": 1773480600,
    },
    {"role": "assistant", "content": "Noted: plot 14.", "timestamp": 1773480610},
    {
        "role": "user",
        "name": "Noor",
        "content": "The shed key is under the blue pot.",
        "timestamp": 1773480700,
    },
]


class Seat:
    def __init__(self, root: Path, database: str) -> None:
        self.root = root
        (root / ".engram").mkdir(parents=True)
        (root / ".engram" / "ote.toml").write_text(manifest_text())
        self.env = {"ENGRAM_DATABASE_URL": database, "ENGRAM_OTE": "", "THALAMUS_URL": ""}

    def run(self, *args: str, ok: bool = True, stdin: str | None = None) -> Result:
        old = Path.cwd()
        os.chdir(self.root)
        try:
            result = CliRunner().invoke(cli, list(args), env=self.env, input=stdin)
        finally:
            os.chdir(old)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    def memories(self) -> int:
        report: Any = parse_strict(self.run("status", "--json").stdout)
        return int(report["vector_coverage"]["memories"])


@pytest.fixture
def seat(tmp_path: Path, any_database_url: str) -> Seat:
    return Seat(tmp_path / "repo", any_database_url)


@pytest.mark.req("engram.memory.conversation.cli")
def test_a_chat_export_is_recorded_turn_by_turn_and_a_rerun_adds_nothing(
    seat: Seat, tmp_path: Path
) -> None:
    export = tmp_path / "chat.json"
    export.write_text(json.dumps(CHAT))  # noqa: TID251 - a user's file, written as any tool would
    done = seat.run("record", "--from", str(export))
    assert "recorded 3 new of 4 messages in thread chat:" in done.output
    assert "1 not turns" in done.output
    again = seat.run("record", "--from", str(export))
    assert "recorded 0 new of 4 messages" in again.output
    assert "3 duplicates and 0 near-duplicates skipped" in again.output
    assert seat.memories() == 3
    hits: Any = parse_strict(seat.run("recall", "where is the shed key?", "--json").stdout)
    top = hits["hits"][0]["memory"]
    assert top["text"] == "[14 Mar 2026, 09:31 UTC] Noor: The shed key is under the blue pot."
    assert top["provenance"]["occurred_at"] == "2026-03-14T09:31:40.000000Z"
    assert top["provenance"]["speaker"] == "Noor"


@pytest.mark.req("engram.memory.conversation.cli")
def test_a_messages_object_over_several_lines_and_messages_as_json_lines_and_stdin(
    seat: Seat, tmp_path: Path
) -> None:
    pretty = tmp_path / "export.json"
    pretty.write_text(json.dumps({"messages": CHAT[:2]}, indent=2))  # noqa: TID251 - a user's file
    out: Any = parse_strict(seat.run("record", "--from", str(pretty), "--json").stdout)
    assert out["counts"]["recorded"] == 1
    lines = "\n".join(json.dumps(m) for m in CHAT) + "\n"  # noqa: TID251 - a user's file
    (tmp_path / "chat.jsonl").write_text(lines)
    jsonl: Any = parse_strict(
        seat.run(
            "record", "--from", str(tmp_path / "chat.jsonl"), "--thread", "plot", "--json"
        ).stdout
    )
    assert jsonl["thread"] == "plot"
    # The first turn is the export's, already stored: the same text is the same memory.
    assert jsonl["counts"] == {
        "messages": 4,
        "recorded": 2,
        "duplicate": 1,
        "near_duplicate": 0,
        "skipped": 1,
        "facts": 0,
    }
    piped = seat.run("record", "--from", "-", "--thread", "plot", stdin=lines)
    assert "recorded 0 new of 4 messages in thread plot" in piped.output
    # --format names it where the first line cannot tell (and records lines still work).
    records = tmp_path / "records.jsonl"
    records.write_text('{"text": "The compost bin is full.", "kind": "fact"}\n')
    assert "recorded 1 new of 1 memories" in seat.run("record", "--from", str(records)).output
    forced = seat.run("record", "--from", str(records), "--format", "messages", ok=False)
    assert isinstance(forced.exception, InvalidRequest)
    assert "messages[0].role" in str(forced.exception)


@pytest.mark.req("engram.memory.conversation.bounds", "engram.memory.conversation.cli")
def test_an_oversize_conversation_file_is_one_line_and_records_nothing(
    seat: Seat, tmp_path: Path
) -> None:
    many = tmp_path / "many.jsonl"
    with many.open("w") as f:
        for i in range(100_000):
            f.write(f'{{"role": "user", "content": "note {i}"}}\n')
    refused = seat.run("record", "--from", str(many), ok=False)
    assert isinstance(refused.exception, InvalidRequest)  # exit 2, one line (engram main)
    assert "100,000 messages is more than 20,000" in str(refused.exception)
    huge = tmp_path / "huge.json"
    with huge.open("w") as f:
        f.write('[{"role": "user", "content": "')
        f.write("x" * (33 * 1024 * 1024))
        f.write('"}]')
    too_big = seat.run("record", "--from", str(huge), ok=False)
    assert isinstance(too_big.exception, InvalidRequest)
    assert "a conversation file is at most 33,554,432 bytes" in str(too_big.exception)
    assert seat.memories() == 0


@pytest.mark.req("engram.memory.conversation.cli")
def test_llm_model_needs_an_endpoint_and_a_conversation(seat: Seat, tmp_path: Path) -> None:
    export = tmp_path / "chat.json"
    export.write_text(json.dumps(CHAT))  # noqa: TID251 - a user's file
    no_url = seat.run("record", "--from", str(export), "--llm-model", "m", ok=False)
    assert "--llm-model needs --llm-endpoint or THALAMUS_URL" in str(no_url.exception)
    text = seat.run("record", "a note", "--kind", "fact", "--llm-model", "m", ok=False)
    assert "--llm-model goes with --from a conversation" in str(text.exception)
    assert seat.memories() == 0


class _Facts(BaseHTTPRequestHandler):
    """A chat model on loopback that lists one fact per turn naming the shed key."""

    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"]
        self.seen.append(prompt)
        facts = ["Noor keeps the shed key under the blue pot."] if "shed key" in prompt else []
        content = json.dumps({"facts": facts})  # noqa: TID251 - the fake's wire body
        raw = json.dumps({"choices": [{"message": {"content": content}}]}).encode()  # noqa: TID251
        self.send_response(200)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        return


@pytest.mark.req("engram.memory.conversation.cli", "engram.memory.conversation.facts")
def test_llm_model_records_the_facts_a_model_on_loopback_lists(seat: Seat, tmp_path: Path) -> None:
    _Facts.seen.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Facts)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        seat.env["THALAMUS_URL"] = f"http://127.0.0.1:{server.server_address[1]}"
        export = tmp_path / "chat.json"
        export.write_text(json.dumps(CHAT))  # noqa: TID251 - a user's file
        out: Any = parse_strict(
            seat.run("record", "--from", str(export), "--llm-model", "toy", "--json").stdout
        )
    finally:
        server.shutdown()
        server.server_close()
    assert out["extraction"] == "ok:llm:toy"
    assert [f["memory"]["text"] for f in out["facts"]] == [
        "Noor keeps the shed key under the blue pot."
    ]
    assert out["facts"][0]["memory"]["provenance"]["turns"] == [
        m["memory_id"] for m in out["messages"] if m["status"] == "recorded"
    ]
    assert len(_Facts.seen) == 1
    assert "Noor: The shed key is under the blue pot." in _Facts.seen[0]


@pytest.mark.req("engram.memory.conversation.cli")
@pytest.mark.parametrize(
    ("fmt", "stdin"),
    [
        ("messages", '{"role": "user", "content": "The gate code is 4711."}\n'),
        ("chat", '[{"role": "user", "content": "The gate code is 4711."}]'),
        ("auto", '{"messages": [{"role": "user", "content": "The gate code is 4711."}]}'),
    ],
)
def test_stdin_takes_every_format(seat: Seat, fmt: str, stdin: str) -> None:
    done = seat.run("record", "--from", "-", "--format", fmt, stdin=stdin)
    assert "recorded 1 new of 1 messages" in done.output
    oversize = seat.run(
        "record", "--from", "-", "--format", "chat", ok=False, stdin="[" + " " * (33 << 20)
    )
    assert "a conversation file is at most 33,554,432 bytes" in str(oversize.exception)
