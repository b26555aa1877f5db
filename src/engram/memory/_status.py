"""``status``: what a seat's memory looks like, and whether graduation can happen at all.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2) engram_status ("ring counts, graduated
counts, vector coverage, graduation (blocked without an anchor), attestation (anchor path, sha256
and key fingerprints), oracle_split and grandfathered_until_apply"). ``grandfathered_until_apply``
counts graduated memories that the current rule would no longer graduate: they stay graduated until
the next ``complete`` applies the rule (see ``docs/spec/memory-epistemology.md``).
"""

# ruff: noqa: S608 - SQL text interpolates only "?" placeholder lists and constant table names

from __future__ import annotations

from engram.errors import ManifestError
from engram.memory._attestation import NAMESPACE, load_anchor
from engram.memory._engine import MemoryEngine
from engram.memory._epistemology import BLOCKED
from engram.memory._models import StatusReport
from engram.memory._outcomes import complete
from engram.memory._text import LOCAL_ENGINE


def _marks(n: int) -> str:
    return ", ".join("?" for _ in range(n))


def status(engine: MemoryEngine) -> StatusReport:
    """Counts per mounted ring, graduation state, the anchor, oracle split and vector coverage."""
    spec = engine.spec
    ring_ids = list(spec.ring_ids)
    marks = _marks(len(ring_ids))
    with engine.store.read() as tx:
        counts = tx.execute(
            f"SELECT ring_id, status, COUNT(*) AS c FROM memory_items "
            f"WHERE ring_id IN ({marks}) GROUP BY ring_id, status",
            ring_ids,
        )
        oracles = tx.execute(
            "SELECT o.oracle, COUNT(*) AS c FROM memory_outcomes o JOIN memory_items m "
            f"ON m.id = o.memory_id WHERE m.ring_id IN ({marks}) GROUP BY o.oracle",
            ring_ids,
        )
        local = tx.scalar(
            "SELECT COUNT(*) FROM memory_vectors v JOIN memory_items m ON m.id = v.memory_id "
            f"WHERE m.ring_id IN ({marks}) AND v.engine = ?",
            [*ring_ids, LOCAL_ENGINE],
        )
        dense = tx.execute(
            "SELECT d.engine, COUNT(*) AS c FROM memory_dense_vectors d JOIN memory_items m "
            f"ON m.id = d.memory_id WHERE m.ring_id IN ({marks}) GROUP BY d.engine",
            ring_ids,
        )
        reverify = tx.scalar(
            "SELECT COUNT(*) FROM memory_outcomes o JOIN memory_items m ON m.id = o.memory_id "
            f"WHERE m.ring_id IN ({marks}) AND o.reverify = 1",
            ring_ids,
        )
    per_ring: dict[str, dict[str, int]] = {}
    for row in counts:
        per_ring.setdefault(row["ring_id"], {})[row["status"]] = int(row["c"])
    rings = []
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
            }
        )

    att = spec.attestation
    attestation: dict[str, object] = {"configured": att is not None, "namespace": NAMESPACE}
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
                        "key_fingerprints": anchor.fingerprints,
                    }
                )
                anchored = bool(anchor.signers)
            except ManifestError as e:
                attestation.update({"exists": True, "error": e.message})
    preview = complete(engine, apply=False)
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
            LOCAL_ENGINE: int(local or 0),
            "dense": {row["engine"]: int(row["c"]) for row in dense},
        },
        retrieval={
            "lexical": "bm25 (in-process inverted index, corpus IDF)",
            "local_vector": LOCAL_ENGINE,
            "embedding_provider": r.embedding_provider,
            "embedding_model": r.embedding_model or None,
            "fail_open": r.fail_open,
            "reranker": r.reranker.model if r.reranker.enabled else "disabled",
        },
    )


__all__ = ["status"]
