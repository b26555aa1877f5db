"""The reference implementation's signed Agent Graph, engram's own signatures, and §16.8.

``product-delivery`` 1.0.0 (lboel/acx) must lint for publication, hash to the digest its registry
index records, verify ``portable`` bare and ``trusted`` with a registry built here from the key it
carries, resolve its pinned ``ship-a-feature`` loop by recomputed digest, and turn ``tampered`` at
one changed byte or one re-pointed count; graphs engram signs pass the independent Node verifier.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from acx_json_kit import (
    NOW,
    REFERENCE_CAL,
    REFERENCE_EXAMPLE_GRAPH,
    REFERENCE_GRAPH,
    SCHEMAS,
    graph,
    index_digest,
    node_verify,
    reference,
    registry_for,
    workflow,
)
from engram.core.dsse import PAYLOAD_TYPE_IN_TOTO, pae
from engram.core.keys import PrivateKey
from engram.graph import (
    PinnedWorkflow,
    check_graph,
    graph_digest,
    lint_graph,
    load_graph,
    resolve_pins,
    sign_graph,
    verify_graph,
)
from engram.graph.internals import AGENT_GRAPH
from engram.trust import TrustState, load_trust_registry
from engram.workflow import SignError, load_workflow, sign_workflow, workflow_digest
from engram.workflow.internals import sign_document

PACKAGED = Path(__file__).resolve().parents[2] / "src/engram/graph/schemas"
KEY = PrivateKey.generate()


@pytest.mark.req("engram.graph.schema")
def test_packaged_schema_is_the_published_one() -> None:
    name = "agent-graph.schema.json"
    assert (PACKAGED / name).read_bytes() == (SCHEMAS / name).read_bytes()


@pytest.mark.req("engram.graph.schema", "engram.graph.publish-metadata")
def test_the_reference_graph_lints_clean_for_publication() -> None:
    assert not lint_graph(load_graph(REFERENCE_GRAPH.read_bytes()), publish=True).issues
    example = lint_graph(load_graph(REFERENCE_EXAMPLE_GRAPH.read_bytes()), publish=True)
    assert example.ok
    assert [w.rule for w in example.warnings] == ["engram.graph.publish-signed"]


@pytest.mark.req("engram.graph.digest")
def test_the_digest_is_the_one_the_registry_index_records() -> None:
    document = load_graph(REFERENCE_GRAPH.read_bytes())
    assert graph_digest(document) == index_digest("agentGraphs", "product-delivery")
    # The unsigned example is the same graph: the same digest.
    assert graph_digest(load_graph(REFERENCE_EXAMPLE_GRAPH.read_bytes())) == graph_digest(document)
    reordered = {k: document[k] for k in sorted(document, reverse=True)}
    assert graph_digest(load_graph(json.dumps(reordered).encode())) == graph_digest(document)  # noqa: TID251


@pytest.mark.req("engram.graph.trust", "engram.graph.verify-publishable")
def test_portable_bare_and_trusted_with_a_registry() -> None:
    document = load_graph(REFERENCE_GRAPH.read_bytes())
    check = check_graph(document, now=NOW)
    assert check.ok
    assert check.verification.state is TrustState.PORTABLE
    integrity = document["integrity"]
    assert isinstance(integrity, dict)
    pem = integrity["publicKeyPem"]
    assert isinstance(pem, str)
    registry = load_trust_registry(registry_for(pem, "io.github.lboel"))
    assert verify_graph(document, registry=registry, now=NOW).state is TrustState.TRUSTED


@pytest.mark.req("engram.graph.signature-bindings")
def test_one_changed_byte_is_tampered() -> None:
    data = REFERENCE_GRAPH.read_bytes()
    changed = data.replace(b'"maxRounds": 2', b'"maxRounds": 3')
    assert changed != data
    verification = verify_graph(load_graph(changed), now=NOW)
    assert verification.state is TrustState.TAMPERED
    assert "digest mismatch" in verification.reason


@pytest.mark.req("engram.graph.workflow-resolution", "engram.graph.participant-aliases")
def test_the_pinned_reference_workflow_resolves_by_recomputed_digest() -> None:
    document = reference(REFERENCE_GRAPH)
    delivery = PinnedWorkflow(str(REFERENCE_CAL), load_workflow(REFERENCE_CAL.read_bytes()))
    issues = resolve_pins(document, [delivery], now=NOW)
    # research-council is not among the copied vectors: exactly that pin is unresolved.
    assert [(i.rule, i.path) for i in issues] == [
        ("engram.graph.workflow-resolution", "$.loops[0].workflowRef")
    ]
    document["loops"][0]["kind"] = "informal"
    del document["loops"][0]["workflowRef"]
    assert resolve_pins(document, [delivery], now=NOW) == []
    # A changed workflow under the same coordinate is a digest mismatch, never substituted.
    altered: dict[str, Any] = load_workflow(REFERENCE_CAL.read_bytes())
    altered["limits"]["maxSteps"] = 30
    resigned = sign_workflow(altered, KEY, publisher_id="io.github.lboel", signed_at=NOW)
    issues = resolve_pins(document, [PinnedWorkflow("altered", resigned)], now=NOW)
    assert [i.rule for i in issues] == ["engram.graph.workflow-resolution"]
    assert "not the pinned" in issues[0].message
    # Unverifiable copies (tampered) never resolve a pin.
    tampered = load_workflow(REFERENCE_CAL.read_bytes())
    tampered["name"] = "Ship it"
    issues = resolve_pins(document, [PinnedWorkflow("tampered", tampered)], now=NOW)
    assert "no verified workflow" in issues[0].message
    # Bound aliases must be the pinned workflow's participants.
    document["loops"][1]["actorBindings"][0]["participants"].append("ghost")
    issues = resolve_pins(document, [delivery], now=NOW)
    assert [i.rule for i in issues] == ["engram.graph.participant-aliases"]


def _signed() -> dict[str, Any]:
    return sign_graph(graph(), KEY, publisher_id="io.github.example", signed_at=NOW)


def _recount(member: str, value: int) -> Any:
    def tamper(document: dict[str, Any]) -> None:
        envelope = document["integrity"]["envelope"]
        statement = json.loads(base64.b64decode(envelope["payload"]))
        statement["predicate"][member] = value
        payload = json.dumps(statement).encode()  # noqa: TID251
        envelope["payload"] = base64.b64encode(payload).decode()
        sig = KEY.sign(pae(PAYLOAD_TYPE_IN_TOTO, payload))
        envelope["signatures"][0]["sig"] = base64.b64encode(sig).decode()

    return tamper


@pytest.mark.req("engram.graph.signature-bindings", "engram.graph.signature-format")
@pytest.mark.parametrize(
    "tamper",
    [
        _recount("actors", 4),
        _recount("knowledgeModules", 3),
        _recount("routes", 0),
        _recount("loops", 1),
        _recount("convergencePoints", 2),
        lambda d: d["routes"][0]["triggers"][0].update(events=["work.cancelled"]),
        lambda d: d["actors"][1].update(description="Someone else."),
        lambda d: d["integrity"].update(schemaVersion="acx.workflow-signature/1"),
        lambda d: d["integrity"].update(extra=True),
    ],
)
def test_counts_and_content_are_bound(tamper: Any) -> None:
    document = _signed()
    assert verify_graph(document, now=NOW).state is TrustState.PORTABLE
    tamper(document)
    assert verify_graph(document, now=NOW).state is TrustState.TAMPERED


@pytest.mark.req("engram.graph.signature-format")
def test_the_predicate_binds_identity_and_counts() -> None:
    integrity = _signed()["integrity"]
    assert integrity["schemaVersion"] == "acx.agent-graph-signature/1"
    statement = json.loads(base64.b64decode(integrity["envelope"]["payload"]))
    assert statement["subject"][0]["name"] == "urn:acx:agent-graph:small-team@0.3.0"
    assert statement["predicateType"] == "https://acx.dev/attestation/agent-graph/v1"
    predicate = statement["predicate"]
    assert {k: predicate[k] for k in ("actors", "knowledgeModules", "routes", "loops")} == {
        "actors": 3, "knowledgeModules": 4, "routes": 3, "loops": 2,
    }  # fmt: skip
    assert predicate["convergencePoints"] == 1
    assert predicate["agentGraphDigest"] == integrity["digest"]


@pytest.mark.req("engram.graph.sign-publishable", "engram.graph.verify-publishable")
def test_sign_and_verify_need_the_publishable_profile() -> None:
    unpinned = graph()
    del unpinned["loops"][0]["workflowRef"]["digest"]
    with pytest.raises(SignError, match="not publishable"):
        sign_graph(unpinned, KEY, publisher_id="io.github.example", signed_at=NOW)
    # A sound signature over a graph that is not publishable (signed around engram's own gate)
    # still fails verify.
    signed = _signed()
    signed["routes"][0]["to"] = ["builders", "lead"]
    forced = sign_document(
        AGENT_GRAPH, signed, KEY, publisher_id="io.github.example", signed_at=NOW
    )
    check = check_graph(forced, now=NOW)
    assert check.verification.state is TrustState.PORTABLE
    assert not check.ok
    assert "engram.graph.route-self" in check.lint.rules


@pytest.mark.req("engram.graph.signature-bindings")
def test_what_engram_signs_verifies_under_an_independent_verifier(tmp_path: Path) -> None:
    signed = _signed()
    path = tmp_path / "team.agent-graph.json"
    path.write_text(json.dumps(signed), encoding="utf-8")  # noqa: TID251
    result = node_verify(path, "agent-graph")
    assert result["signatureOk"] is True
    assert result["digest"] == result["integrityDigest"] == result["subjectDigest"]
    assert result["digest"] == result["predicateDigest"] == graph_digest(signed)
    assert result["keyid"] == result["integrityKeyid"] == result["signatureKeyid"]
    assert result["subjectName"] == result["expectedSubject"]
    assert result["predicateType"] == "https://acx.dev/attestation/agent-graph/v1"
    assert result["canonicalStatement"] is True
    reference_result = node_verify(REFERENCE_GRAPH, "agent-graph")
    assert reference_result["signatureOk"] is True
    assert reference_result["digest"] == index_digest("agentGraphs", "product-delivery")
    assert workflow_digest(workflow()) != result["digest"]
