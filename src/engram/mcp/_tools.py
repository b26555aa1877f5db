"""The engram tools: each parses its arguments, calls one memory-engine function, maps errors.

engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2). ``engram_recall`` →
:func:`engram.memory.recall`, ``engram_record`` → :func:`~engram.memory.record`,
``engram_distill`` → :func:`~engram.memory.distill`, ``engram_complete`` →
:func:`~engram.memory.complete`, ``engram_outcome`` → :func:`~engram.memory.outcome` (on the
``mcp`` channel, which refuses sealed_* / human_*) and ``engram_status`` →
:func:`~engram.memory.status`; and engram's ``engram_forget`` → :func:`~engram.memory.forget` /
:func:`~engram.memory.erase` (docs/spec/memory-ownership.md). Each call acts for its caller's
subject (``_caller``). Input limits (``docs/spec/mcp.md`` "Limits")
are in the schemas, so a model sees them before it calls; anything the engine refuses comes back
as a tool error ``<code>: <message>``, and the engine validates a whole call before it writes.

The SDK runs synchronous tools on worker threads; the engine is safe to share between them (it
guards its in-process retrieval index with its own lock, and writes are store transactions).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from engram.core.canonical import canonicalize
from engram.core.clock import parse_instant
from engram.errors import CapacityError, EngramError, InvalidRequest, RemoteError
from engram.mcp._context import CALLER
from engram.mcp._models import (
    CompleteOut,
    ForgetOut,
    OutcomeOut,
    RecallOut,
    RecordOut,
    StatusOut,
)
from engram.memory import MCP_REFUSAL, SIGNALS, subject_ring_id, subject_spec

# The engine's functions are imported inside the tools (issue 33): the server answers
# initialize and tools/list before anything loads numpy or tantivy.
if TYPE_CHECKING:
    from engram.memory import (
        Distiller,
        LifecycleResult,
        MemoryEngine,
        RecallResult,
        RecordResult,
        SeatSource,
    )

LOG = logging.getLogger("engram.mcp")
OWN = "caller"  # stands for the caller's subject in descriptions written before any call
T = TypeVar("T")

MAX_QUERY = 4_000
MAX_TEXT = 100_000  # the engine's own limit (engram.memory._engine.MAX_TEXT), stated in the schema
MAX_EPISODES = 50
MAX_PROVENANCE_BYTES = 16_384
MAX_ID = 200

ATTESTED_REFUSAL = MCP_REFUSAL  # the engine refuses them on the mcp channel, before any lookup

Ring = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_ID,
        description="Where to write: a ring level M2, M3 or M4 (default M4, this seat's own "
        "ring) or a mounted ring id. Only rings mounted with access = read_write accept writes.",
    ),
]
MemoryId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_ID,
        description="A memory id (mem:…) as returned by engram_record or engram_recall.",
    ),
]


def model_signals() -> list[str]:
    """Signals this channel accepts: every signal except the attested sealed_* / human_* ones."""
    return sorted(name for name, s in SIGNALS.items() if not s.attested)


class EngramTools:
    """The tool functions, bound to one seat's engine (see the module docstring)."""

    def __init__(
        self,
        engine: MemoryEngine,
        seat: SeatSource,
        distiller: Distiller | None = None,
        *,
        subject: str | None = None,
    ) -> None:
        self.engine = engine
        self.seat = seat
        self.distiller = distiller
        self.subject = subject

    def _caller(self) -> tuple[MemoryEngine, str]:
        """The engine acting for this call's subject, and who is acting (for history).

        Over HTTP every call acts for the subject its token names (the server's middleware
        set ``CALLER``); over stdio for the subject the server was started for, else the seat.
        """
        from engram.memory import subject_view

        caller = CALLER.get()
        if caller is not None:
            subject, actor = caller
            return subject_view(self.engine, subject), actor
        if self.subject is not None:
            return subject_view(self.engine, self.subject), f"mcp:stdio for {self.subject}"
        return self.engine, "mcp:stdio"

    def _engine(self) -> MemoryEngine:
        return self._caller()[0]

    def _call(self, tool: str, fn: Callable[[], T]) -> T:
        """Run one engine call; engram errors become tool errors."""
        try:
            return fn()
        except EngramError as e:
            if e.http_status >= 500 and not isinstance(e, RemoteError | CapacityError):
                # Store and key failures stay in the server log; the model gets the code only.
                LOG.error("%s failed: %s: %s", tool, type(e).__name__, e.message)
                raise ToolError(f"{e.code}: internal error (see the engram server log)") from e
            raise ToolError(f"{e.code}: {e.message}") from e

    def engram_recall(
        self,
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_QUERY,
                description="What you need to know, in words or identifiers (e.g. an error "
                "message, an ADR number, a component name).",
            ),
        ],
        k: Annotated[
            int, Field(ge=1, le=100, description="Most memories to return (default 10).")
        ] = 10,
        rings: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=MAX_ID)]] | None,
            Field(
                max_length=5,
                description="Only these rings (levels M0-M4 or mounted ring ids); default: "
                "every ring the seat mounts.",
            ),
        ] = None,
        as_of: Annotated[
            str | None,
            Field(
                max_length=40,
                description="Optional RFC 3339 instant (e.g. 2026-03-01T12:00:00Z): answer "
                "from what was current then, before later memories superseded it.",
            ),
        ] = None,
    ) -> RecallOut:
        """Recall the memories most relevant to a query from the seat's mounted rings."""
        from engram.memory import recall

        def call() -> RecallResult:
            instant = parse_instant(as_of) if as_of is not None else None
            return recall(self._engine(), query, k, rings=rings, as_of=instant)

        result = self._call("engram_recall", call)
        return RecallOut.model_validate(result.to_wire())

    def engram_record(
        self,
        text: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_TEXT,
                description="The memory itself: one self-contained fact, decision or procedure "
                "a later session can use without this conversation.",
            ),
        ],
        kind: Annotated[
            str,
            Field(
                min_length=1,
                max_length=64,
                description="One of the seat's allowed_kinds (listed in this tool's description).",
            ),
        ],
        ring: Ring = "M4",
        thread: Annotated[
            str,
            Field(
                max_length=MAX_ID,
                description="Optional conversation or episode id; memories of one thread are "
                "recalled with their neighbours.",
            ),
        ] = "",
        provenance: Annotated[
            dict[str, Any] | None,
            Field(
                description="Optional JSON object saying where this came from (file, commit, "
                f"URL, …); at most {MAX_PROVENANCE_BYTES} bytes."
            ),
        ] = None,
        supersedes: Annotated[
            str | None,
            Field(
                max_length=MAX_ID,
                description="Optional id of a memory this one replaces (the fact changed): "
                "recall then serves this one, and the old one stays in its history.",
            ),
        ] = None,
    ) -> RecordOut:
        """Record one content-addressed memory into a writable ring."""
        from engram.memory import RecordInput, record, supersede

        def call() -> RecordResult:
            if provenance is not None and len(canonicalize(provenance)) > MAX_PROVENANCE_BYTES:
                raise InvalidRequest(f"provenance is over {MAX_PROVENANCE_BYTES} bytes")
            if supersedes is not None:
                engine, actor = self._caller()
                item = RecordInput(text, kind, ring, provenance or {}, thread)
                return supersede(engine, supersedes, item, actor=actor).record
            return record(self._engine(), text, kind, ring, provenance or {}, thread)

        return RecordOut.model_validate(self._call("engram_record", call).to_wire())

    def engram_distill(
        self,
        episodes: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]],
            Field(
                min_length=1,
                max_length=MAX_EPISODES,
                description="Raw debugging episodes (logs, notes, transcripts), one text each; "
                "what recurs across them is what gets kept.",
            ),
        ],
        kind: Annotated[
            Literal["known_process", "invariant"],
            Field(
                description="known_process: symptom, cause and the steps that fix it; "
                "invariant: a rule that must always hold."
            ),
        ] = "known_process",
        ring: Ring = "M4",
    ) -> RecordOut:
        """Distill debugging episodes into one reusable known_process or invariant memory."""
        from engram.memory import distill

        result = self._call(
            "engram_distill",
            lambda: distill(self._engine(), episodes, kind, ring, llm=self.distiller),
        )
        return RecordOut.model_validate(result.to_wire())

    def engram_complete(
        self,
        memory_id: Annotated[
            str | None,
            Field(
                max_length=MAX_ID,
                description="The memory to judge; omit to judge every memory in the mounted rings.",
            ),
        ] = None,
        apply: Annotated[
            bool,
            Field(description="Write the new statuses (default); false previews the verdicts."),
        ] = True,
    ) -> CompleteOut:
        """Apply the graduation rule: promote memories whose evidence meets the thresholds."""
        from engram.memory import complete

        result = self._call(
            "engram_complete", lambda: complete(self._engine(), memory_id, apply=apply)
        )
        return CompleteOut.model_validate(result.to_wire())

    def engram_outcome(
        self,
        memory_id: MemoryId,
        signal: Annotated[
            str,
            Field(
                min_length=1,
                max_length=64,
                description="What happened when the memory was used: "
                + ", ".join(model_signals())
                + ". Gate signals (tests_*, build_*, typecheck_*, lint_*) are uncapped; "
                "rubric_* and model_* are model-judged and capped at 0.30.",
            ),
        ],
        decision_id: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_ID,
                description="A stable id for this verdict (e.g. run id + memory id); sending "
                "the same decision_id again is one event, not two.",
            ),
        ],
        weight: Annotated[
            float | None,
            Field(
                gt=0,
                le=1000,
                description="Strength of the evidence (default: the signal's own, 1.0 for "
                "gates, 0.30 for model-judged signals, which are capped at 0.30).",
            ),
        ] = None,
    ) -> OutcomeOut:
        """Record evidence about a memory: a Beta(α, β) update, one event per decision_id."""
        from engram.memory import outcome

        # sealed_* / human_*: the engine refuses them on this channel before any lookup.
        result = self._call(
            "engram_outcome",
            lambda: outcome(
                self._engine(), memory_id, signal, decision_id, weight=weight, channel="mcp"
            ),
        )
        return OutcomeOut.model_validate(result.to_wire())

    def engram_forget(
        self,
        memory_id: MemoryId,
        reason: Annotated[
            str,
            Field(
                max_length=500,
                description="Optional: why (kept in the memory's history, never recalled).",
            ),
        ] = "",
        erase: Annotated[
            bool,
            Field(
                description="false (default): forget, reversibly (`engram restore` brings it "
                "back). true: erase for good: the words are deleted from the database and "
                "the index, only a tombstone (id, content hash) stays. Only when the user "
                "asks for it to be deleted for good."
            ),
        ] = False,
    ) -> ForgetOut:
        """Forget a memory (out of recall, counts and exports), or erase it for good."""
        from engram.memory import forget

        def call() -> LifecycleResult:
            engine, actor = self._caller()
            if erase:
                # With what PAM imports kept beside the memory (imported on first erase only).
                from engram.transfer import erase_memories

                return erase_memories(engine, [memory_id], actor=actor)[0]
            return forget(engine, [memory_id], actor=actor, reason=reason)[0]

        return ForgetOut.model_validate(self._call("engram_forget", call).to_wire())

    def engram_status(self) -> StatusOut:
        """Report the seat: rings, graduation state, attestation anchor, oracle split."""
        from engram.memory import status

        report = self._call("engram_status", lambda: status(self._engine()))
        return StatusOut.model_validate({"seat": self.seat.to_wire(), **report.to_wire()})


