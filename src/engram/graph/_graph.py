"""ACX Agent Graphs as one API: load, lint, digest, sign, verify, resolve workflow pins.

Spec: lboel/acx@85f1358 SPEC.md §16 (``acx.agent-graph/1``, media type
``application/vnd.acx.agent-graph.v1+json``), §16.8 (``acx.agent-graph-signature/1``), §16.9
("``sign`` requires the publishable profile ...; ``verify`` requires both a valid publishable
structure and valid signature"), §17.4 (a pinned workflow coordinate resolves to exactly those
bytes, or publication fails); docs/spec/acx-graphs.md.

A graph is never a permission grant: nothing here dispatches, routes or authorizes; a verified
signature proves key possession and integrity, and ``trusted`` proves a namespace, not that the
publisher controls the actors it names.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime

from engram.core.canonical import Json, JsonObject
from engram.core.keys import PrivateKey
from engram.graph._lint import P, lint_graph
from engram.trust import TrustRegistry
from engram.workflow import Issue, Verification, verify_workflow
from engram.workflow.internals import (
    ArtifactCheck,
    ArtifactKind,
    check_document,
    document_digest,
    load_document,
    member_path,
    sign_publishable,
    verify_document,
)

SCHEMA_VERSION = "acx.agent-graph/1"
SIGNATURE_VERSION = "acx.agent-graph-signature/1"
MEDIA_TYPE = "application/vnd.acx.agent-graph.v1+json"
PREDICATE_TYPE = "https://acx.dev/attestation/agent-graph/v1"

AGENT_GRAPH = ArtifactKind(
    label="Agent Graph",
    document_version=SCHEMA_VERSION,
    signature_version=SIGNATURE_VERSION,
    subject_prefix="urn:acx:agent-graph:",
    predicate_type=PREDICATE_TYPE,
    id_member="agentGraphId",
    version_member="agentGraphVersion",
    digest_member="agentGraphDigest",
    counts=(
        ("actors", "actors"),
        ("knowledgeModules", "knowledge"),
        ("routes", "routes"),
        ("loops", "loops"),
        ("convergencePoints", "convergence"),
    ),
)


def load_graph(data: bytes, *, what: str = "Agent Graph") -> JsonObject:
    """Strict I-JSON object of at most 4 MiB."""
    return load_document(data, what=what)


def graph_digest(document: JsonObject) -> str:
    """§16.8 steps 1-3: ``sha256:`` + hex SHA-256 of the JCS of the graph minus ``integrity``."""
    return document_digest(document)


def sign_graph(
    document: JsonObject, key: PrivateKey, *, publisher_id: str, signed_at: datetime
) -> JsonObject:
    """A signed copy of a publishable graph (§16.8, §16.9); :class:`SignError` otherwise."""
    return sign_publishable(
        AGENT_GRAPH, lint_graph, document, key, publisher_id=publisher_id, signed_at=signed_at
    )


def verify_graph(
    document: JsonObject,
    *,
    registry: TrustRegistry | None = None,
    now: datetime,
    local_keyids: Collection[str] = (),
) -> Verification:
    """The §4.5 verdict of the graph's signature, every binding (counts too) recomputed."""
    return verify_document(
        AGENT_GRAPH, document, registry=registry, now=now, local_keyids=local_keyids
    )


def check_graph(
    document: JsonObject,
    *,
    registry: TrustRegistry | None = None,
    now: datetime,
    local_keyids: Collection[str] = (),
) -> ArtifactCheck:
    """§16.8/§16.9 ``verify``: a valid signature AND a valid publishable structure."""
    return check_document(
        AGENT_GRAPH, lint_graph, document, registry=registry, now=now, local_keyids=local_keyids
    )


@dataclass(frozen=True)
class PinnedWorkflow:
    """A workflow document offered for resolving graph pins, with where it came from."""

    source: str
    document: JsonObject


def resolve_pins(
    graph: JsonObject, workflows: Iterable[PinnedWorkflow], *, now: datetime
) -> list[Issue]:
    """§17.4 / §16.1: each pinned ``acx-workflow`` loop resolves to exactly its bytes.

    A pin resolves only to a workflow whose signature holds (not tampered, not unsigned), whose
    *verified* publisher, id and version are the pin's, and whose digest recomputed from live
    content is the pinned digest; a newer version or another publisher is never taken instead.
    Then every participant alias the loop binds must be one of that workflow's participants.
    """
    offered = []
    for workflow in workflows:
        verification = verify_workflow(workflow.document, now=now)
        if verification.signed:
            offered.append((workflow, verification))
    issues: list[Issue] = []
    for index, loop in enumerate(_array(graph.get("loops"))):
        ref = loop.get("workflowRef") if isinstance(loop, dict) else None
        if not isinstance(loop, dict) or loop.get("kind") != "acx-workflow":
            continue
        if not isinstance(ref, dict) or "digest" not in ref:
            continue
        path = member_path("$.loops", index, "workflowRef")
        coordinate = f"{ref.get('publisherId')}/{ref['id']}@{ref.get('version')}"
        match = [
            (w, v)
            for w, v in offered
            if v.publisher_id == ref.get("publisherId")
            and w.document.get("id") == ref["id"]
            and w.document.get("version") == ref.get("version")
        ]
        if not match:
            issues.append(
                Issue(f"{P}.workflow-resolution", path, f"no verified workflow at {coordinate}")
            )
            continue
        pinned = [(w, v) for w, v in match if v.digest == ref["digest"]]
        if not pinned:
            found = ", ".join(f"{v.digest} ({w.source})" for w, v in match)
            issues.append(
                Issue(
                    f"{P}.workflow-resolution",
                    member_path(path, "digest"),
                    f"{coordinate} has digest {found}, not the pinned {ref['digest']}",
                )
            )
            continue
        participants = _array(pinned[0][0].document.get("participants"))
        aliases = {p.get("alias") for p in participants if isinstance(p, dict)}
        for j, binding in enumerate(_array(loop.get("actorBindings"))):
            listed = binding.get("participants") if isinstance(binding, dict) else None
            for alias in _array(listed):
                if alias not in aliases:
                    issues.append(
                        Issue(
                            f"{P}.participant-aliases",
                            member_path("$.loops", index, "actorBindings", j, "participants"),
                            f"{coordinate} has no participant {alias!r}",
                        )
                    )
    return issues


def _array(value: Json) -> list[Json]:
    """``value`` when it is a JSON array, else empty: pins are resolved on documents that may
    not have passed lint, so a member of the wrong shape contributes nothing."""
    return value if isinstance(value, list) else []


__all__ = [
    "AGENT_GRAPH",
    "MEDIA_TYPE",
    "PREDICATE_TYPE",
    "SCHEMA_VERSION",
    "SIGNATURE_VERSION",
    "PinnedWorkflow",
    "check_graph",
    "graph_digest",
    "load_graph",
    "resolve_pins",
    "sign_graph",
    "verify_graph",
]
