"""Beliefs as the runtime reads them: any JSON object, and one rule that turns it into text.

Engram v0.1 fixes the export envelope, not the belief object, and lets a runtime inject
``system_prompt_injection`` "or build equivalent from beliefs array" (Tier 1). So a belief is
kept whole, its id is read from whichever documented member carries one
(:data:`engram.core.context_wire.ID_MEMBERS`), and it is rendered by the rule below, which
works for any object (docs/spec/runtime.md, "Beliefs" and "Rendering a belief"):

1. the first of :data:`TEXT_MEMBERS` that holds a non-empty string;
2. else a ``subject`` / ``predicate`` / ``object`` triple, as ``subject predicate object``;
3. else a name (:data:`NAME_MEMBERS`) with a ``value``, as ``name: value``;
4. else a string ``value`` alone;
5. else every other member, sorted by name, as ``name: value; ...`` (non-strings as compact
   JSON), leaving out ids, timestamps, versions and the members shown separately (category,
   confidence).

A prompt line is ``- [<category>] <text> (confidence <c.cc>)``, the tag and the confidence only
when the belief has them: for engram's own beliefs that is exactly the provider's layout.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from engram.core.canonical import Json
from engram.core.clock import parse_instant
from engram.core.context_wire import CATEGORY_MEMBERS, ID_MEMBERS, belief_id
from engram.core.jsonio import dumps_text
from engram.errors import CanonicalJsonError, InvalidRequest, MalformedExport

TEXT_MEMBERS: tuple[str, ...] = ("statement", "text", "content", "summary", "description", "belief")
TRIPLE_MEMBERS: tuple[str, str, str] = ("subject", "predicate", "object")
NAME_MEMBERS: tuple[str, ...] = ("key", "name", "attribute", "label")
CONFIDENCE_MEMBER = "confidence"
VERSION_MEMBERS: tuple[str, ...] = ("version", "revision")
TIMESTAMP_MEMBERS: frozenset[str] = frozenset(
    {"timestamp", "created", "updated", "modified", "date", "time"}
)
MAX_TEXT = 1000
"""Longest rendering of one belief, in characters (longer ones end in "…")."""

_EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
DEFAULT_BUDGET = 4000
"""Longest prompt :func:`build_system_prompt` writes (engram's provider's default budget)."""


@dataclass(frozen=True, slots=True)
class Belief:
    """One belief: ``data`` is the object exactly as the export carries it; the other fields are
    read from it. ``id`` is None when the object names no id (it is still rendered)."""

    id: str | None
    text: str
    category: str | None
    confidence: float | None
    version: int | None
    data: Mapping[str, Json]

    @property
    def statement(self) -> str:
        """The belief's text by the rendering rule (named as in engram's own beliefs)."""
        return self.text

    @classmethod
    def from_wire(cls, value: Json, what: str) -> Belief:
        if not isinstance(value, dict):
            raise MalformedExport(f"{what} has a belief that is not an object")
        return cls(
            id=belief_id(value),
            text=render_belief(value),
            category=_category(value),
            confidence=_number(value.get(CONFIDENCE_MEMBER)),
            version=_version(value),
            data=copy.deepcopy(value),
        )

    def mentions(self, text: str) -> bool:
        """Whether ``text`` is this belief's text or the value of one of its string members."""
        return self.text == text or any(v == text for v in self.data.values())

    def prompt_line(self) -> str:
        tag = f"[{self.category}] " if self.category else ""
        suffix = "" if self.confidence is None else f" (confidence {self.confidence:.2f})"
        return f"- {tag}{self.text}{suffix}"

    def updated_at(self) -> datetime:
        """``updated_at`` as an instant (the earliest one when absent or unreadable)."""
        value = self.data.get("updated_at")
        if isinstance(value, str):
            try:
                return parse_instant(value)
            except InvalidRequest:
                pass
        return _EARLIEST


