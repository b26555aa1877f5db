"""§14.5: what the signature binds, and every way of re-pointing a binding is ``tampered``.

Tampered statements are re-signed with the very key the document carries, so the DSSE signature
itself holds and only the binding under test is wrong: each case shows the verifier checks that
binding, not merely the signature bytes.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from acx_json_kit import NOW, registry_for, workflow
from engram.core.dsse import PAYLOAD_TYPE_IN_TOTO, pae
from engram.core.keys import PrivateKey
from engram.trust import TrustState, load_trust_registry
from engram.workflow import SignError, sign_workflow, verify_workflow, workflow_digest

KEY = PrivateKey.generate()
PUBLISHER = "io.github.example"


def _signed() -> dict[str, Any]:
    return sign_workflow(workflow(), KEY, publisher_id=PUBLISHER, signed_at=NOW)


def _resign(document: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Edit the signed Statement, then sign it again with the same key (a sound signature)."""
    envelope = document["integrity"]["envelope"]
    statement = json.loads(base64.b64decode(envelope["payload"]))
    edit(statement)
    payload = json.dumps(statement).encode()  # noqa: TID251
    envelope["payload"] = base64.b64encode(payload).decode()
    signature = KEY.sign(pae(PAYLOAD_TYPE_IN_TOTO, payload))
    envelope["signatures"][0]["sig"] = base64.b64encode(signature).decode()
    return document


@pytest.mark.req("engram.workflow.signature-format")
def test_the_integrity_block_holds_exactly_the_published_members() -> None:
    integrity = _signed()["integrity"]
    assert set(integrity) == {
        "schemaVersion", "digest", "publisherId", "keyid", "publicKeyPem", "signedAt", "envelope",
    }  # fmt: skip
    assert integrity["schemaVersion"] == "acx.workflow-signature/1"
    assert integrity["publicKeyPem"].startswith("-----BEGIN PUBLIC KEY-----")
    assert integrity["envelope"]["payloadType"] == "application/vnd.in-toto+json"
    assert len(integrity["envelope"]["signatures"]) == 1
    statement = json.loads(base64.b64decode(integrity["envelope"]["payload"]))
    assert statement["subject"] == [
        {
            "name": "urn:acx:workflow:review-loop@1.2.0",
            "digest": {"sha256": integrity["digest"][7:]},
        }
    ]
    assert statement["predicate"] == {
        "acxSchemaVersion": "acx.cal/1",
        "workflowId": "review-loop",
        "workflowVersion": "1.2.0",
        "publisherId": PUBLISHER,
        "workflowDigest": integrity["digest"],
        "signedAt": integrity["signedAt"],
        "participants": 2,
        "nodes": 4,
    }
    assert "PRIVATE" not in json.dumps(_signed())  # noqa: TID251


@pytest.mark.req("engram.workflow.sign-publishable")
def test_sign_refuses_what_is_not_publishable() -> None:
    document = workflow()
    del document["license"]
    with pytest.raises(SignError, match="not publishable"):
        sign_workflow(document, KEY, publisher_id=PUBLISHER, signed_at=NOW)
    with pytest.raises(SignError, match="reverse-DNS"):
        sign_workflow(workflow(), KEY, publisher_id="Not A Publisher", signed_at=NOW)
    resigned: dict[str, Any] = sign_workflow(
        _signed(), PrivateKey.generate(), publisher_id="io.github.b", signed_at=NOW
    )
    assert resigned["integrity"]["publisherId"] == "io.github.b"
    assert verify_workflow(resigned, now=NOW).state is TrustState.PORTABLE


