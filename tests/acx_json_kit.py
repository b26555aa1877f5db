"""Shared test material for ACX workflows and Agent Graphs (tests/workflow, tests/graph).

- the reference implementation's signed documents (copied under tests/vectors/acx-reference);
- valid documents built here, small enough to read, that tests then break one rule at a time;
- trust registries written by hand as JSON (keyids from ``hashlib`` over DER SPKI from
  ``cryptography``), so trust is checked against bytes engram did not produce;
- :func:`node_verify`, an independent verifier in Node (npm ``canonicalize`` for RFC 8785 and
  WebCrypto Ed25519 for DSSE) that shares no code with engram.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

TESTS = Path(__file__).resolve().parent
REFERENCE = TESTS / "vectors" / "acx-reference"
REFERENCE_CAL = REFERENCE / "registry/cals/io.github.lboel/ship-a-feature/1.0.0.cal.json"
REFERENCE_GRAPH = (
    REFERENCE / "registry/graphs/io.github.lboel/product-delivery/1.0.0.agent-graph.json"
)
REFERENCE_EXAMPLE_GRAPH = REFERENCE / "examples/product-delivery.agent-graph.json"
REFERENCE_INDEX = REFERENCE / "registry/index.json"
REFERENCE_CARTRIDGE = (
    REFERENCE / "registry/cartridges/io.github.ridgeworks/ada-ridge/1.0.0/cartridge.acx"
)
SCHEMAS = TESTS / "vectors" / "acx-spec" / "schemas"
VERIFIER = TESTS / "workflow" / "verify_acx_json.mjs"

NOW = datetime(2026, 9, 1, tzinfo=UTC)
"""After the reference documents were signed (July 2026), inside the registries built here."""


def reference(path: Path) -> dict[str, Any]:
    value = json.loads(path.read_bytes())
    assert isinstance(value, dict)
    return value


def index_digest(collection: str, artifact_id: str) -> str:
    """The digest the reference's registry index records for an artifact."""
    index = reference(REFERENCE_INDEX)
    (entry,) = [e for e in index[collection] if e["id"] == artifact_id]
    return str(entry["digest"])


def keyid_of_pem(pem: str) -> str:
    key = serialization.load_pem_public_key(pem.encode())
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return "ed25519:" + hashlib.sha256(der).hexdigest()


def registry_for(pem: str, publisher: str, **overrides: Any) -> bytes:
    """A one-key acx.trust-registry/1 binding ``publisher`` to ``pem`` by GitHub OIDC."""
    owner = publisher.split(".")[2].split("/")[0]
    entry: dict[str, Any] = {
        "keyid": keyid_of_pem(pem),
        "publisherId": publisher,
        "algorithm": "ed25519",
        "publicKeyPem": pem,
        "status": "active",
        "notBefore": "2026-01-01T00:00:00Z",
        "notAfter": "2027-12-31T00:00:00Z",
        "namespaceProof": {
            "method": "github-oidc",
            "oidcSubject": f"repo:{owner}/acx:ref:refs/heads/main",
            "oidcIssuer": "https://token.actions.githubusercontent.com",
            "verifiedAt": "2026-01-02T00:00:00Z",
        },
    }
    entry.update(overrides)
    registry = {"schemaVersion": "acx.trust-registry/1", "keys": [entry]}
    return json.dumps(registry).encode()  # noqa: TID251