def render_belief(belief: Mapping[str, Json]) -> str:
    """The text of one belief by the documented rule (module docstring), at most MAX_TEXT."""
    return _clip(" ".join(_render(belief).split()) or "(a belief with no readable content)")


def _render(belief: Mapping[str, Json]) -> str:
    for name in TEXT_MEMBERS:
        value = belief.get(name)
        if isinstance(value, str) and value.strip():
            return value
    if all(_scalar(belief.get(n)) for n in TRIPLE_MEMBERS):
        return " ".join(_show(belief[n]) for n in TRIPLE_MEMBERS)
    value = belief.get("value")
    for name in NAME_MEMBERS:
        label = belief.get(name)
        if isinstance(label, str) and label.strip() and "value" in belief:
            return f"{label}: {_show(value)}"
    if isinstance(value, str) and value.strip():
        return value
    shown = {k: v for k, v in belief.items() if not _hidden(k)}
    return "; ".join(f"{k}: {_show(shown[k])}" for k in sorted(shown))


def _hidden(name: str) -> bool:
    return (
        name in ID_MEMBERS
        or name in CATEGORY_MEMBERS
        or name == CONFIDENCE_MEMBER
        or name in VERSION_MEMBERS
        or name.lower() in TIMESTAMP_MEMBERS
        or name.endswith(("_at", "At"))
    )


def _scalar(value: Json) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool) and value != ""


def _show(value: Json) -> str:
    if isinstance(value, str):
        return value
    try:
        return dumps_text(value, sort_keys=True)
    except CanonicalJsonError:  # pragma: no cover - a parsed export holds only JSON values
        return repr(value)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _category(belief: Mapping[str, Json]) -> str | None:
    for name in CATEGORY_MEMBERS:
        value = belief.get(name)
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())[:64]
    return None


def _number(value: Json) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _version(belief: Mapping[str, Json]) -> int | None:
    for name in VERSION_MEMBERS:
        value = belief.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _order(beliefs: Iterable[Belief]) -> list[Belief]:
    # Stable sorts, least significant key first: as engram's provider orders its injection.
    by_id = sorted(beliefs, key=lambda b: b.id or "")
    by_time = sorted(by_id, key=Belief.updated_at, reverse=True)
    return sorted(by_time, key=lambda b: b.confidence or 0.0, reverse=True)


def build_system_prompt(
    display_name: str,
    timezone: str,
    beliefs: Iterable[Belief],
    scope: str = "full",
    budget: int = DEFAULT_BUDGET,
) -> str:
    """The equivalent of ``system_prompt_injection`` built from identity and beliefs.

    The first line is the spec fixture's (``User: Test User (UTC).``); then one line per belief
    (:meth:`Belief.prompt_line`), most confident first, within ``budget`` characters, the rest
    counted in a last line: the layout of engram's provider, so a prompt rebuilt after a diff
    reads like the one the provider signed.
    """
    head = f"User: {display_name} ({timezone})."
    ordered = _order(beliefs)
    if not ordered:
        return head
    lines = [head, f"Known about the user (scope {scope}):"]
    used = sum(len(line) + 1 for line in lines)
    kept = 0
    for belief in ordered:
        line = belief.prompt_line()
        reserve = 64 if kept + 1 < len(ordered) else 0
        if used + len(line) + 1 + reserve > budget:
            break
        lines.append(line)
        used += len(line) + 1
        kept += 1
    if kept < len(ordered):
        lines.append(f"({len(ordered) - kept} more beliefs omitted to fit the size budget.)")
    return "\n".join(lines)


def beliefs_of(values: Iterable[Any], what: str) -> tuple[Belief, ...]:
    return tuple(Belief.from_wire(v, what) for v in values)


__all__ = [
    "DEFAULT_BUDGET",
    "MAX_TEXT",
    "NAME_MEMBERS",
    "TEXT_MEMBERS",
    "Belief",
    "beliefs_of",
    "build_system_prompt",
    "render_belief",
]