TAMPERING: list[tuple[str, Callable[[dict[str, Any]], object]]] = [
    ("task edited", lambda d: d["nodes"][0]["completion"].update(passIntent="anything")),
    ("condition edited", lambda d: d["edges"][2]["when"].update(value="nope")),
    ("slot edited", lambda d: d["participants"][0]["slot"].update(role="intern")),
    ("RAC edited", lambda d: d["rac"][0].update(description="Something else entirely.")),
    ("limit edited", lambda d: d["limits"].update(maxSteps=1000)),
    ("metadata edited", lambda d: d.update(name="Build, review and ship")),
    ("digest re-pointed", lambda d: d["integrity"].update(digest="sha256:" + "0" * 64)),
    (
        "other key",
        lambda d: d["integrity"].update(
            publicKeyPem=PrivateKey.generate().public_key().to_pem().decode()
        ),
    ),
    ("keyid mismatch", lambda d: d["integrity"].update(keyid="ed25519:" + "1" * 64)),
    (
        "envelope keyid mismatch",
        lambda d: d["integrity"]["envelope"]["signatures"][0].update(keyid="ed25519:" + "2" * 64),
    ),
    ("publisher re-claimed", lambda d: d["integrity"].update(publisherId="io.github.mallory")),
    ("signedAt re-dated", lambda d: d["integrity"].update(signedAt="2026-01-01T00:00:00Z")),
    ("signedAt not a date", lambda d: d["integrity"].update(signedAt="yesterday")),
    ("signature schema", lambda d: d["integrity"].update(schemaVersion="acx.workflow-signature/2")),
    ("extra member", lambda d: d["integrity"].update(note="hi")),
    ("private key", lambda d: d["integrity"].update(publicKeyPem=KEY.to_pem().decode())),
    (
        "second signature",
        lambda d: d["integrity"]["envelope"]["signatures"].append(
            dict(d["integrity"]["envelope"]["signatures"][0])
        ),
    ),
    ("payload type", lambda d: d["integrity"]["envelope"].update(payloadType="application/json")),
    (
        "bad signature",
        lambda d: d["integrity"]["envelope"]["signatures"][0].update(
            sig=base64.b64encode(b"\0" * 64).decode()
        ),
    ),
    (
        "subject name",
        lambda d: _resign(d, lambda s: s["subject"][0].update(name="urn:acx:workflow:other@1.2.0")),
    ),
    (
        "subject digest",
        lambda d: _resign(d, lambda s: s["subject"][0]["digest"].update(sha256="0" * 64)),
    ),
    (
        "two subjects",
        lambda d: _resign(d, lambda s: s["subject"].append(copy.deepcopy(s["subject"][0]))),
    ),
    (
        "predicate type",
        lambda d: _resign(
            d, lambda s: s.update(predicateType="https://acx.dev/attestation/cartridge/v1")
        ),
    ),
    (
        "statement type",
        lambda d: _resign(d, lambda s: s.update(_type="https://in-toto.io/Statement/v0.1")),
    ),
    ("predicate id", lambda d: _resign(d, lambda s: s["predicate"].update(workflowId="other"))),
    (
        "predicate version",
        lambda d: _resign(d, lambda s: s["predicate"].update(workflowVersion="9.9.9")),
    ),
    (
        "predicate publisher",
        lambda d: _resign(d, lambda s: s["predicate"].update(publisherId="io.github.mallory")),
    ),
    (
        "predicate signedAt",
        lambda d: _resign(d, lambda s: s["predicate"].update(signedAt="2020-01-01T00:00:00Z")),
    ),
    (
        "predicate digest",
        lambda d: _resign(d, lambda s: s["predicate"].update(workflowDigest="sha256:" + "0" * 64)),
    ),
    ("participant count", lambda d: _resign(d, lambda s: s["predicate"].update(participants=3))),
    ("node count as a flag", lambda d: _resign(d, lambda s: s["predicate"].update(nodes=True))),
    (
        "schema version",
        lambda d: _resign(d, lambda s: s["predicate"].update(acxSchemaVersion="acx.cal/2")),
    ),
    ("binding missing", lambda d: _resign(d, lambda s: s["predicate"].pop("nodes"))),
]


@pytest.mark.req("engram.workflow.signature-bindings", "engram.workflow.signature-format")
@pytest.mark.parametrize(("case", "tamper"), TAMPERING, ids=[c[0] for c in TAMPERING])
def test_every_binding_is_checked(case: str, tamper: Callable[[dict[str, Any]], object]) -> None:
    document = _signed()
    assert verify_workflow(document, now=NOW).state is TrustState.PORTABLE
    tamper(document)
    verification = verify_workflow(document, now=NOW)
    assert verification.state is TrustState.TAMPERED, (case, verification.reason)
    assert "BEGIN PRIVATE" not in verification.reason


@pytest.mark.req("engram.workflow.signature-bindings")
def test_extra_predicate_members_are_signed_data_not_tampering() -> None:
    document = _resign(_signed(), lambda s: s["predicate"].update({"com.example.note": "x"}))
    assert verify_workflow(document, now=NOW).state is TrustState.PORTABLE


@pytest.mark.req("engram.workflow.trust")
def test_unsigned_is_its_own_verdict() -> None:
    verification = verify_workflow(workflow(), now=NOW)
    assert verification.state is None
    assert verification.verdict == "unsigned"
    assert verification.digest == workflow_digest(workflow())


@pytest.mark.req("engram.workflow.trust")
def test_trust_follows_the_registry_lifecycle() -> None:
    document = _signed()
    pem = document["integrity"]["publicKeyPem"]
    cases = {
        "trusted": ({}, TrustState.TRUSTED),
        "expired": ({"notAfter": "2026-08-01T00:00:00Z"}, TrustState.PORTABLE),
        "not yet valid": ({"notBefore": "2026-10-01T00:00:00Z"}, TrustState.PORTABLE),
        "retired after signing": (
            {
                "status": "revoked",
                "revokedAt": "2026-12-01T00:00:00Z",
                "revocationReason": "retired",
            },
            TrustState.TRUSTED,
        ),
    }
    for name, (overrides, expected) in cases.items():
        registry = load_trust_registry(registry_for(pem, PUBLISHER, **overrides))
        assert verify_workflow(document, registry=registry, now=NOW).state is expected, name
