"""The runtime's local view of a subject's context: built from a verified export, moved
forward by verified diffs, and turned into a system prompt.

Engram v0.1 conformance: "Injects system_prompt_injection into LLM system prompt (or builds
equivalent from beliefs array)" (Tier 1) and "Implements incremental sync via
GET /v1/context/diff" (Tier 2). The page fixes the export envelope, not the belief object nor
the diff's form: beliefs are read by :mod:`engram.runtime._beliefs`, diffs by the documented
shapes of :mod:`engram.core.context_wire`; how a diff is applied, and when it is not, is
docs/spec/runtime.md, "Incremental sync" and "Diff shapes".

Views are immutable: applying a diff returns a new view, so a view handed to a caller never
changes under it.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from engram.core.canonical import Json, JsonArray, canonicalize
from engram.core.clock import parse_instant
from engram.core.context_wire import DiffShapeError, is_sensitive, read_diff
from engram.errors import InvalidRequest, MalformedExport, ScopeMismatch
from engram.runtime._beliefs import Belief, beliefs_of, build_system_prompt
from engram.runtime._verify import PublishedKey, Verified, parse_document, verify_signed

PROFESSIONAL = "professional"
DEFAULT_SCOPE = "full"
# Members that change when the same content is signed again (another worker, a rotated key).
_SIGNING_MEMBERS = frozenset({"signature", "issued_at", "expires_at", "kid"})


class DiffNotApplicableError(Exception):
    """A verified diff does not follow this view (other subject, scope or cursor, an older
    belief version, a shape not understood); the caller fetches the full export instead.
    Never leaves the SDK."""


@dataclass(frozen=True, slots=True)
class ContextView:
    """What the runtime knows about the subject right now, and until when it may use it.

    ``export`` is the last full export exactly as verified (signature included); ``beliefs`` and
    ``system_prompt_injection`` reflect every diff applied since. ``cursor`` is what the next
    ``/v1/context/diff?since=`` asks from.
    """

    export: Mapping[str, Json]
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
    corrections: tuple[Mapping[str, Json], ...]

    @classmethod
    def from_export(
        cls, verified: Verified, asked_scope: str | None = None, *, any_scope: bool = False
    ) -> ContextView:
        """The view of a verified export; ``asked_scope`` is the scope requested (None: full).

        Raises :class:`~engram.errors.ScopeMismatch` when the export is labelled with another
        scope (unless ``any_scope``: the caller did not ask, e.g. a pushed export), or is
        labelled ``professional`` and carries a health or financial belief.
        """
        doc = verified.document
        identity = _object(doc, "identity", "export")
        subject = _object(doc, "subject", "export")
        display_name, timezone = identity.get("display_name"), identity.get("timezone")
        if not isinstance(display_name, str) or not isinstance(timezone, str):
            raise MalformedExport("export identity lacks display_name or timezone")
        subject_id = subject.get("id")
        if not isinstance(subject_id, str) or not subject_id:
            raise MalformedExport("export subject has no id")
        raw_beliefs = _array(doc, "beliefs", "export")
        labelled = doc.get("scope")
        if any_scope and isinstance(labelled, str) and asked_scope is None:
            asked_scope = labelled
        scope = check_scope(labelled, asked_scope, raw_beliefs)
        beliefs = beliefs_of(raw_beliefs, "export")
        corrections = tuple(
            copy.deepcopy(c) for c in _array(doc, "corrections", "export") if isinstance(c, dict)
        )
        injection = doc.get("system_prompt_injection")
        return cls(
            export=copy.deepcopy(doc),
            subject_id=subject_id,
            display_name=display_name,
            timezone=timezone,
            scope=scope,
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
        """A new view with the diff's steps (changes, tombstones, operations) applied.

        Raises :class:`DiffNotApplicableError` when the diff does not follow this view; the caller
        then refetches the whole export.
        """
        doc = verified.document
        subject = doc.get("subject")
        named = subject.get("id") if isinstance(subject, dict) else doc.get("subject_id")
        if named is not None and named != self.subject_id:
            raise DiffNotApplicableError("the diff is for another subject")
        scope = doc.get("scope", DEFAULT_SCOPE)
        if scope != self.scope:
            raise DiffNotApplicableError(f"the diff is for scope {scope!r}, not {self.scope!r}")
        if verified.issued_at < self.issued_at:
            raise DiffNotApplicableError("the diff was issued before the view it would update")
        if "since" in doc and not _starts_by(doc.get("since"), self.cursor):
            raise DiffNotApplicableError(
                f"the diff starts at {doc.get('since')!r}, after this view's cursor {self.cursor!r}"
            )
        try:
            steps = read_diff(doc)
        except DiffShapeError as e:
            raise DiffNotApplicableError(f"the diff's shape is not understood: {e}") from e
        beliefs: dict[str | int, Belief] = {
            b.id if b.id is not None else index: b for index, b in enumerate(self.beliefs)
        }
        for step in steps:
            if step.kind == "delete":
                # A tombstone for a belief this view never held (created and deleted since the
                # cursor, or outside the scope) has nothing to remove.
                beliefs.pop(step.belief_id, None)
                continue
            assert step.belief is not None
            if self.scope == PROFESSIONAL and is_sensitive(step.belief):
                raise DiffNotApplicableError("the diff brings a health or financial belief")
            update = Belief.from_wire(dict(step.belief), "diff")
            held = beliefs.get(step.belief_id)
            if _older(update.version, held.version if held else None):
                raise DiffNotApplicableError(f"the diff carries an older version of {update.id}")
            beliefs[step.belief_id] = update
        corrections = self.corrections + tuple(
            copy.deepcopy(c) for c in _optional_array(doc, "corrections") if isinstance(c, dict)
        )
        injection = doc.get("system_prompt_injection")
        if isinstance(injection, str):
            prompt = injection
        else:
            # The export's injection describes the beliefs before the diff: it stays only when
            # nothing changed; otherwise the prompt is rebuilt from the beliefs as they now are.
            prompt = "" if steps else self.system_prompt_injection
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


def check_scope(labelled: Json, asked: str | None, beliefs: JsonArray) -> str:
    """The export's scope, which must be the one asked for (no request means ``full``), and a
    ``professional`` export must hold no health or financial belief (Tier 3)."""
    wanted = asked if asked is not None else DEFAULT_SCOPE
    if labelled != wanted:
        raise ScopeMismatch(f"asked for scope {wanted!r} and got an export labelled {labelled!r}")
    if wanted == PROFESSIONAL:
        leaked = [b for b in beliefs if isinstance(b, dict) and is_sensitive(b)]
        if leaked:
            raise ScopeMismatch(
                f"the {wanted} export carries {len(leaked)} health or financial belief(s), "
                "which that scope excludes"
            )
    return wanted


def content_digest(document: Mapping[str, Json]) -> str:
    """What an export says, less how it was signed: equal for the same content signed twice."""
    content = {k: v for k, v in document.items() if k not in _SIGNING_MEMBERS}
    return hashlib.sha256(canonicalize(content)).hexdigest()


def verify_export(
    body: bytes,
    keys: Mapping[str, PublishedKey],
    *,
    now: datetime,
    clock_skew: timedelta = timedelta(seconds=60),
    scope: str | None = None,
) -> ContextView:
    """Verify export bytes received by any means (a push, a file) and read them as a view.

    The same checks as the clients run (docs/spec/runtime.md, "Verification"), with the key list
    given; an unknown kid raises :class:`~engram.errors.UnknownKeyId` here, without a refetch.
    ``scope`` is the scope the export must be for; None takes the scope it is labelled with
    (a ``professional`` label still forbids health and financial beliefs).
    """
    document = parse_document(body, "export")
    verified = verify_signed(document, keys, now=now, clock_skew=clock_skew)
    return ContextView.from_export(verified, scope, any_scope=scope is None)


def _starts_by(since: Json, cursor: str) -> bool:
    """Whether a diff that starts at ``since`` covers everything after ``cursor``: the same
    instant, or an earlier one (a provider that rounds ``since`` down), compared as instants;
    cursors that are not instants (opaque tokens) must be equal."""
    if not isinstance(since, str):
        return False
    if since == cursor:
        return True
    try:
        return parse_instant(since) <= parse_instant(cursor)
    except InvalidRequest:
        return False


def _cursor(doc: Mapping[str, Json]) -> str:
    # The provider names the point a later diff continues from; without one, the issue time
    # of the document is the only honest cursor.
    for name in ("cursor", "until", "issued_at"):
        value = doc.get(name)
        if isinstance(value, str) and value:
            return value
    raise MalformedExport("document has neither cursor nor issued_at")


def _older(new: int | None, held: int | None) -> bool:
    return new is not None and held is not None and new < held


def _object(doc: Mapping[str, Json], name: str, what: str) -> dict[str, Any]:
    value = doc.get(name)
    if not isinstance(value, dict):
        raise MalformedExport(f"{what} has no {name} object")
    return value


def _array(doc: Mapping[str, Json], name: str, what: str) -> JsonArray:
    value = doc.get(name, [])
    if not isinstance(value, list):
        raise MalformedExport(f"{what} {name} is not an array")
    return value


def _optional_array(doc: Mapping[str, Json], name: str) -> JsonArray:
    value = doc.get(name)
    return value if isinstance(value, list) else []


__all__ = [
    "Belief",
    "ContextView",
    "DiffNotApplicableError",
    "build_system_prompt",
    "check_scope",
    "content_digest",
    "verify_export",
]
