"""engram.memory: engram.ote.v1 seats, rings M0-M4, hybrid recall, Beta epistemology, attestation.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03): §3.1 the seat manifest, §3.2 the six
operations the MCP tools wrap. One public function per operation, each taking a
:class:`MemoryEngine` (a store, a seat manifest and a clock) and returning a typed result with
``to_wire()``: :func:`record` / :func:`record_many`, :func:`recall`, :func:`distill`,
:func:`outcome`, :func:`complete`, :func:`status`. Cartridges move memories with
:func:`export_memories` and :func:`import_memories`; :func:`migrate_rings` moves canon:fleet to
canon:shared. :func:`withdraw` keeps a memory out of recall (PAM retractions), :func:`reinstate`
undoes it; :func:`seat_view` recalls through another manifest on the same index.
Whose memory (docs/spec/memory-ownership.md): :func:`subject_view` acts for one subject (their
own ring beside the shared ones); :func:`forget` / :func:`restore` / :func:`erase` and
:func:`history` are a memory's lifecycle. :func:`record_conversation` records OpenAI chat
messages, one memory per turn (docs/spec/memory-conversations.md).
Our decisions where the spec is silent: docs/spec/memory-*.md.
"""

import typing

from engram.core.lazy import lazy_attributes as _lazy_attributes

if typing.TYPE_CHECKING:
    from engram.memory._conversation import ConversationResult, record_conversation
    from engram.memory._distill import ChatDistiller, Distiller, ExtractiveDistiller, distill
    from engram.memory._engine import (
        MemoryEngine,
        get_memories,
        get_memory,
        memory_id,
        open_engine,
        record,
        record_many,
    )
    from engram.memory._extract import ChatFactExtractor
    from engram.memory._lifecycle import (
        LifecycleResult,
        MemoryHistory,
        erase,
        forget,
        history,
        restore,
    )
    from engram.memory._listing import ListedMemory, MemoryPage, list_memories
    from engram.memory._manifest import OteSpec, load_manifest, parse_manifest
    from engram.memory._models import (
        CompleteResult,
        Memory,
        MemoryRecord,
        MemoryStatus,
        OutcomeResult,
        RecallHit,
        RecallResult,
        RecordInput,
        RecordResult,
        StatusReport,
    )
    from engram.memory._outcomes import complete, outcome
    from engram.memory._owner import subject_ring_id
    from engram.memory._portable import (
        ImportResult,
        RingMigration,
        export_memories,
        import_memories,
        migrate_rings,
    )
    from engram.memory._recall import Tuning, recall
    from engram.memory._remote import Embedder, remote_stages
    from engram.memory._seed import InitResult, default_manifest_text, init_repository
    from engram.memory._status import status
    from engram.memory._supersede import SupersedeResult, supersede
    from engram.memory._turns import MAX_CONVERSATION_BYTES, MAX_MESSAGES
    from engram.memory._view import subject_view
    from engram.memory._withdrawn import reinstate, withdraw

# Imported on first use (PEP 562): a cold `engram recall` needs the engine, the index and
# recall, not distillation, outcomes, cartridges, status or `engram init` (issue 16, cold CLI
# start).
_LAZY: dict[str, str] = {
    "ChatDistiller": "engram.memory._distill",
    "ChatFactExtractor": "engram.memory._extract",
    "ConversationResult": "engram.memory._conversation",
    "record_conversation": "engram.memory._conversation",
    "Distiller": "engram.memory._distill",
    "ExtractiveDistiller": "engram.memory._distill",
    "distill": "engram.memory._distill",
    "MemoryEngine": "engram.memory._engine",
    "get_memories": "engram.memory._engine",
    "get_memory": "engram.memory._engine",
    "memory_id": "engram.memory._engine",
    "open_engine": "engram.memory._engine",
    "record": "engram.memory._engine",
    "record_many": "engram.memory._engine",
    "MAX_CONVERSATION_BYTES": "engram.memory._turns",
    "MAX_MESSAGES": "engram.memory._turns",
    "ListedMemory": "engram.memory._listing",
    "MemoryPage": "engram.memory._listing",
    "list_memories": "engram.memory._listing",
    "OteSpec": "engram.memory._manifest",
    "load_manifest": "engram.memory._manifest",
    "parse_manifest": "engram.memory._manifest",
    "CompleteResult": "engram.memory._models",
    "Memory": "engram.memory._models",
    "MemoryRecord": "engram.memory._models",
    "MemoryStatus": "engram.memory._models",
    "OutcomeResult": "engram.memory._models",
    "RecallHit": "engram.memory._models",
    "RecallResult": "engram.memory._models",
    "RecordInput": "engram.memory._models",
    "RecordResult": "engram.memory._models",
    "StatusReport": "engram.memory._models",
    "complete": "engram.memory._outcomes",
    "outcome": "engram.memory._outcomes",
    "ImportResult": "engram.memory._portable",
    "RingMigration": "engram.memory._portable",
    "export_memories": "engram.memory._portable",
    "import_memories": "engram.memory._portable",
    "migrate_rings": "engram.memory._portable",
    "Tuning": "engram.memory._recall",
    "recall": "engram.memory._recall",
    "Embedder": "engram.memory._remote",
    "remote_stages": "engram.memory._remote",
    "InitResult": "engram.memory._seed",
    "default_manifest_text": "engram.memory._seed",
    "init_repository": "engram.memory._seed",
    "status": "engram.memory._status",
    "SupersedeResult": "engram.memory._supersede",
    "supersede": "engram.memory._supersede",
    "subject_view": "engram.memory._view",
    "subject_ring_id": "engram.memory._owner",
    "LifecycleResult": "engram.memory._lifecycle",
    "MemoryHistory": "engram.memory._lifecycle",
    "erase": "engram.memory._lifecycle",
    "forget": "engram.memory._lifecycle",
    "history": "engram.memory._lifecycle",
    "restore": "engram.memory._lifecycle",
    "reinstate": "engram.memory._withdrawn",
    "withdraw": "engram.memory._withdrawn",
}

__all__ = [
    "MAX_CONVERSATION_BYTES",
    "MAX_MESSAGES",
    "ChatDistiller",
    "ChatFactExtractor",
    "CompleteResult",
    "ConversationResult",
    "Distiller",
    "Embedder",
    "ExtractiveDistiller",
    "ImportResult",
    "InitResult",
    "LifecycleResult",
    "ListedMemory",
    "Memory",
    "MemoryEngine",
    "MemoryHistory",
    "MemoryPage",
    "MemoryRecord",
    "MemoryStatus",
    "OteSpec",
    "OutcomeResult",
    "RecallHit",
    "RecallResult",
    "RecordInput",
    "RecordResult",
    "RingMigration",
    "StatusReport",
    "SupersedeResult",
    "Tuning",
    "complete",
    "default_manifest_text",
    "distill",
    "erase",
    "export_memories",
    "forget",
    "get_memories",
    "get_memory",
    "history",
    "import_memories",
    "init_repository",
    "list_memories",
    "load_manifest",
    "memory_id",
    "migrate_rings",
    "open_engine",
    "outcome",
    "parse_manifest",
    "recall",
    "record",
    "record_conversation",
    "record_many",
    "reinstate",
    "remote_stages",
    "restore",
    "status",
    "subject_ring_id",
    "subject_view",
    "supersede",
    "withdraw",
]

if not typing.TYPE_CHECKING:  # type checkers read the imports above: a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
