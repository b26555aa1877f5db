"""Signed workflows and Agent Graphs: one verification step, then one summariser per kind.

Spec: lboel/acx@85f1358 SPEC.md §17.1 (current-byte validation, path binding), §17.3 (signed
lineage), §17.6 item 3 (what "verified" covers); the reference's
``tools/build-registry-index.mjs`` for the entry members; docs/spec/acx-registry.md §3.

Both kinds go through :func:`verify_document` (read within the size cap, signature and
publishability, the signed identity against the path, lineage) and differ only in the members
their entry adds to the common ones (issue 28: the two summarisers were one shape written
twice over loose dicts). Entries are typed (:class:`WorkflowEntry`, :class:`GraphEntry`) and
keep the reference's member order, which ``index.json`` publishes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

from engram.core.canonical import JsonObject
from engram.errors import EngramError
from engram.graph import check_graph
from engram.registry._artifacts import Summary, trust_status
from engram.registry._layout import (
    AGENT_GRAPH,
    ARTIFACT_ID,
    ARTIFACT_TYPES,
    DIGEST,
    SEMVER,
    WORKFLOW,
    Coordinate,
    canonical_path,
    https_url,
    identity_problem,
)
from engram.registry._problems import Problem, problem
from engram.trust import TrustRegistry
from engram.workflow import Verification, check_workflow
from engram.workflow.internals import MAX_DOCUMENT_BYTES, PUBLISHER_ID, ArtifactCheck, load_document


def lineage_problems(
    document: dict[str, Any], own: Coordinate | None, relative: str
) -> list[Problem]:
    """§17.3 over the signed ``lineage`` block, with the child's full coordinate known."""
    lineage = document.get("lineage")
    if lineage is None:
        return []
    rule = "registry.lineage"
    if not isinstance(lineage, dict) or set(lineage) - {"parents", "note"}:
        return [problem(relative, rule, "lineage holds only parents and an optional note")]
    parents = lineage.get("parents")
    if not isinstance(parents, list) or not 1 <= len(parents) <= 8:
        return [problem(relative, rule, "lineage.parents must list one to eight parents")]
    found: list[Problem] = []
    seen: set[tuple[Any, ...]] = set()
    for index, parent in enumerate(parents):
        where = f"lineage.parents[{index}]"
        if not isinstance(parent, dict):
            found.append(problem(relative, rule, f"{where} is not an object"))
            continue
        unknown = set(parent) - {
            "artifactType",
            "publisherId",
            "id",
            "version",
            "digest",
            "relation",
            "source",
        }
        if unknown:
            found.append(problem(relative, rule, f"{where} has unknown members {sorted(unknown)}"))
        if parent.get("artifactType") not in ARTIFACT_TYPES:
            found.append(
                problem(
                    relative, rule, f"{where}.artifactType must be agent, workflow or agent-graph"
                )
            )
        if not isinstance(parent.get("publisherId"), str) or not PUBLISHER_ID.fullmatch(
            parent["publisherId"]
        ):
            found.append(problem(relative, rule, f"{where}.publisherId is not reverse-DNS"))
        if not isinstance(parent.get("id"), str) or not ARTIFACT_ID.fullmatch(parent["id"]):
            found.append(problem(relative, rule, f"{where}.id is invalid"))
        if "version" in parent and not (
            isinstance(parent["version"], str) and SEMVER.fullmatch(parent["version"])
        ):
            found.append(problem(relative, rule, f"{where}.version is not SemVer"))
        if not isinstance(parent.get("digest"), str) or not DIGEST.fullmatch(parent["digest"]):
            found.append(problem(relative, rule, f"{where}.digest must pin sha256"))
        if parent.get("relation") not in ("fork", "remix", "derived-from", "supersedes"):
            found.append(
                problem(
                    relative,
                    rule,
                    f"{where}.relation must be fork, remix, derived-from or supersedes",
                )
            )
        if "source" in parent and not https_url(parent["source"]):
            found.append(
                problem(
                    relative,
                    rule,
                    f"{where}.source must be an absolute https URL without credentials",
                )
            )
        identity = tuple(
            parent.get(k) for k in ("artifactType", "publisherId", "id", "version", "digest")
        )
        if identity in seen:
            found.append(problem(relative, rule, f"{where} repeats another parent"))
        seen.add(identity)
        if (
            own is not None
            and parent.get("artifactType") == own.artifact_type
            and parent.get("publisherId") == own.publisher_id
            and parent.get("id") == own.id
            and parent.get("version") in (None, own.version)
        ):
            found.append(problem(relative, rule, f"{where} is this artifact's own coordinate"))
    return found


