"""Reading a conversation: OpenAI chat messages become turns (speaker, time, text) or are skipped.

Beyond engram.ote.v1 (issue 29, "conversations in, memories out"); the rules are
docs/spec/memory-conversations.md. This module only reads and checks: nothing here touches the
store, so a conversation that breaks a rule is refused before anything is written.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from engram.core.clock import format_instant_precise
from engram.errors import InvalidRequest

# A conversation is refused whole beyond either bound, before anything is written
# (docs/spec/memory-conversations.md "Bounds"); the CLI and the REST route refuse earlier on
# the bytes they read.
MAX_MESSAGES = 20_000
MAX_CONVERSATION_BYTES = 8 * 1024 * 1024  # UTF-8 bytes of every message's text together
MAX_SPEAKER = 200

TURN_ROLES = frozenset({"user", "assistant"})
SKIPPED_ROLES = frozenset({"system", "developer", "tool", "function"})
TIME_KEYS = ("timestamp", "created_at", "create_time")
# LangChain's message dicts (``model_dump()`` of HumanMessage, AIMessage, ...) name the role in
# ``type``; LangGraph apps often keep them so.
LANGCHAIN_ROLES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "function",
}
TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})
_MILLISECONDS_FROM = 100_000_000_000  # an epoch number above this is milliseconds (year 5138+)
_MAX_EPOCH_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z
_SPACE = re.compile(r"\s+")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class Turn:
    """One message kept as a memory: who said what, and when."""

    index: int  # its position in the messages given
    role: str  # user | assistant
    speaker: str  # the message's ``name``, else its role
    content: str
    occurred_at: datetime | None  # the message's own time, when it carries one
    message_id: str | None

    def text(self) -> str:
        """The memory's text: ``[8 May 2023, 13:56 UTC] Ada: ...`` (the date only when the
        message has one): the speaker and the date are words recall can match."""
        line = f"{self.speaker}: {self.content}"
        if self.occurred_at is None:
            return line
        t = self.occurred_at
        stamp = f"{t.day} {_MONTHS[t.month - 1]} {t.year}, {t.hour:02d}:{t.minute:02d} UTC"
        return f"[{stamp}] {line}"


@dataclass(frozen=True)
class Skipped:
    index: int
    reason: str


# ASCII punctuation and symbols (Unicode categories P* and S*) become spaces in one translate:
# most turns are ASCII, and the per-character category lookup was a sixth of recording them.
_ASCII_MARKS = str.maketrans(
    {c: " " for c in map(chr, range(128)) if unicodedata.category(c)[0] in "PS"}
)


def normalised(text: str) -> str:
    """The near-duplicate form of a text: NFKC, case-folded, punctuation and symbols dropped,
    whitespace collapsed; the stripped text itself when nothing else is left (an emoji)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    if folded.isascii():
        kept = folded.translate(_ASCII_MARKS)
    else:
        kept = "".join(" " if unicodedata.category(c)[0] in "PS" else c for c in folded)
    out = _SPACE.sub(" ", kept).strip()
    return out or _SPACE.sub(" ", folded).strip()


def dedupe_key(speaker: str, text: str) -> str:
    """Two turns of one thread and ring with the same key are near-duplicates (the same speaker
    saying the same words, up to case, punctuation, symbols and spacing)."""
    data = f"{normalised(speaker)}\x1f{normalised(text)}".encode()
    return hashlib.sha256(data).hexdigest()[:32]


def _when(value: object, where: str) -> datetime:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidRequest(f"{where}: expected an ISO 8601 date-time or epoch seconds")
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError as e:
            raise InvalidRequest(
                f"{where}: not an ISO 8601 date-time: {value[:60]!r} "
                "(e.g. 2026-03-01T12:00:00Z, or epoch seconds)"
            ) from e
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    seconds = float(value)
    if seconds != seconds or abs(seconds) == float("inf"):
        raise InvalidRequest(f"{where}: not a number of seconds")
    if abs(seconds) >= _MILLISECONDS_FROM:
        seconds /= 1000
    if not 0 <= seconds <= _MAX_EPOCH_SECONDS:
        raise InvalidRequest(f"{where}: {value} is not an instant between 1970 and 9999")
    return datetime.fromtimestamp(seconds, UTC)


