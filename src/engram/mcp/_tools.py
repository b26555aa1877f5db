"""The engram tools: each parses its arguments, calls one memory-engine function, maps errors.

engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2). ``engram_recall`` →
:func:`engram.memory.recall`, ``engram_record`` → :func:`~engram.memory.record`,
``engram_record_conversation`` → :func:`~engram.memory.record_conversation`,
``engram_distill`` → :func:`~engram.memory.distill`, ``engram_complete`` →
:func:`~engram.memory.complete`, ``engram_outcome`` → :func:`~engram.memory.outcome` (on the
``mcp`` channel, which refuses sealed_* / human_*) and ``engram_status`` →
:func:`~engram.memory.status`; and engram's ``engram_forget`` → :func:`~engram.memory.forget` /
:func:`~engram.memory.erase` (docs/spec/memory-ownership.md). Each call acts for its caller's
subject (``_caller``). Input limits (``docs/spec/mcp.md`` "Limits")
are in the schemas, so a model sees them before it calls; anything the engine refuses comes back
as a tool error ``<code>: <message>``, and the engine validates a whole call before it writes.

Adding a tool is one decorated method of :class:`EngramTools` (``_declare``): nothing else in
this package lists the tools. The SDK runs synchronous tools on worker threads; the engine is
safe to share between them (it guards its in-process retrieval index with its own lock, and
writes are store transactions).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from engram.core.canonical import canonicalize
from engram.core.clock import parse_instant
from engram.errors import CapacityError, EngramError, InvalidRequest, RemoteError
from engram.mcp._context import CALLER
from engram.mcp._declare import engram_tool
from engram.mcp._models import (
    CompleteOut,
    ConversationOut,
    ForgetOut,
    OutcomeOut,
    RecallOut,
    RecordOut,
    StatusOut,
)
from engram.memory import MAX_MESSAGES
from engram.memory.internals import MCP_REFUSAL, SIGNALS

# The engine's functions are imported inside the tools (issue 33): the server answers
# initialize and tools/list before anything loads numpy or tantivy.
if TYPE_CHECKING:
    from engram.memory import Distiller, LifecycleResult, MemoryEngine, RecallResult, RecordResult
    from engram.memory.internals import SeatSource

LOG = logging.getLogger("engram.mcp")
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
    """The tool functions, bound to one seat's engine (see the module docstring).

    Each tool is declared once, here: the ``engram_tool`` decorator gives its title, hints and
    description; its signature gives the input schema and its return annotation the output
    schema. ``tools/list`` lists them in the order they are written below.
    """

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
        retrieval = engine.spec.retrieval  # the manifest: a deferred engine stays unopened
        self._local = not (retrieval.dense_enabled or retrieval.reranker.enabled)
        self._opened = False  # set by the first call that returns: the engine is open

    def local(self) -> bool:
        """Whether a read may run on the event loop (``_declare.runner``): every retrieval
        stage runs in this process (the manifest asks for no remote embedder or reranker; the
        bundled MiniLM model is local), so it never waits on the network, and the engine is
        open (a deferred engine opens, loading numpy and the index, on a worker thread)."""
        return self._local and self._opened

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
            result = fn()
        except EngramError as e:
            if e.http_status >= 500 and not isinstance(e, RemoteError | CapacityError):
                # Store and key failures stay in the server log; the model gets the code only.
                LOG.error("%s failed: %s: %s", tool, type(e).__name__, e.message)
                raise ToolError(f"{e.code}: internal error (see the engram server log)") from e
            raise ToolError(f"{e.code}: {e.message}") from e
        self._opened = True
        return result

    @engram_tool(
        title="Recall memories",
        read_only=True,
        inline=True,
        describe=lambda seat: (
            f"Recall memories for seat {seat.seat_id}: hybrid lexical (BM25) + vector retrieval "
            f"with MMR diversity, cut to the seat's token budget. Mounted rings: {seat.mounted}. "
            "Use it before acting on a codebase or process you may have met before."
        ),
    )
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

    @engram_tool(
        title="Record a memory",
        describe=lambda seat: (
            f"Record a memory for seat {seat.seat_id}. kind must be one of: {seat.kinds}. "
            f"Writable rings: {seat.writable}. The id is a content address, so recording the "
            "same text twice is harmless."
        ),
    )
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

    @engram_tool(
        title="Record a conversation",
        describe=lambda seat: (
            f"Record a chat for seat {seat.seat_id} as memories: messages in the OpenAI format "
            "(role, content, optional name and timestamp). Each user and assistant turn becomes "
            "one memory with its speaker and time, in one thread; system and tool messages are "
            f"skipped; sending the same chat again adds nothing. Writable rings: {seat.writable}."
        ),
    )
    def engram_record_conversation(
        self,
        messages: Annotated[
            list[dict[str, Any]],
            Field(
                min_length=1,
                max_length=MAX_MESSAGES,
                description="The chat, oldest first: {role, content, name?, timestamp?} each "
                "(timestamp: ISO 8601 or epoch seconds); at most 8 MiB of text in all.",
            ),
        ],
        thread: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=MAX_ID,
                description="The conversation's id; default: derived from its first turn, so "
                "sending it again or extended lands in the same thread.",
            ),
        ] = None,
        ring: Ring = "M4",
    ) -> ConversationOut:
        """Record a conversation, one memory per user or assistant turn."""
        from engram.memory import record_conversation

        result = self._call(
            "engram_record_conversation",
            lambda: record_conversation(self._engine(), messages, thread=thread, ring=ring),
        )
        return ConversationOut.model_validate(result.to_wire())

    @engram_tool(
        title="Distill episodes into a memory",
        llm_distiller=True,
        describe=lambda seat: (
            "Distill raw debugging episodes into one reusable memory (known_process or "
            f"invariant) and record it. Writable rings: {seat.writable}."
        ),
    )
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

    @engram_tool(
        title="Apply the graduation rule",
        destructive=True,  # rewrites statuses, promoting or demoting; the rule twice decides alike
        describe=(
            "Apply the graduation rule: a memory becomes complete (graduated) only when both "
            "its full Beta posterior and its attested evidence (sealed tests, human review) meet "
            "graduation_lcb_threshold and graduation_min_samples. Model-judged evidence alone "
            "never graduates."
        ),
    )
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

    @engram_tool(
        title="Record an outcome for a memory",
        describe=(
            "Record evidence about a recalled memory after using it (did the tests pass, did "
            "the reviewer accept it). Model-judged signals move the posterior by at most 0.30. "
            "Attested evidence (a sealed test run, a person's review) is not taken here: it is "
            "recorded only by `engram outcome --attestation <ssh-signature>`."
        ),
    )
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

    @engram_tool(
        title="Seat status",
        read_only=True,
        inline=True,
        describe=lambda seat: (
            f"Report seat {seat.seat_id}: which manifest is in use and why, memories and "
            "graduations per ring, vector coverage, graduation state, attestation anchor, "
            "oracle split."
        ),
    )
    def engram_status(self) -> StatusOut:
        """Report the seat: rings, graduation state, attestation anchor, oracle split."""
        from engram.memory import status

        report = self._call("engram_status", lambda: status(self._engine()))
        return StatusOut.model_validate({"seat": self.seat.to_wire(), **report.to_wire()})

    @engram_tool(
        title="Forget or erase a memory",
        destructive=True,  # forgetting twice is forgetting once; erasing twice says it already was
        describe=lambda seat: (
            'Forget a memory when the user asks you to ("forget that"), or when it is wrong: '
            "it leaves recall, counts and exports, and can be restored. With erase = true it "
            "is deleted for good (personal data the user wants gone). Only memories in a "
            f"writable ring can be forgotten: {seat.writable}."
        ),
    )
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


__all__ = [
    "ATTESTED_REFUSAL",
    "EngramTools",
    "model_signals",
]