def lineage_entries(document: dict[str, Any]) -> list[JsonObject]:
    lineage = document.get("lineage")
    parents = lineage.get("parents") if isinstance(lineage, dict) else None
    return [
        {
            k: p.get(k)
            for k in (
                "artifactType",
                "publisherId",
                "id",
                "version",
                "digest",
                "relation",
                "source",
            )
        }
        for p in parents or []
        if isinstance(p, dict)
    ]


def _document(path: Path, shown: str) -> tuple[dict[str, Any] | None, Problem | None]:
    try:
        # Read one byte past the document limit, never the whole file: a huge file in the
        # registry is a finding, not a MemoryError (issue 15).
        with path.open("rb") as handle:
            data = handle.read(MAX_DOCUMENT_BYTES + 1)
        return load_document(data, what=shown), None
    except (EngramError, OSError) as e:
        return None, problem(shown, "registry.live-verify", getattr(e, "message", str(e)))


def _signed(check: ArtifactCheck, relative: str) -> list[Problem]:
    verification = check.verification
    problems: list[Problem] = []
    if verification.state is None:
        problems.append(
            problem(
                relative, "registry.live-verify", "unsigned: only signed documents are published"
            )
        )
    elif verification.tampered:
        problems.append(
            problem(relative, "registry.live-verify", f"tampered: {verification.reason}")
        )
    for issue in check.lint.errors[:10]:
        problems.append(problem(relative, "registry.live-verify", f"not publishable: {issue}"))
    return problems


def _identity(
    kind: str, document: dict[str, Any], verification: Verification, relative: str | None
) -> tuple[Coordinate | None, list[Problem]]:
    wrong = identity_problem(
        kind, verification.publisher_id, document.get("id"), document.get("version")
    )
    if wrong:
        shown = relative or str(document.get("id"))
        return None, [problem(shown, "registry.path-binding", f"signed identity: {wrong}")]
    assert verification.publisher_id is not None
    expected = canonical_path(kind, verification.publisher_id, document["id"], document["version"])
    if relative is not None and relative != expected:
        return None, [
            problem(relative, "registry.path-binding", f"the verified {kind} belongs at {expected}")
        ]
    return Coordinate(
        kind, verification.publisher_id, document["id"], document["version"], verification.digest
    ), []


class DocumentEntry(TypedDict):
    """The members every signed document's index entry starts with."""

    path: str
    id: str
    version: str
    name: str
    description: str
    license: str | None
    tags: list[str]
    publisher: str | None
    trust: str
    trustStatus: str
    digest: str


class Participant(TypedDict):
    alias: Any
    bind: Any
    role: Any
    romDigest: Any


class WorkflowEntry(DocumentEntry):
    participants: list[Participant]
    participantCount: int
    nodeCount: int
    capabilities: list[str]
    lineage: list[JsonObject]
    publishable: bool
    signed: bool


class Actor(TypedDict):
    id: Any
    name: Any
    kind: Any


class Knowledge(TypedDict):
    id: Any
    name: Any
    kind: Any
    stewards: list[Any]


class Loop(TypedDict):
    id: Any
    kind: Any
    workflowPublisherId: Any
    workflowId: Any
    workflowVersion: Any
    digest: Any


class GraphEntry(DocumentEntry):
    actorCount: int
    knowledgeCount: int
    routeCount: int
    loopCount: int
    convergenceCount: int
    intents: list[str]
    actors: list[Actor]
    knowledge: list[Knowledge]
    loops: list[Loop]
    lineage: list[JsonObject]
    publishable: bool
    signed: bool


@dataclass(frozen=True)
class VerifiedDocument:
    """A signed document that passed the shared step: its path, identity and lineage problems
    (an artifact with any is listed as refused, not indexed)."""

    document: dict[str, Any]
    check: ArtifactCheck
    coordinate: Coordinate | None
    relative: str
    problems: list[Problem]

    def common(self) -> DocumentEntry:
        document, verification = self.document, self.check.verification
        assert verification.state is not None
        return {
            "path": self.relative,
            "id": document["id"],
            "version": document["version"],
            "name": document.get("name") or document["id"],
            "description": document.get("description") or "",
            "license": document.get("license") or None,
            "tags": list(document.get("tags") or []),
            "publisher": verification.publisher_id,
            "trust": verification.verdict,
            "trustStatus": trust_status(verification.state, verification.warnings),
            "digest": verification.digest,
        }

    def summary(self, entry: DocumentEntry) -> Summary:
        return Summary(
            self.coordinate,
            dict(entry),
            self.problems,
            self.check.verification.signed_at,
            self.document,
        )