def _content(value: object, where: str) -> str | None:
    """The text of a message's ``content``: a string, or the text parts of a list joined by
    newlines (images, audio, files and refusals are not text: left out); None when none."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise InvalidRequest(f"{where}: expected a string or a list of content parts")
    texts: list[str] = []
    for i, part in enumerate(value):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping):
            if part.get("type") in TEXT_PART_TYPES:
                text = part.get("text")
                if not isinstance(text, str):
                    raise InvalidRequest(f"{where}[{i}].text: expected a string")
                texts.append(text)
        else:
            raise InvalidRequest(f"{where}[{i}]: expected a content part (an object)")
    return "\n".join(texts) if texts else None


def read_turns(
    messages: Sequence[object], where: str = "messages"
) -> tuple[list[Turn], list[Skipped]]:
    """The turns of ``messages`` in order, and the messages skipped with why; a message that
    breaks a rule, or a conversation beyond the bounds, is an :class:`InvalidRequest`."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise InvalidRequest(f"{where}: expected a list of messages")
    if len(messages) > MAX_MESSAGES:
        raise InvalidRequest(
            f"{where}: {len(messages):,} messages is more than {MAX_MESSAGES:,} in one "
            "conversation; nothing was recorded (send it in parts, each its own request)"
        )
    turns: list[Turn] = []
    skipped: list[Skipped] = []
    total = 0
    for index, message in enumerate(messages):
        at = f"{where}[{index}]"
        if not isinstance(message, Mapping):
            raise InvalidRequest(f"{at}: expected a message (an object with role and content)")
        kind = message.get("type")
        role = message.get("role")
        if role is None and kind in LANGCHAIN_ROLES:  # a LangChain message's model_dump()
            role, kind = LANGCHAIN_ROLES[str(kind)], None
        if kind is not None and kind != "message":
            # Responses-API items (function_call, function_call_output, reasoning, ...) are
            # tool activity, not something a person or the assistant said.
            skipped.append(Skipped(index, f"item type {str(kind)[:40]}"))
            continue
        if not isinstance(role, str):
            raise InvalidRequest(f"{at}.role: expected a string")
        if role in SKIPPED_ROLES:
            skipped.append(Skipped(index, f"role {role}"))
            continue
        if role not in TURN_ROLES:
            raise InvalidRequest(
                f"{at}.role: {role[:40]!r} is not user, assistant, system, developer or tool"
            )
        content = _content(message.get("content"), f"{at}.content")
        if content is not None:
            total += len(content.encode("utf-8", "surrogatepass"))
            if total > MAX_CONVERSATION_BYTES:
                raise InvalidRequest(
                    f"{where}: more than {MAX_CONVERSATION_BYTES:,} bytes of text in one "
                    "conversation; nothing was recorded (send it in parts)"
                )
        if content is None or not content.strip():
            skipped.append(Skipped(index, "no text"))
            continue
        name = message.get("name")
        if name is not None and not isinstance(name, str):
            raise InvalidRequest(f"{at}.name: expected a string")
        speaker = _SPACE.sub(" ", name).strip() if name else role
        if len(speaker) > MAX_SPEAKER:
            raise InvalidRequest(f"{at}.name: longer than {MAX_SPEAKER} characters")
        occurred: datetime | None = None
        for key in TIME_KEYS:
            if message.get(key) is not None:
                occurred = _when(message[key], f"{at}.{key}")
                break
        message_id = message.get("id")
        turns.append(
            Turn(
                index=index,
                role=role,
                speaker=speaker or role,
                content=content.strip(),
                occurred_at=occurred,
                message_id=message_id if isinstance(message_id, str) else None,
            )
        )
    return turns, skipped


def default_thread(turns: Sequence[Turn]) -> str:
    """``chat:`` and 16 hex digits of the first turn's speaker, words and time: re-sending a
    conversation, or sending it again with more turns at its end, lands in the same thread."""
    if not turns:
        return ""
    first = turns[0]
    when = "" if first.occurred_at is None else format_instant_precise(first.occurred_at)
    seed = f"{dedupe_key(first.speaker, first.content)}\x1f{when}"
    return "chat:" + hashlib.sha256(seed.encode()).hexdigest()[:16]


__all__ = [
    "MAX_CONVERSATION_BYTES",
    "MAX_MESSAGES",
    "Skipped",
    "Turn",
    "dedupe_key",
    "default_thread",
    "normalised",
    "read_turns",
]
