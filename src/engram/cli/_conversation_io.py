"""``engram record --from FILE``: which format a file is in, and reading a conversation from it.

Three formats (docs/spec/memory-cli.md "record --from"): ``records`` (JSON lines ``{text,
kind, ...}``, one memory each, streamed), ``messages`` (JSON lines, one OpenAI chat message
each) and ``chat`` (one JSON document: an array of messages or ``{"messages": [...]}``). The
last two are one conversation (engram.memory.record_conversation), read whole within
MAX_CONVERSATION_FILE bytes.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import click

from engram.core.canonical import Json, parse_strict
from engram.core.jsonio import dumps_text
from engram.errors import InputError, InvalidRequest

FORMATS = ("auto", "records", "messages", "chat")
# A conversation file is read whole: its text is at most 8 MiB (MAX_CONVERSATION_BYTES), and
# JSON escapes and the members around it may take up to four times that many bytes.
MAX_CONVERSATION_FILE = 32 * 1024 * 1024
# Values a conversation file may hold, counted before parsing as its "," "[" and "{" bytes (an
# over-count: those inside strings count too). 32 MiB of "[],[],..." parsed into 11 million
# lists peaked at 900 MB; a real conversation of 20,000 messages holds about 100,000 values.
MAX_CONVERSATION_VALUES = 1_000_000
_SNIFF = 1 << 20


@contextlib.contextmanager
def readable(source: Path, cap: int | None = None) -> Iterator[Path]:
    """``source``, or for ``-`` stdin spooled to an unlinked temporary file (read twice in
    bounded memory: once to tell its format, once to record), at most ``cap`` bytes of it."""
    if str(source) != "-":
        yield source
        return
    with tempfile.TemporaryFile() as spool:
        if cap is None:
            shutil.copyfileobj(sys.stdin.buffer, spool)
        else:
            spool.write(_read_capped(sys.stdin.buffer, source))  # no further than the cap
        spool.flush()
        spool.seek(0)
        yield Path(f"/dev/fd/{spool.fileno()}")


def told_apart(stack: contextlib.ExitStack, source: Path, fmt: str) -> tuple[Path, str]:
    """The file to read and its format (``--format``, or for ``auto`` its first line). stdin is
    spooled here unless it is memory lines (``record --from`` spools those itself), within
    MAX_CONVERSATION_FILE when it is named a conversation."""
    if fmt == "records":
        return source, fmt
    cap = MAX_CONVERSATION_FILE if fmt != "auto" else None
    path = stack.enter_context(readable(source, cap))
    return path, sniff(path, source) if fmt == "auto" else fmt


def sniff(source: Path, shown: Path) -> str:
    """The format of ``source`` from its first line: a JSON array is ``chat``; an object with
    ``role`` (or ``type``) a ``messages`` line, with ``messages`` a ``chat`` document, with
    ``text`` a ``records`` line; an object that does not end on its first line is a ``chat``
    document written over several lines."""
    with source.open("rb") as f:
        line = b""
        while not line.strip():
            line = f.readline(_SNIFF)
            if not line:
                return "records"  # empty: nothing to record either way
    first = line.lstrip()[:1]
    if first == b"[":
        return "chat"
    try:
        value = parse_strict(line.strip())
    except InputError:
        if first == b"{":
            return "chat"
        raise InvalidRequest(
            f"{shown}: cannot tell the format from the first line; pass --format "
            "records, messages or chat"
        ) from None
    if isinstance(value, dict):
        if "messages" in value:
            return "chat"
        if "role" in value or ("type" in value and "text" not in value):
            return "messages"
    return "records"


def _read_capped(f: IO[bytes], shown: Path) -> bytes:
    data = f.read(MAX_CONVERSATION_FILE + 1)
    if len(data) > MAX_CONVERSATION_FILE:
        raise InvalidRequest(
            f"{shown}: a conversation file is at most {MAX_CONVERSATION_FILE:,} bytes; nothing "
            "was recorded (split it into several conversations)"
        )
    return data


def read_conversation(source: Path, shown: Path, fmt: str) -> list[Json]:
    """The messages of a ``chat`` document or a ``messages`` JSON-lines file."""
    with source.open("rb") as f:
        data = _read_capped(f, shown)
    values = data.count(b",") + data.count(b"[") + data.count(b"{")
    if values > MAX_CONVERSATION_VALUES:
        raise InvalidRequest(
            f"{shown}: more than {MAX_CONVERSATION_VALUES:,} JSON values in a conversation file; "
            "nothing was recorded (split it into several conversations)"
        )
    if fmt == "chat":
        try:
            value = parse_strict(data)
        except InputError as e:
            raise InvalidRequest(f"{shown}: {e.message}") from e
        if isinstance(value, dict):
            value = value.get("messages")
        if not isinstance(value, list):
            raise InvalidRequest(
                f'{shown}: expected a JSON array of messages or {{"messages": [...]}}'
            )
        return value
    messages: list[Json] = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            messages.append(parse_strict(line.rstrip(b"\r")))
        except InputError as e:
            raise InvalidRequest(f"{shown}:{number}: {e.message}") from e
    return messages


F = TypeVar("F", bound=Callable[..., Any])


def conversation_options(command: F) -> F:
    """``--format``, ``--llm-model`` and ``--llm-endpoint`` of ``engram record``."""
    for option in reversed(
        [
            click.option(
                "--format",
                "fmt",
                type=click.Choice(FORMATS),
                default="auto",
                show_default=True,
                help="What --from holds: records (one memory per line), messages (one chat "
                "message per line) or chat (a JSON array of messages or {messages: [...]}); "
                "auto tells them apart.",
            ),
            click.option(
                "--llm-model",
                default=None,
                help="With a conversation: also record the facts this OpenAI-compatible chat "
                "model lists.",
            ),
            click.option(
                "--llm-endpoint", default=None, help="Its base URL (default: $THALAMUS_URL)."
            ),
        ]
    ):
        command = option(command)
    return command


@dataclass(frozen=True)
class RecordedChat:
    """``record --from`` of a conversation: read it, record it, print the counts."""

    path: Path
    shown: Path
    fmt: str
    thread: str
    ring: str
    kind: str | None

    def run(
        self,
        ote: Path | None,
        database: str | None,
        subject: str | None,
        llm_model: str | None,
        llm_endpoint: str | None,
        as_json: bool,
    ) -> None:
        from engram.cli._seat import seat_engine
        from engram.memory import ChatFactExtractor, record_conversation

        messages = read_conversation(self.path, self.shown, self.fmt)
        extractor = None
        if llm_model:
            from engram.cli._settings import settings

            endpoint = llm_endpoint or settings().thalamus_url
            if not endpoint:
                raise InvalidRequest(
                    "--llm-model needs --llm-endpoint or THALAMUS_URL (no default)"
                )
            extractor = ChatFactExtractor(endpoint, llm_model)
        with seat_engine(ote, database, subject=subject) as engine:
            result = record_conversation(
                engine,
                messages,
                thread=self.thread or None,
                ring=self.ring,
                kind=self.kind or "episode",
                extractor=extractor,
            )
        if as_json:
            click.echo(dumps_text(result.to_wire(), indent=2))
            return
        n = result.counts()
        click.echo(
            f"recorded {n['recorded']} new of {n['messages']} messages in thread {result.thread} "
            f"({n['duplicate']} duplicates and {n['near_duplicate']} near-duplicates skipped, "
            f"{n['skipped']} not turns, {n['facts']} facts; extraction: {result.extraction})"
        )


__all__ = [
    "FORMATS",
    "MAX_CONVERSATION_FILE",
    "MAX_CONVERSATION_VALUES",
    "RecordedChat",
    "conversation_options",
    "read_conversation",
    "readable",
    "sniff",
    "told_apart",
]
