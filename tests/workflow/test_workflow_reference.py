"""The reference implementation's signed workflow, and engram's output under an independent check.

``ship-a-feature`` 1.0.0 was signed by lboel/acx (its bytes are in tests/vectors): engram must
lint it, recompute the digest its registry index records, verify it ``portable`` with no registry
and ``trusted`` with a hand-written one binding its publisher to the key it carries, call one
changed byte ``tampered`` and a reordered but equivalent document the same digest. Workflows
engram signs are checked by a Node script (npm canonicalize + WebCrypto Ed25519).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acx_json_kit import (
    NOW,
    REFERENCE_CAL,
    SCHEMAS,
    b64url,
    index_digest,
    node_verify,
    reference,
    registry_for,
    workflow,
)
from engram.core.keys import PrivateKey
from engram.trust import TrustState, load_trust_registry
from engram.workflow import (
    lint_workflow,
    load_workflow,
    sign_workflow,
    verify_workflow,
    workflow_digest,
)

PACKAGED = Path(__file__).resolve().parents[2] / "src/engram/workflow/schemas"


@pytest.mark.req("engram.workflow.schema")
def test_packaged_schemas_are_the_published_ones() -> None:
    for name in ("cal.schema.json", "cal-skillset.schema.json"):
        assert (PACKAGED / name).read_bytes() == (SCHEMAS / name).read_bytes()


@pytest.mark.req("engram.workflow.schema", "engram.workflow.publish-metadata")
def test_the_reference_workflow_lints_clean_for_publication() -> None:
    report = lint_workflow(load_workflow(REFERENCE_CAL.read_bytes()), publish=True)
    assert report.ok, [str(i) for i in report.issues]
    assert not report.issues


@pytest.mark.req("engram.workflow.digest")
def test_the_digest_is_the_one_the_registry_index_records() -> None:
    document: dict[str, Any] = load_workflow(REFERENCE_CAL.read_bytes())
    assert workflow_digest(document) == index_digest("workflows", "ship-a-feature")
    assert workflow_digest(document) == document["integrity"]["digest"]


@pytest.mark.req("engram.workflow.digest")
def test_reordered_members_and_whitespace_keep_the_digest() -> None:
    original = reference(REFERENCE_CAL)
    reordered = {k: original[k] for k in reversed(list(original))}
    reordered["nodes"] = [{k: n[k] for k in sorted(n, reverse=True)} for n in original["nodes"]]
    text = json.dumps(reordered, indent=7, ensure_ascii=True).encode()  # noqa: TID251
    document = load_workflow(text)
    assert workflow_digest(document) == original["integrity"]["digest"]
    assert verify_workflow(document, now=NOW).state is TrustState.PORTABLE


@pytest.mark.req("engram.workflow.trust", "engram.workflow.signature-bindings")
def test_the_reference_signature_is_portable_without_a_registry() -> None:
    verification = verify_workflow(load_workflow(REFERENCE_CAL.read_bytes()), now=NOW)
    assert verification.state is TrustState.PORTABLE
    assert verification.publisher_id == "io.github.lboel"
    assert "not in the trust registry" in verification.reason


@pytest.mark.req("engram.workflow.trust")
def test_the_reference_signature_is_trusted_with_a_registry_binding_its_key() -> None:
    document: dict[str, Any] = load_workflow(REFERENCE_CAL.read_bytes())
    pem = document["integrity"]["publicKeyPem"]
    registry = load_trust_registry(registry_for(pem, "io.github.lboel"))
    verification = verify_workflow(document, registry=registry, now=NOW)
    assert verification.state is TrustState.TRUSTED, verification.reason
    local = verify_workflow(
        document, registry=registry, now=NOW, local_keyids={verification.keyid or ""}
    )
    assert local.state is TrustState.LOCAL
    # The same key listed for another publisher proves nothing about io.github.lboel.
    other = load_trust_registry(registry_for(pem, "io.github.someone"))
    assert verify_workflow(document, registry=other, now=NOW).state is TrustState.PORTABLE
    compromised = load_trust_registry(
        registry_for(
            pem,
            "io.github.lboel",
            status="revoked",
            revokedAt="2026-08-01T00:00:00Z",
            revocationReason="key-compromise",
        )
    )
    assert verify_workflow(document, registry=compromised, now=NOW).state is TrustState.PORTABLE


@pytest.mark.req("engram.workflow.signature-bindings", "engram.workflow.strict-json")
def test_one_changed_byte_is_tampered() -> None:
    data = REFERENCE_CAL.read_bytes()
    at = data.index(b"Design the pipeline")
    changed = data[:at] + b"d" + data[at + 1 :]
    verification = verify_workflow(load_workflow(changed), now=NOW)
    assert verification.state is TrustState.TAMPERED
    assert "digest mismatch" in verification.reason
    # A byte that breaks I-JSON (a duplicate member) never reaches the verifier at all.
    duplicate = data.replace(b'"id": "ship-a-feature",', b'"id": "ship-a-feature", "id": "x",')
    with pytest.raises(Exception, match="duplicate_member"):
        load_workflow(duplicate)


@pytest.mark.req("engram.workflow.base64-alphabets")
def test_url_safe_base64_verifies_too() -> None:
    document = reference(REFERENCE_CAL)
    envelope = document["integrity"]["envelope"]
    envelope["payload"] = b64url(envelope["payload"])
    envelope["signatures"][0]["sig"] = b64url(envelope["signatures"][0]["sig"])
    assert "-" in envelope["signatures"][0]["sig"] or "_" in envelope["signatures"][0]["sig"]
    assert verify_workflow(document, now=NOW).state is TrustState.PORTABLE
    envelope["payload"] = envelope["payload"][:-2] + "!!"
    assert verify_workflow(document, now=NOW).state is TrustState.TAMPERED


@pytest.mark.req("engram.workflow.signature-bindings", "engram.workflow.signature-format")
def test_what_engram_signs_verifies_under_an_independent_verifier(tmp_path: Path) -> None:
    key = PrivateKey.generate()
    signed = sign_workflow(workflow(), key, publisher_id="io.github.example", signed_at=NOW)
    path = tmp_path / "signed.cal.json"
    path.write_text(json.dumps(signed, indent=2), encoding="utf-8")  # noqa: TID251
    result = node_verify(path, "workflow")
    assert result["signatureOk"] is True
    assert result["digest"] == result["integrityDigest"] == result["subjectDigest"]
    assert result["digest"] == result["predicateDigest"] == workflow_digest(signed)
    assert result["keyid"] == result["integrityKeyid"] == result["signatureKeyid"]
    assert result["subjectName"] == result["expectedSubject"]
    assert result["predicateType"] == "https://acx.dev/attestation/workflow/v1"
    assert result["statementType"] == "https://in-toto.io/Statement/v1"
    assert result["subjects"] == 1
    assert result["publisherId"] == result["integrityPublisherId"] == "io.github.example"
    assert result["signedAt"] == result["integritySignedAt"]
    assert result["canonicalStatement"] is True
    # And the reference's own signature, through the same independent path.
    reference_result = node_verify(REFERENCE_CAL, "workflow")
    assert reference_result["signatureOk"] is True
    assert reference_result["digest"] == index_digest("workflows", "ship-a-feature")
