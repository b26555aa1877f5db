"""A remix draft of a signed workflow or Agent Graph: unsigned, new identity, signed lineage kept.

Spec: lboel/acx@85f1358 SPEC.md §17.3 ("A remix tool MUST remove the parent's integrity, assign a
new id/version/publisher at signing time, retain a digest-pinned lineage parent, and require a
new signature. It MUST NOT copy or expose a private key."), §17.7 (drafts are unsigned and not
publishable until signed locally); docs/spec/acx-registry.md §9.

The parent must verify (signed, not tampered); its verified publisher, id, version and digest
become the one lineage parent. The draft has no ``integrity``, so it is not publishable until
``engram workflow sign`` / ``engram graph sign`` gives it a publisher and a new signature.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from engram.graph import verify_graph
from engram.registry._layout import AGENT_GRAPH, ARTIFACT_ID, SEMVER, WORKFLOW
from engram.registry._problems import RegistryRefused
from engram.registry._relations import RELATIONS
from engram.workflow import verify_workflow
from engram.workflow.internals import unsigned


def remix_draft(
    document: dict[str, Any],
    *,
    new_id: str,
    new_version: str,
    relation: str = "remix",
    source: str | None = None,
    note: str | None = None,
    now: datetime,
) -> dict[str, Any]:
    kind = AGENT_GRAPH if document.get("schemaVersion") == "acx.agent-graph/1" else WORKFLOW
    verification = (verify_graph if kind == AGENT_GRAPH else verify_workflow)(document, now=now)
    if not verification.signed:
        raise RegistryRefused(
            "only a signed, intact parent can be remixed "
            f"({verification.verdict}: {verification.reason})"
        )
    if not ARTIFACT_ID.fullmatch(new_id) or not SEMVER.fullmatch(new_version):
        raise RegistryRefused("the remix needs a valid new id and SemVer version")
    if relation not in RELATIONS:
        raise RegistryRefused(f"relation must be one of {', '.join(RELATIONS)}")
    if (new_id, new_version) == (document.get("id"), document.get("version")):
        raise RegistryRefused(
            "a remix needs a new id or a new version (the parent's coordinate is taken)"
        )
    parent: dict[str, Any] = {
        "artifactType": kind,
        "publisherId": verification.publisher_id,
        "id": document.get("id"),
        "version": document.get("version"),
        "digest": verification.digest,
        "relation": relation,
    }
    if source is not None:
        parent["source"] = source
    draft = {k: v for k, v in unsigned(document).items() if k != "lineage"}
    draft["id"] = new_id
    draft["version"] = new_version
    draft["lineage"] = {"parents": [parent], **({"note": note} if note else {})}
    return draft


__all__ = ["RELATIONS", "remix_draft"]
