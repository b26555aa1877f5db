"""ACX Workflows as one API: load, lint, digest, sign, verify, inspect.

Spec: lboel/acx@85f1358 SPEC.md §14 (``acx.cal/1``, media type
``application/vnd.acx.workflow.v1+json``), §14.5 (``acx.workflow-signature/1``), §12 item 15;
docs/spec/acx-workflows.md. Signing requires the publishable profile (a document that would not
pass ``lint --publish`` is not signed); verifying reports the signature verdict and, separately,
what ``lint --publish`` says about the signed content, so a valid signature over an invalid
workflow is visible as both facts.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from engram.core.canonical import JsonObject
from engram.core.keys import PrivateKey
from engram.trust import TrustRegistry
from engram.workflow._document import load_document
from engram.workflow._issues import Accepted
from engram.workflow._lint import lint_workflow
from engram.workflow._signature import (
    ArtifactCheck,
    ArtifactKind,
    Verification,
    check_document,
    document_digest,
    sign_publishable,
    verify_document,
)

SCHEMA_VERSION = "acx.cal/1"
SIGNATURE_VERSION = "acx.workflow-signature/1"
MEDIA_TYPE = "application/vnd.acx.workflow.v1+json"
PREDICATE_TYPE = "https://acx.dev/attestation/workflow/v1"

WORKFLOW = ArtifactKind(
    label="workflow",
    document_version=SCHEMA_VERSION,
    signature_version=SIGNATURE_VERSION,
    subject_prefix="urn:acx:workflow:",
    predicate_type=PREDICATE_TYPE,
    id_member="workflowId",
    version_member="workflowVersion",
    digest_member="workflowDigest",
    counts=(("participants", "participants"), ("nodes", "nodes")),
)


def load_workflow(data: bytes, *, what: str = "workflow") -> JsonObject:
    """Strict I-JSON object of at most 4 MiB (the schema is lint's business, not the loader's)."""
    return load_document(data, what=what)


def workflow_digest(document: JsonObject) -> str:
    """§14.5 steps 1-3: ``sha256:`` + hex SHA-256 of the JCS of the document minus ``integrity``."""
    return document_digest(document)


def sign_workflow(
    document: JsonObject, key: PrivateKey, *, publisher_id: str, signed_at: datetime
) -> JsonObject:
    """A signed copy of a publishable ``document`` (§14.5); :class:`SignError` otherwise."""
    return sign_publishable(
        WORKFLOW, lint_workflow, document, key, publisher_id=publisher_id, signed_at=signed_at
    )


def verify_workflow(
    document: JsonObject,
    *,
    registry: TrustRegistry | None = None,
    now: datetime,
    local_keyids: Collection[str] = (),
) -> Verification:
    """The §4.5 verdict of the workflow's signature, every binding recomputed from live bytes."""
    return verify_document(
        WORKFLOW, document, registry=registry, now=now, local_keyids=local_keyids
    )


def check_workflow(
    document: JsonObject,
    *,
    registry: TrustRegistry | None = None,
    now: datetime,
    local_keyids: Collection[str] = (),
) -> ArtifactCheck:
    """The signature first, then ``lint --publish`` over the content it vouches for."""
    return check_document(
        WORKFLOW, lint_workflow, document, registry=registry, now=now, local_keyids=local_keyids
    )


def workflow_card(document: Accepted, verification: Verification) -> JsonObject:
    """The discovery card ``inspect`` shows: identity, team, tasks, context, safety, trust."""
    tasks = [
        n for n in document.get("nodes", []) if isinstance(n, dict) and n.get("type") == "task"
    ]
    capabilities = sorted({c for t in tasks for c in t.get("requires", {}).get("capabilities", [])})
    skills = sorted({s for t in tasks for s in t.get("requires", {}).get("skills", [])})
    return {
        "id": document.get("id"),
        "version": document.get("version"),
        "name": document.get("name") or document.get("id"),
        "description": document.get("description"),
        "license": document.get("license"),
        "tags": document.get("tags", []),
        "mediaType": MEDIA_TYPE,
        "digest": verification.digest,
        "verdict": verification.verdict,
        "publisherId": verification.publisher_id,
        "participants": [
            {
                "alias": p.get("alias"),
                "bind": p.get("bind"),
                "required": p.get("required", True) is not False,
                "romDigest": p.get("romDigest"),
                "slot": p.get("slot"),
            }
            for p in document.get("participants", [])
        ],
        "tasks": [
            {
                "id": t.get("id"),
                "agent": t.get("agent"),
                "action": t.get("action"),
                "completion": (t.get("completion") or {}).get("type"),
                "sideEffects": t.get("sideEffects", "workspace"),
                "approval": t.get("approval", "on-request"),
            }
            for t in tasks
        ],
        "capabilities": capabilities,
        "skills": skills,
        "rac": [
            {"id": r.get("id"), "kind": r.get("kind"), "required": r.get("required", True)}
            for r in document.get("rac", [])
        ],
        "limits": document.get("limits"),
        "nodes": len(document.get("nodes", [])),
        "edges": len(document.get("edges", [])),
    }


__all__ = [
    "MEDIA_TYPE",
    "PREDICATE_TYPE",
    "SCHEMA_VERSION",
    "SIGNATURE_VERSION",
    "WORKFLOW",
    "check_workflow",
    "load_workflow",
    "sign_workflow",
    "verify_workflow",
    "workflow_card",
    "workflow_digest",
]