def verify_document(
    kind: str,
    checker: Callable[..., ArtifactCheck],
    root: Path,
    relative: str | None,
    *,
    source: Path | None,
    trust: TrustRegistry | None,
    now: datetime,
) -> VerifiedDocument | Summary:
    """The step every signed document kind shares; a :class:`Summary` of refusal when the
    document cannot be read, is unsigned, tampered or not publishable."""
    shown = relative or (source.name if source is not None else "?")
    document, unreadable = _document(source if source is not None else root / shown, shown)
    if document is None:
        return Summary(None, {"path": shown}, [unreadable] if unreadable else [])
    check = checker(document, registry=trust, now=now)
    problems = _signed(check, shown)
    if problems:
        return Summary(None, {"path": shown}, problems)
    coordinate, problems = _identity(kind, document, check.verification, relative)
    if coordinate is not None:
        shown = coordinate.path
    problems += lineage_problems(document, coordinate, shown)
    return VerifiedDocument(document, check, coordinate, shown, problems)


def workflow_entry(verified: VerifiedDocument) -> WorkflowEntry:
    document = verified.document
    tasks = [n for n in document.get("nodes", []) if isinstance(n, dict)]
    return {
        **verified.common(),
        "participants": [
            {
                "alias": p.get("alias"),
                "bind": p.get("bind"),
                "role": (p.get("slot") or {}).get("role"),
                "romDigest": p.get("romDigest"),
            }
            for p in document.get("participants", [])
        ],
        "participantCount": len(document.get("participants", [])),
        "nodeCount": len(document.get("nodes", [])),
        "capabilities": sorted(
            {c for t in tasks for c in (t.get("requires") or {}).get("capabilities", [])}
        ),
        "lineage": lineage_entries(document),
        "publishable": True,
        "signed": True,
    }


def graph_entry(verified: VerifiedDocument) -> GraphEntry:
    document = verified.document
    routes = [r for r in document.get("routes", []) if isinstance(r, dict)]
    return {
        **verified.common(),
        "actorCount": len(document.get("actors", [])),
        "knowledgeCount": len(document.get("knowledge", [])),
        "routeCount": len(routes),
        "loopCount": len(document.get("loops", [])),
        "convergenceCount": len(document.get("convergence", [])),
        "intents": sorted({str(r["intent"]) for r in routes if r.get("intent")}),
        "actors": [
            {"id": a.get("id"), "name": a.get("name") or a.get("id"), "kind": a.get("kind")}
            for a in document.get("actors", [])
        ],
        "knowledge": [
            {
                "id": k.get("id"),
                "name": k.get("name") or k.get("id"),
                "kind": k.get("kind"),
                "stewards": list(k.get("stewards") or []),
            }
            for k in document.get("knowledge", [])
        ],
        "loops": [
            {
                "id": loop.get("id"),
                "kind": loop.get("kind"),
                "workflowPublisherId": (loop.get("workflowRef") or {}).get("publisherId"),
                "workflowId": (loop.get("workflowRef") or {}).get("id"),
                "workflowVersion": (loop.get("workflowRef") or {}).get("version"),
                "digest": (loop.get("workflowRef") or {}).get("digest"),
            }
            for loop in document.get("loops", [])
        ],
        "lineage": lineage_entries(document),
        "publishable": True,
        "signed": True,
    }


def summarize_workflow(
    root: Path,
    relative: str | None,
    *,
    trust: TrustRegistry | None,
    now: datetime,
    source: Path | None = None,
) -> Summary:
    """``workflows/<publisher>/<id>/<version>.json`` (or ``source``) as its index entry."""
    verified = verify_document(
        WORKFLOW, check_workflow, root, relative, source=source, trust=trust, now=now
    )
    if isinstance(verified, Summary):
        return verified
    return verified.summary(workflow_entry(verified))


def summarize_graph(
    root: Path,
    relative: str | None,
    *,
    trust: TrustRegistry | None,
    now: datetime,
    source: Path | None = None,
) -> Summary:
    """``graphs/<publisher>/<id>/<version>.json`` (or ``source``) as its index entry."""
    verified = verify_document(
        AGENT_GRAPH, check_graph, root, relative, source=source, trust=trust, now=now
    )
    if isinstance(verified, Summary):
        return verified
    return verified.summary(graph_entry(verified))


__all__ = [
    "DocumentEntry",
    "GraphEntry",
    "VerifiedDocument",
    "WorkflowEntry",
    "graph_entry",
    "lineage_entries",
    "lineage_problems",
    "summarize_graph",
    "summarize_workflow",
    "verify_document",
    "workflow_entry",
]
