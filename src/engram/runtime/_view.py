"""The runtime's local view of a subject's context: built from a verified export, moved
forward by verified diffs, and turned into a system prompt.

Engram v0.1 conformance: "Injects system_prompt_injection into LLM system prompt (or builds
equivalent from beliefs array)" (Tier 1) and "Implements incremental sync via
GET /v1/context/diff" (Tier 2). How a diff is applied, and when it cannot be, is written down in
docs/spec/runtime.md, "Incremental sync".

Views are immutable: applying a diff returns a new view, so a view handed to a caller never
changes under it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from engram.core.canonical import JsonValue
from engram.errors import MalformedExport
from engram.runtime._verify import PublishedKey, Verified, parse_document, verify_signed


class DiffNotApplicableError(Exception):
    """A verified diff does not follow this view (other subject, scope or cursor, or an older
    belief version); the caller fetches the full export instead. Never leaves the SDK."""


@dataclass(frozen=True, slots=True)
class Belief:
    """One belief as the export carries it; ``data`` keeps every wire member."""

    id: str
    category: str
    statement: str
    confidence: float | None
    version: int | None
    data: Mapping[str, JsonValue]

    @classmethod
    def from_wire(cls, value: JsonValue, what: str) -> Belief:
        if not isinstance(value, dict):
            raise MalformedExport(f"{what} has a belief that is not an object")
        ident, category, statement = value.get("id"), value.get("category"), value.get("statement")
        if not isinstance(ident, str) or not isinstance(statement, str):
            raise MalformedExport(f"{what} has a belief without an id and a statement string")
        confidence = value.get("confidence")
        version = value.get("version")
        return cls(
            id=ident,
            category=category if isinstance(category, str) else "general",
            statement=statement,
            confidence=float(confidence)
            if isinstance(confidence, int | float) and not isinstance(confidence, bool)
            else None,
            version=version if isinstance(version, int) and not isinstance(version, bool) else None,
            data=copy.deepcopy(value),
        )


@dataclass(frozen=True, slots=True)
class ContextView:
    """What the runtime knows about the subject right now, and until when it may use it.

    ``export`` is the last full export exactly as verified (signature included); ``beliefs`` and
    ``system_prompt_injection`` reflect every diff applied since. ``cursor`` is what the next
    ``/v1/context/diff?since=`` asks from.
    """

    export: Mapping[str, JsonValue]
    subject_id: str
    display_name: str
    timezone: str
    scope: str
    kid: str
    issued_at: datetime
    expires_at: datetime
    cursor: str
    beliefs: tuple[Belief, ...]
    system_prompt_injection: str
    corrections: tuple[Mapping[str, JsonValue], ...]

    @classmethod
    def from_export(cls, verified: Verified) -> ContextView:
        doc = verified.document
        identity = _object(doc, "identity", "export")
        subject = _object(doc, "subject", "export")
        display_name, timezone = identity.get("display_name"), identity.get("timezone")
        if not isinstance(display_name, str) or not isinstance(timezone, str):
            raise MalformedExport("export identity lacks display_name or timezone")
        subject_id = subject.get("id")
        if not isinstance(subject_id, str):
            raise MalformedExport("export subject has no id")
        beliefs = tuple(Belief.from_wire(b, "export") for b in _array(doc, "beliefs", "export"))
        corrections = tuple(
            copy.deepcopy(c) for c in _array(doc, "corrections", "export") if isinstance(c, dict)
        )
        injection = doc.get("system_prompt_injection")
        scope = doc.get("scope")
        return cls(
            export=copy.deepcopy(doc),
            subject_id=subject_id,
            display_name=display_name,
            timezone=timezone,
            scope=scope if isinstance(scope, str) else "full",
            kid=verified.kid,
            issued_at=verified.issued_at,
            expires_at=verified.expires_at,
            cursor=_cursor(doc),
            beliefs=beliefs,
            system_prompt_injection=injection if isinstance(injection, str) else "",
            corrections=corrections,
        )

    def belief(self, belief_id: str) -> Belief | None:
        """The belief with this id, or None if the view has none (deleted or out of scope)."""
        for belief in self.beliefs:
            if belief.id == belief_id:
                return belief
        return None

    def system_prompt(self) -> str:
        """The export's ``system_prompt_injection``, or an equivalent built from the beliefs
        when the provider sent none (Tier 1, "or builds equivalent from beliefs array")."""
        if self.system_prompt_injection.strip():
            return self.system_prompt_injection
        return build_system_prompt(self.display_name, self.timezone, self.beliefs, self.scope)

    def apply_diff(self, verified: Verified) -> ContextView:
        """A new view with the diff's changed beliefs and tombstones applied.

        Raises :class:`DiffNotApplicableError` when the diff does not follow this view; the caller
        then refetches the whole export.
        """
        doc = verified.document
        subject = doc.get("subject")
        subject_id = subject.get("id") if isinstance(subject, dict) else doc.get("subject_id")
        if subject_id != self.subject_id:
            raise DiffNotApplicableError("the diff is for another subject")
        if doc.get("scope", self.scope) != self.scope:
            raise DiffNotApplicableError("the diff is for another scope")
        if doc.get("since") != self.cursor:
            raise DiffNotApplicableError("the diff does not start at this view's cursor")
        beliefs = {b.id: b for b in self.beliefs}
        for value in _array(doc, "changes", "diff"):
            update = Belief.from_wire(value, "diff")
            held = beliefs.get(update.id)
            if _older(update.version, held.version if held else None):
                raise DiffNotApplicableError(f"the diff carries an older version of {update.id}")
            beliefs[update.id] = update
        for value in _array(doc, "tombstones", "diff"):
            ident = value.get("id") if isinstance(value, dict) else None
            if not isinstance(ident, str):
                raise MalformedExport("diff has a tombstone without an id")
            # A tombstone for a belief this view never held (created and deleted since the
            # cursor, or outside the scope) has nothing to remove.
            beliefs.pop(ident, None)
        corrections = self.corrections + tuple(
            copy.deepcopy(c) for c in _optional_array(doc, "corrections") if isinstance(c, dict)
        )
        changed = bool(_array(doc, "changes", "diff") or _array(doc, "tombstones", "diff"))
        injection = doc.get("system_prompt_injection")
        if isinstance(injection, str):
            prompt = injection
        else:
            # The export's injection describes the beliefs before the diff: it stays only when
            # nothing changed; otherwise the prompt is rebuilt from the beliefs as they now are.
            prompt = "" if changed else self.system_prompt_injection
        name = subject.get("display_name") if isinstance(subject, dict) else None
        return replace(
            self,
            display_name=name if isinstance(name, str) else self.display_name,
            kid=verified.kid,
            issued_at=verified.issued_at,
            expires_at=verified.expires_at,
            cursor=_cursor(doc),
            beliefs=tuple(beliefs.values()),
            system_prompt_injection=prompt,
            corrections=corrections,
        )


def verify_export(
    body: bytes,
    keys: Mapping[str, PublishedKey],
    *,
    now: datetime,
    clock_skew: timedelta = timedelta(seconds=60),
) -> ContextView:
    """Verify export bytes received by any means (a push, a file) and read them as a view.

    The same checks as the clients run (docs/spec/runtime.md, "Verification"), with the key list
    given; an unknown kid raises :class:`~engram.errors.UnknownKeyId` here, without a refetch.
    """
    document = parse_document(body, "export")
    return ContextView.from_export(verify_signed(document, keys, now=now, clock_skew=clock_skew))


def build_system_prompt(
    display_name: str, timezone: str, beliefs: tuple[Belief, ...], scope: str = "full"
) -> str:
    """The equivalent of ``system_prompt_injection`` built from identity and beliefs.

    The first line follows the spec's fixture (``User: Test User (UTC).``); then one line per
    belief, most confident first, in the layout engram's provider uses, so a prompt rebuilt
    after a diff reads like the one the provider signed.
    """
    lines = [f"User: {display_name} ({timezone})."]
    if beliefs:
        lines.append(f"Known about the user (scope {scope}):")
        ordered = sorted(beliefs, key=lambda b: -(b.confidence or 0.0))
        lines.extend(f"- [{b.category}] {b.statement}{_confidence(b)}" for b in ordered)
    return "\n".join(lines)


def _confidence(belief: Belief) -> str:
    return "" if belief.confidence is None else f" (confidence {belief.confidence:.2f})"


def _cursor(doc: Mapping[str, JsonValue]) -> str:
    # The provider names the point a later diff continues from; without one, the issue time
    # of the document is the only honest cursor.
    for name in ("cursor", "until", "issued_at"):
        value = doc.get(name)
        if isinstance(value, str) and value:
            return value
    raise MalformedExport("document has neither cursor nor issued_at")


def _older(new: int | None, held: int | None) -> bool:
    return new is not None and held is not None and new < held


def _object(doc: Mapping[str, JsonValue], name: str, what: str) -> dict[str, Any]:
    value = doc.get(name)
    if not isinstance(value, dict):
        raise MalformedExport(f"{what} has no {name} object")
    return value


def _array(doc: Mapping[str, JsonValue], name: str, what: str) -> list[JsonValue]:
    value = doc.get(name, [])
    if not isinstance(value, list):
        raise MalformedExport(f"{what} {name} is not an array")
    return value


def _optional_array(doc: Mapping[str, JsonValue], name: str) -> list[JsonValue]:
    value = doc.get(name)
    return value if isinstance(value, list) else []


__all__ = [
    "Belief",
    "ContextView",
    "DiffNotApplicableError",
    "build_system_prompt",
    "verify_export",
]