def b64url(text: str) -> str:
    """The same bytes re-encoded in URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(base64.b64decode(text)).decode().rstrip("=")


def workflow() -> dict[str, Any]:
    """A small valid, publishable workflow: build, review, loop back until the review passes."""
    return copy.deepcopy(_WORKFLOW)


_WORKFLOW: dict[str, Any] = {
    "schemaVersion": "acx.cal/1",
    "id": "review-loop",
    "version": "1.2.0",
    "name": "Build and review",
    "description": "A builder builds and a reviewer reviews, looping back until the review passes.",
    "license": "Apache-2.0",
    "authors": [{"name": "Test Author", "url": "https://example.com/author"}],
    "tags": ["review", "agent-team"],
    "participants": [
        {
            "alias": "builder",
            "bind": "slot",
            "slot": {"role": "builder", "capabilities": [{"taskType": "build-dag"}]},
        },
        {"alias": "reviewer", "bind": "slot", "slot": {"role": "reviewer"}},
    ],
    "rac": [
        {"id": "code-wiki", "kind": "wiki", "description": "A map of the codebase's modules."},
    ],
    "variables": [{"name": "review", "type": "object"}, {"name": "attempts", "type": "integer"}],
    "limits": {"maxSteps": 12},
    "start": "build",
    "nodes": [
        {
            "id": "build",
            "type": "task",
            "agent": "builder",
            "requires": {"capabilities": ["build-dag"], "rac": ["code-wiki"]},
            "completion": {
                "type": "verification",
                "commands": ["make test"],
                "passIntent": "green",
            },
        },
        {
            "id": "review",
            "type": "task",
            "agent": "reviewer",
            "approval": "always",
            "completion": {"type": "guardrail", "kind": "milestone"},
        },
        {"id": "gate", "type": "gateway", "gateway": "exclusive"},
        {"id": "done", "type": "event", "event": "end"},
    ],
    "edges": [
        {"from": "build", "to": "review"},
        {"from": "review", "to": "gate"},
        {
            "from": "gate",
            "to": "done",
            "when": {"var": "review.outcome", "op": "eq", "value": "ok"},
        },
        {"from": "gate", "to": "build", "when": {"always": True}},
    ],
}


def graph() -> dict[str, Any]:
    """A small valid, publishable Agent Graph: a lead directs two teams that report back."""
    return copy.deepcopy(_GRAPH)


_GRAPH: dict[str, Any] = {
    "schemaVersion": "acx.agent-graph/1",
    "id": "small-team",
    "version": "0.3.0",
    "name": "Small team",
    "description": "A lead directs a build team and a research team; both report back to the lead.",
    "license": "MIT",
    "authors": [{"name": "Test Author"}],
    "tags": ["team"],
    "limits": {"maxPropagationHops": 4, "maxFanout": 3},
    "actors": [
        {"id": "lead", "kind": "human", "name": "Lead", "description": "Owns the decisions."},
        {"id": "builders", "kind": "group", "description": "Build the increment."},
        {"id": "researchers", "kind": "agent", "description": "Collect evidence."},
    ],
    "knowledge": [
        {
            "id": "brief",
            "kind": "requirement",
            "description": "What to build.",
            "stewards": ["lead"],
        },
        {
            "id": "status",
            "kind": "status",
            "description": "Build progress.",
            "stewards": ["builders"],
        },
        {
            "id": "evidence",
            "kind": "evidence",
            "description": "Research findings.",
            "stewards": ["researchers"],
        },
        {"id": "decision", "kind": "decision", "description": "What next.", "stewards": ["lead"]},
    ],
    "routes": [
        {
            "id": "lead-directs",
            "from": "lead",
            "to": ["builders", "researchers"],
            "intent": "direct",
            "obligation": "must",
            "purpose": "Hand both teams the current brief.",
            "carries": ["brief"],
            "returns": ["status"],
            "expects": {"via": "builders-report", "withinMs": 86400000},
            "triggers": [{"type": "event", "events": ["work.requested"]}],
        },
        {
            "id": "builders-report",
            "from": "builders",
            "to": ["lead"],
            "intent": "report",
            "obligation": "must",
            "purpose": "Report progress and blockers.",
            "carries": ["status"],
            "triggers": [{"type": "interval", "everyMs": 3600000}],
        },
        {
            "id": "research-advises",
            "from": "researchers",
            "to": ["lead"],
            "intent": "advise",
            "obligation": "should",
            "purpose": "Return findings to the lead.",
            "carries": ["evidence"],
            "triggers": [{"type": "manual"}],
        },
    ],
    "loops": [
        {
            "id": "build-loop",
            "kind": "acx-workflow",
            "description": "The build and review loop.",
            "workflowRef": {
                "publisherId": "io.github.example",
                "id": "review-loop",
                "version": "1.2.0",
                "digest": "sha256:" + "ab" * 32,
            },
            "actorBindings": [{"actor": "builders", "participants": ["builder", "reviewer"]}],
            "imports": ["brief"],
            "exports": ["status"],
        },
        {
            "id": "research-loop",
            "kind": "informal",
            "description": "Desk research.",
            "exports": ["evidence"],
        },
    ],
    "convergence": [
        {
            "id": "steering",
            "description": "Evidence and delivery meet before the next decision.",
            "inputs": [
                {"loop": "build-loop", "knowledge": ["status"]},
                {"loop": "research-loop", "knowledge": ["evidence"]},
            ],
            "steward": "lead",
            "policy": {"mode": "steward-synthesis", "description": "The lead decides."},
            "outputs": ["decision"],
            "trigger": "When either loop reports a material change.",
            "limits": {"maxWaitMs": 3600000, "maxRounds": 2},
        }
    ],
}


def node_verify(path: Path, kind: str) -> dict[str, Any]:
    """Run the independent Node verifier on a signed document (``workflow`` / ``agent-graph``).

    Skipped when Node or the npm packages are missing, except under CI=true where that fails.
    """
    node = shutil.which("node")
    installed = (TESTS / "workflow" / "node_modules" / "canonicalize").is_dir()
    if node is None or not installed:
        message = "node and npm canonicalize are needed for the verifier (run: scripts/node-tools)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run(
        [node, str(VERIFIER), str(path), kind],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert isinstance(result, dict)
    return result
