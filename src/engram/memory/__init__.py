"""engram.memory: engram.ote.v1 seats, rings M0-M4, hybrid recall, Beta epistemology, attestation.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03): §3.1 the seat manifest, §3.2 the six
operations the MCP tools wrap. One public function per operation, each taking a
:class:`MemoryEngine` (a store, a seat manifest and a clock) and returning a typed result with
``to_wire()``: :func:`record` / :func:`record_many`, :func:`recall`, :func:`distill`,
:func:`outcome`, :func:`complete`, :func:`status`. Cartridges move memories with
:func:`export_memories` and :func:`import_memories`; :func:`migrate_rings` moves canon:fleet to
canon:shared. :func:`withdraw` keeps a memory out of recall (PAM retractions), :func:`reinstate`
undoes it; :func:`seat_view` recalls through another manifest on the same index.
Our decisions where the spec is silent: docs/spec/memory-*.md.
"""

from engram.memory._attestation import NAMESPACE as ATTESTATION_NAMESPACE
from engram.memory._attestation import Anchor, attestation_message, load_anchor
from engram.memory._distill import ChatDistiller, Distiller, ExtractiveDistiller, distill
from engram.memory._engine import (
    MemoryEngine,
    check_record,
    default_index_folder,
    get_memory,
    indexed_local_vector,
    memory_id,
    open_engine,
    record,
    record_many,
)
from engram.memory._epistemology import BLOCKED, MODEL_CAP, SIGNALS, lower_bound, signal_weight
from engram.memory._manifest import (
    OteSpec,
    find_manifest,
    load_manifest,
    parse_manifest,
)
from engram.memory._models import (
    CompleteResult,
    Memory,
    MemoryRecord,
    MemoryStatus,
    OutcomeEvent,
    OutcomeResult,
    RecallHit,
    RecallResult,
    RecordInput,
    RecordResult,
    StatusReport,
    Verdict,
)
from engram.memory._outcomes import MCP_REFUSAL, complete, outcome
from engram.memory._portable import (
    ImportResult,
    RingMigration,
    export_memories,
    import_memories,
    migrate_rings,
)
from engram.memory._recall import DEFAULT_TUNING, Tuning, recall
from engram.memory._remote import (
    CrossEncoder,
    Embedder,
    RemoteEmbedder,
    RemoteReranker,
    remote_stages,
)
from engram.memory._seat import SeatOrigin, SeatSource, load_seat, locate_seat
from engram.memory._seed import InitResult, default_manifest_text, init_repository
from engram.memory._status import status
from engram.memory._text import LOCAL_ENGINE, local_vector
from engram.memory._view import seat_view
from engram.memory._withdrawn import WITHDRAWN_COMPONENT, reinstate, withdraw, withdrawn_among

__all__ = [
    "ATTESTATION_NAMESPACE",
    "BLOCKED",
    "DEFAULT_TUNING",
    "LOCAL_ENGINE",
    "MCP_REFUSAL",
    "MODEL_CAP",
    "SIGNALS",
    "WITHDRAWN_COMPONENT",
    "Anchor",
    "ChatDistiller",
    "CompleteResult",
    "CrossEncoder",
    "Distiller",
    "Embedder",
    "ExtractiveDistiller",
    "ImportResult",
    "InitResult",
    "Memory",
    "MemoryEngine",
    "MemoryRecord",
    "MemoryStatus",
    "OteSpec",
    "OutcomeEvent",
    "OutcomeResult",
    "RecallHit",
    "RecallResult",
    "RecordInput",
    "RecordResult",
    "RemoteEmbedder",
    "RemoteReranker",
    "RingMigration",
    "SeatOrigin",
    "SeatSource",
    "StatusReport",
    "Tuning",
    "Verdict",
    "attestation_message",
    "check_record",
    "complete",
    "default_index_folder",
    "default_manifest_text",
    "distill",
    "export_memories",
    "find_manifest",
    "get_memory",
    "import_memories",
    "indexed_local_vector",
    "init_repository",
    "load_anchor",
    "load_manifest",
    "load_seat",
    "local_vector",
    "locate_seat",
    "lower_bound",
    "memory_id",
    "migrate_rings",
    "open_engine",
    "outcome",
    "parse_manifest",
    "recall",
    "record",
    "record_many",
    "reinstate",
    "remote_stages",
    "seat_view",
    "signal_weight",
    "status",
    "withdraw",
    "withdrawn_among",
]