def tool_annotations(*, open_world_distill: bool = False) -> dict[str, ToolAnnotations]:
    """What each tool does to the world, as MCP's hints say it (docs/spec/mcp.md, "Tools").

    Only ``engram_recall`` and ``engram_status`` read without writing. ``engram_record`` and
    ``engram_outcome`` only add (a memory is content-addressed, an outcome is one event per
    decision_id, so repeating a call changes nothing more: idempotent). ``engram_complete``
    rewrites statuses, promoting or demoting: destructive, and idempotent (the rule applied
    twice decides the same). ``engram_distill`` adds a memory; with an LLM distiller its text
    may differ per call (not idempotent) and it calls the LLM endpoint (open world).
    """

    def hints(title: str, read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations:
        return ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=idempotent,
            open_world_hint=False,
        )

    distill = hints("Distill episodes into a memory", False, False, not open_world_distill)
    return {
        "engram_recall": hints("Recall memories", True, False, True),
        "engram_record": hints("Record a memory", False, False, True),
        "engram_distill": distill.model_copy(update={"open_world_hint": open_world_distill}),
        "engram_complete": hints("Apply the graduation rule", False, True, True),
        "engram_outcome": hints("Record an outcome for a memory", False, False, True),
        "engram_status": hints("Seat status", True, False, True),
        # Forgetting twice is forgetting once; erasing twice says it already was: idempotent.
        "engram_forget": hints("Forget or erase a memory", False, True, True),
    }


