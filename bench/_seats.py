"""The benches' seat manifests, written by one function: each bench names only what differs
(seat, domain, kinds, mounts, budget, dense stage); the epistemology is engram.ote.v1's usual."""

from __future__ import annotations

from collections.abc import Sequence

Mount = tuple[str, str, int]
"""(ring, ring_id, budget_share_pct), every one read_write."""


def seat_manifest(
    seat_id: str,
    *,
    domain: str,
    kinds: Sequence[str],
    mounts: Sequence[Mount],
    budget: int = 4000,
    provider: str = "{provider}",
) -> str:
    """An engram.ote.v1 manifest; ``provider`` is the embedding provider, or left as the
    ``{provider}`` placeholder for benches that fill it per run."""
    listed = ", ".join(f'"{kind}"' for kind in kinds)
    rings = "".join(
        f'[[topology.mounts]]\nring = "{ring}"\nring_id = "{ring_id}"\n'
        f'access = "read_write"\nbudget_share_pct = {share}\n'
        for ring, ring_id, share in mounts
    )
    return (
        '\nschema_version = "engram.ote.v1"\n[seat]\n'
        f'seat_id = "{seat_id}"\narchetype = "archetype:general"\n'
        f"keyspace_budget_tokens = {budget}\n"
        f'[ontology]\ndomain = "{domain}"\nallowed_kinds = [{listed}]\n'
        f"{rings}"
        "[epistemology]\ncredible_z = 1.96\ngraduation_lcb_threshold = 0.78\n"
        "graduation_min_samples = 8.0\nnomination_lcb_threshold = 0.85\n"
        "nomination_min_verifications = 5\n"
        f'[retrieval]\nembedding_provider = "{provider}"\n'
    )


__all__ = ["Mount", "seat_manifest"]
