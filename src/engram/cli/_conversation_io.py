"""``engram record --from FILE``: which format a file is in, and reading a conversation from it.

Three formats (docs/spec/memory-cli.md "record --from"): ``records`` (JSON lines ``{text,
kind, ...}``, one memory each, streamed), ``messages`` (JSON lines, one OpenAI chat message
each) and ``chat`` (one JSON document: an array of messages or ``{"messages": [...]}``). The
last two are one conversation (engram.memory.record_conversation), read whole within
MAX_CONVERSATION_FILE bytes.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import tempfile
from collections.abc import Callable
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
# A memory line opens with one of its own members; a chat document never does.
_MEMORY_LINE = re.compile(rb'\{\s*"(?:text|kind|ring|thread|provenance)"\s*:')


class _Prefixed(io.RawIOBase):
    """Bytes already read (``head``), then the rest of ``rest``: stdin with its sniffed first
    line put back, so the format's own reader sees every byte once."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = memoryview(head)
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        # read1: what the pipe has now (read would wait for a whole buffer of an interactive
        # stdin); a stream without it is read the plain way, never taken for its end.
        data = getattr(self._rest, "read1", self._rest.read)(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _first_line(f: IO[bytes]) -> bytes:
    """The bytes up to and including the first non-blank line, at most _SNIFF of that line."""
    head = b""
    while True:
        line = f.readline(_SNIFF)
        head += line
        if not line or line.strip():
            return head


def _spooled(stack: contextlib.ExitStack, head: bytes, source: Path) -> Path:
    """stdin (``head`` first) in an unlinked temporary file, at most MAX_CONVERSATION_FILE
    bytes: a conversation is read twice (its format, then its messages)."""
    spool = stack.enter_context(tempfile.TemporaryFile())  # noqa: SIM115 - the stack closes it
    spool.write(_read_capped(io.BufferedReader(_Prefixed(head, sys.stdin.buffer)), source))
    spool.flush()
    spool.seek(0)
    return Path(f"/dev/fd/{spool.fileno()}")


def _put_back(stack: contextlib.ExitStack, head: bytes) -> None:
    """Memory lines on stdin are streamed by ``record --from -`` itself, which reads
    ``sys.stdin``: give it stdin with the sniffed line put back, for this command only."""
    original = sys.stdin
    chained = io.BufferedReader(_Prefixed(head, original.buffer), buffer_size=1 << 16)
    sys.stdin = io.TextIOWrapper(chained, encoding=original.encoding or "utf-8")
    stack.callback(setattr, sys, "stdin", original)


def told_apart(stack: contextlib.ExitStack, source: Path, fmt: str) -> tuple[Path, str]:
    """The file to read and its format (``--format``, or for ``auto`` its first line).

    A conversation on stdin is spooled within MAX_CONVERSATION_FILE; memory lines on stdin are
    never spooled here (``record --from -`` streams them, line by line within its own line
    limit), so an endless stream is refused after at most one line, not copied first."""
    if fmt == "records":
        return source, fmt
    if str(source) != "-":
        return source, sniff_line(_head_of(source), source) if fmt == "auto" else fmt
    head = _first_line(sys.stdin.buffer)
    if fmt == "auto":
        fmt = sniff_line(head, source)
    if fmt == "records":
        _put_back(stack, head)
        return source, fmt
    return _spooled(stack, head, source), fmt


def _head_of(path: Path) -> bytes:
    with path.open("rb") as f:
        return _first_line(f)


def sniff_line(head: bytes, shown: Path) -> str:
    """The format from the first non-blank line (``head``): a JSON array is ``chat``; an
    object with ``role`` (or ``type``) a ``messages`` line, with ``messages`` a ``chat``
    document, with ``text`` a ``records`` line; an object that does not end on its first line
    is a ``chat`` document written over several lines, unless it opens as a memory line
    (``{"text"``), which then is one line too long for ``records``."""
    line = head.strip()
    if not line:
        return "records"  # empty: nothing to record either way
    first = line.lstrip()[:1]
    if first == b"[":
        return "chat"
    try:
        value = parse_strict(line.strip())
    except InputError:
        if first == b"{":
            return "records" if _MEMORY_LINE.match(line) else "chat"
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
    "sniff_line",
    "told_apart",
]