def tool_descriptions(engine: MemoryEngine, *, for_subjects: bool = False) -> dict[str, str]:
    """Each tool's description, naming this seat's kinds and rings so a model can act on it;
    ``for_subjects``: as a caller acting for a subject mounts them (``/mcp``: the token's)."""
    # The seat's manifest is all a description needs (a deferred engine is not opened here).
    spec = subject_spec(engine.spec, OWN) if for_subjects else engine.spec

    def name(ring_id: str) -> str:
        return "the user's own ring" if ring_id == subject_ring_id(OWN) else ring_id

    kinds = ", ".join(spec.ontology.allowed_kinds)
    writable = (
        ", ".join(f"{m.ring} ({name(m.ring_id)})" for m in spec.mounts if m.writable) or "none"
    )
    mounted = ", ".join(f"{m.ring} ({name(m.ring_id)})" for m in spec.mounts)
    seat = spec.seat.seat_id
    return {
        "engram_recall": (
            f"Recall memories for seat {seat}: hybrid lexical (BM25) + vector retrieval with "
            f"MMR diversity, cut to the seat's token budget. Mounted rings: {mounted}. Use it "
            "before acting on a codebase or process you may have met before."
        ),
        "engram_record": (
            f"Record a memory for seat {seat}. kind must be one of: {kinds}. Writable rings: "
            f"{writable}. The id is a content address, so recording the same text twice is "
            "harmless."
        ),
        "engram_distill": (
            "Distill raw debugging episodes into one reusable memory (known_process or "
            f"invariant) and record it. Writable rings: {writable}."
        ),
        "engram_complete": (
            "Apply the graduation rule: a memory becomes complete (graduated) only when both its "
            "full Beta posterior and its attested evidence (sealed tests, human review) meet "
            "graduation_lcb_threshold and graduation_min_samples. Model-judged evidence alone "
            "never graduates."
        ),
        "engram_outcome": (
            "Record evidence about a recalled memory after using it (did the tests pass, did "
            "the reviewer accept it). Model-judged signals move the posterior by at most 0.30. "
            "Attested evidence (a sealed test run, a person's review) is not taken here: it is "
            "recorded only by `engram outcome --attestation <ssh-signature>`."
        ),
        "engram_forget": (
            'Forget a memory when the user asks you to ("forget that"), or when it is wrong: '
            "it leaves recall, counts and exports, and can be restored. With erase = true it "
            "is deleted for good (personal data the user wants gone). Only memories in a "
            f"writable ring can be forgotten: {writable}."
        ),
        "engram_status": (
            f"Report seat {seat}: which manifest is in use and why, memories and graduations "
            "per ring, vector coverage, graduation state, attestation anchor, oracle split."
        ),
    }


__all__ = [
    "ATTESTED_REFUSAL",
    "EngramTools",
    "model_signals",
    "tool_annotations",
    "tool_descriptions",
]
