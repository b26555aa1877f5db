"""``status``: what a seat's memory looks like, and whether graduation can happen at all.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) engram_status ("ring counts, graduated
counts, vector coverage, graduation (blocked without an anchor), attestation (anchor path, sha256
and key fingerprints), oracle_split and grandfathered_until_apply"). ``grandfathered_until_apply``
counts graduated memories that the current rule would no longer graduate: they stay graduated until
the next ``complete`` applies the rule (see ``docs/spec/memory-epistemology.md``).
"""

# ruff: noqa: S608 - SQL text interpolates only "?" placeholder lists and constant table names

from __future__ import annotations

from engram.core.canonical import JsonObject
from engram.errors import ManifestError
from engram.memory._attestation import NAMESPACE, load_anchor
from engram.memory._engine import MemoryEngine
from engram.memory._epistemology import BLOCKED
from engram.memory._models import StatusReport
from engram.memory._outcomes import complete
from engram.memory._text import LOCAL_ENGINE
from engram.memory._withdrawn import withdrawn_counts


def _marks(n: int) -> str:
    return ", ".join("?" for _ in range(n))


def status(engine: MemoryEngine) -> StatusReport:
    """Counts per mounted ring, graduation state, the anchor, oracle split and vector coverage.

    Every figure comes from the count tables writers keep in their own transactions
    (``memory_counts``, ``memory_event_counts``, ``memory_dense_counts``) plus the graduated
    memories for grandfathered_until_apply, all in one read transaction: status never takes the
    write lock, loads the retrieval index or reads every memory.
    """
    spec = engine.spec
    ring_ids = list(spec.ring_ids)
    marks = _marks(len(ring_ids))
    with engine.store.read() as tx:
        counts = tx.execute(
            f"SELECT ring_id, status, memories AS c FROM memory_counts WHERE ring_id IN ({marks})",
            ring_ids,
        )
        events = tx.execute(
            "SELECT oracle, SUM(events) AS c, SUM(reverify) AS r FROM memory_event_counts "
            f"WHERE ring_id IN ({marks}) GROUP BY oracle",
            ring_ids,
        )
        dense = tx.execute(
            "SELECT engine, SUM(vectors) AS c FROM memory_dense_counts "
            f"WHERE ring_id IN ({marks}) GROUP BY engine",
            ring_ids,
        )
        withdrawn = withdrawn_counts(tx, ring_ids)
    oracles = [row for row in events if int(row["c"] or 0)]
    reverify = sum(int(row["r"] or 0) for row in events)
    per_ring: dict[str, dict[str, int]] = {}
    for row in counts:
        per_ring.setdefault(row["ring_id"], {})[row["status"]] = int(row["c"])
    hidden: dict[str, int] = {}
    for (ring_id, state), gone in withdrawn.items():  # forgotten or retracted: not counted
        per_ring.setdefault(ring_id, {})[state] = per_ring[ring_id].get(state, 0) - gone
        hidden[ring_id] = hidden.get(ring_id, 0) + gone
    rings: list[JsonObject] = []
    total = 0
    for m in spec.mounts:
        c = per_ring.get(m.ring_id, {})
        n = sum(c.values())
        total += n
        rings.append(
            {
                "ring": m.ring,
                "ring_id": m.ring_id,
                "access": m.access,
                "budget_share_pct": m.budget_share_pct,
                "memories": n,
                "graduated": c.get("graduated", 0),
                "candidates": c.get("candidate", 0),
                "held_imports": c.get("held_import", 0),
                "forgotten": hidden.get(m.ring_id, 0),
            }
        )

    att = spec.attestation
    attestation: JsonObject = {"configured": att is not None, "namespace": NAMESPACE}
    anchored = False
    if att is not None:
        attestation.update(
            {
                "anchor": str(att.allowed_signers),
                "exists": False,
                "reverify_fraction": att.reverify_fraction,
                "reverify_tagged": int(reverify or 0),
            }
        )
        if att.allowed_signers.is_file():
            try:
                anchor = load_anchor(att.allowed_signers)
                attestation.update(
                    {
                        "exists": True,
                        "sha256": anchor.sha256,
                        "key_fingerprints": [*anchor.fingerprints],
                    }
                )
                anchored = bool(anchor.signers)
            except ManifestError as e:
                attestation.update({"exists": True, "error": e.message})
    preview = complete(engine, apply=False, graduated_only=True)
    grandfathered = sum(
        1
        for v in preview.verdicts
        if v.status_before == "graduated" and v.status_after != "graduated"
    )
    r = spec.retrieval
    return StatusReport(
        seat_id=spec.seat.seat_id,
        rings=rings,
        graduation="open" if anchored else BLOCKED,
        attestation=attestation,
        oracle_split={row["oracle"]: int(row["c"]) for row in oracles},
        grandfathered_until_apply=grandfathered,
        vector_coverage={
            "memories": total,
            # Derived from the text (bit for bit), so every memory has one by construction.
            LOCAL_ENGINE: total,
            "dense": {row["engine"]: int(row["c"]) for row in dense if int(row["c"] or 0)},
        },
        retrieval={
            "lexical": "bm25 (tantivy index beside the store, corpus IDF)",
            "local_vector": LOCAL_ENGINE,
            "embedding_provider": r.embedding_provider,
            "embedding_model": r.embedding_model or None,
            "fail_open": r.fail_open,
            "reranker": r.reranker.model if r.reranker.enabled else "disabled",
        },
    )


__all__ = ["status"]
