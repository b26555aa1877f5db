"""``verify_level``: engram's credentials verify, forgeries do not, and the reference's departures
from Open Badges 3.0 and from its own schema are reported exactly (SPEC §10.1, §10.3)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from level_kit import NOW, PUBLISHER, REFERENCE, ROM, Issued, issue

from engram.core.canonical import canonicalize
from engram.level import LevelReport, static_resolver, verify_level
from engram.level.internals import envelope_file_name, published_schema, registry_issuer_keys
from engram.trust import load_trust_registry


def _verify(issued: Issued, credential: Any | None = None, **options: Any) -> LevelReport:
    data = canonicalize(credential if credential is not None else issued.credential)
    envelopes = issued.envelopes()
    defaults: dict[str, Any] = {
        "resolve": issued.resolver(),
        "now": NOW,
        "rom_digest": ROM,
        "publisher_id": PUBLISHER,
        "publisher_keyids": [issued.publisher_key.public_key().key_id],
        "published_issuer_keys": {issued.verifier.key.public_key().key_id},
        "status_fetch": issued.fetch,
        "evidence": lambda link: envelopes.get(envelope_file_name(link) or ""),
    }
    defaults.update(options)
    return verify_level(data, **defaults)


@pytest.fixture(scope="module")
def issued(tmp_path_factory: pytest.TempPathFactory) -> Issued:
    return issue(tmp_path_factory.mktemp("level"))


@pytest.mark.req("engram.level.credential-shape", "engram.level.evidence")
def test_engrams_credential_passes_every_check(issued: Issued) -> None:
    report = _verify(issued)
    assert report.verified, [f for f in report.findings if not f.ok]
    assert report.trusted is True
    assert report.revoked is False
    assert {f.check for f in report.findings if f.ok} == {
        "proof",
        "issuer",
        "self-issuance",
        "gate",
        "rom-binding",
        "status",
        "evidence",
    }
    assert not report.departures()


@pytest.mark.req("engram.level.credential-shape")
def test_engrams_credential_matches_the_published_schema_checked_independently(
    issued: Issued,
) -> None:
    # the published ACX schema, through jsonschema directly, with format checks on
    from jsonschema import FormatChecker

    validator = Draft202012Validator(published_schema(), format_checker=FormatChecker())
    assert not list(validator.iter_errors(issued.credential))
    credential = issued.credential
    achievement = credential["credentialSubject"]["achievement"]
    result = credential["credentialSubject"]["result"][0]
    tier_rd = achievement["resultDescription"][0]
    assert credential["id"].startswith("urn:uuid:")
    assert result["resultDescription"] == tier_rd["id"]
    assert result["achievedLevel"] in [lv["id"] for lv in tier_rd["rubricCriterionLevel"]]
    assert len(tier_rd["rubricCriterionLevel"]) == 8


REFERENCE_DEPARTURES = {
    ("acx-schema", "$.credentialSubject.result[0]['acx:ratingMu']"),
    ("acx-schema", "$.credentialSubject.result[0]['acx:ratingSigma']"),
    ("acx-schema", "$.evidence[0]['acx:dsseEnvelope']"),
    ("acx-schema", "$.evidence[0]['acx:digestMultibase']"),
    ("acx-schema", "$.evidence[1]"),
    ("ob3", "$.id"),
    ("ob3", "$.name"),
    ("ob3", "$.credentialSubject.achievement.description"),
    ("ob3", "$.credentialSubject.achievement.resultDescription[0].id"),
    ("ob3", "$.credentialSubject.achievement.resultDescription[0].rubricCriterionLevel"),
    ("ob3", "$.credentialSubject.achievement.resultDescription[1].id"),
    ("ob3", "$.credentialSubject.achievement.resultDescription[2].id"),
    ("ob3", "$.credentialSubject.result[0].achievedLevel"),
    ("ob3", "$.credentialSubject.result[0].resultDescription"),
    ("ob3", "$.evidence[1].type"),
}


@pytest.mark.req("engram.level.reports-departures")
@pytest.mark.parametrize(
    "name",
    ["proofs/level-credential.example.json", "examples/research-designer.level-attestation.json"],
)
def test_the_references_credential_is_described_exactly_not_accepted_or_crashed_on(
    name: str,
) -> None:
    data = (REFERENCE / name).read_bytes()
    report = verify_level(data, resolve=static_resolver({}), now=NOW)
    departures = {(f.check, f.path) for f in report.departures()}
    expected = (
        REFERENCE_DEPARTURES
        if name.startswith("proofs")
        else {d for d in REFERENCE_DEPARTURES if not d[1].startswith("$.evidence[1]")}
    )
    if name.startswith("examples"):
        count = len(json.loads(data)["evidence"])
        assert count > 2
    assert departures >= expected
    assert not report.verified
    proof = [f for f in report.findings if f.check == "proof"]
    assert proof[0].ok is False
    assert "did:web:verifier.acx.dev#key-1" in proof[0].message  # its issuer key is unpublished
    gate = [f for f in report.findings if f.check == "gate"]
    assert gate[0].ok is True  # the recorded rating itself is consistent (29, principal)


def _mutated(issued: Issued, path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    credential = copy.deepcopy(issued.credential)
    node = credential
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return credential


@pytest.mark.req("engram.level.rom-binding")
def test_a_level_cannot_be_transplanted_onto_another_rom(issued: Issued) -> None:
    report = _verify(issued, rom_digest="sha256:" + "00" * 32)
    assert [f.message for f in report.failures("rom-binding")] == ["ROM digest binding mismatch"]
    assert not report.verified


@pytest.mark.req("engram.level.eddsa-jcs-2022")
@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("credentialSubject", "result", 0, "acx:acxLevel"), 35),
        (("credentialSubject", "result", 0, "acx:cartridgeRomDigest"), "sha256:" + "11" * 32),
        (("issuer", "id"), "did:web:attacker.example"),
        (("validFrom",), "2026-07-16T12:00:01Z"),
    ],
)
def test_any_edit_breaks_the_proof(issued: Issued, path: tuple[Any, ...], value: Any) -> None:
    report = _verify(issued, _mutated(issued, path, value))
    assert report.failures("proof")
    assert not report.verified


@pytest.mark.req("engram.level.self-issuance")
def test_a_credential_issued_by_the_publishers_own_key_is_rejected(issued: Issued) -> None:
    report = _verify(issued, publisher_keyids=[issued.verifier.key.public_key().key_id])
    assert "self-issuance rejected (the issuer key is the publisher's key)" in [
        f.message for f in report.failures("self-issuance")
    ]
    unsigned = _mutated(issued, ("credentialSubject", "id"), issued.verifier.did)
    resigned = issued.resign(unsigned)
    report = _verify(issued, resigned)
    assert "self-issuance rejected (issuer == subject)" in [
        f.message for f in report.failures("self-issuance")
    ]


@pytest.mark.req("engram.level.issuer-published")
def test_an_issuer_key_missing_from_the_trust_registry_is_rejected(issued: Issued) -> None:
    report = _verify(issued, published_issuer_keys={"ed25519:" + "ab" * 32})
    assert report.trusted is False
    assert not report.verified
    unchecked = _verify(issued, published_issuer_keys=None)
    assert unchecked.trusted is None
    assert unchecked.verified  # authentic; its issuer's standing simply unknown


@pytest.mark.req("engram.level.status-fail-closed", "engram.level.revocation-irreversible")
def test_a_revoked_credential_is_reported_revoked(issued: Issued) -> None:
    revoked = issued.revoked_list()
    report = _verify(issued, status_fetch=lambda _url: canonicalize(revoked))
    assert report.revoked is True
    assert not report.verified

    def unreachable(_url: str) -> bytes:
        raise OSError("no route to host")

    report = _verify(issued, status_fetch=unreachable)
    assert report.revoked is None
    assert not report.verified
    assert "STATUS_RETRIEVAL_ERROR" in report.failures("status")[0].message


@pytest.mark.req("engram.level.trueskill-gate")
def test_a_rating_that_does_not_clear_the_gate_is_rejected_even_when_signed(issued: Issued) -> None:
    forged = _mutated(issued, ("credentialSubject", "result", 0, "acx:ratingSigma"), "2.25")
    signed = issued.resign(forged)
    report = _verify(issued, signed)
    messages = [f.message for f in report.failures("gate")]
    assert any("sigma 2.250 is not < 1.5" in m for m in messages)
    assert any("is not round(mu - 3 sigma)" in m for m in messages)
    assert report.failures("evidence")  # the trajectories replay to another sigma


@pytest.mark.req("engram.level.evidence")
def test_tampered_or_missing_evidence_is_reported(issued: Issued) -> None:
    envelopes = issued.envelopes()
    name = next(iter(envelopes))
    envelope = json.loads(envelopes[name])
    envelope["signatures"][0]["sig"] = "A" * 86 + "=="
    broken = {**envelopes, name: json.dumps(envelope).encode()}  # noqa: TID251
    report = _verify(issued, evidence=lambda link: broken.get(envelope_file_name(link) or ""))
    assert report.failures("evidence")
    report = _verify(issued, evidence=lambda _link: None)
    assert [f.ok for f in report.findings if f.check == "evidence"] == [None]


@pytest.mark.req("engram.level.reports-departures")
@pytest.mark.parametrize("data", [b"", b"[]", b'{"a":1,"a":2}', b"\xff"])
def test_garbage_is_reported_not_raised(data: bytes) -> None:
    report = verify_level(data, resolve=static_resolver({}), now=NOW)
    assert not report.verified
    assert report.findings[0].check == "json"


def _registry(issued: Issued, **overrides: Any) -> bytes:
    """A hand-written acx.trust-registry/1 publishing the verifier's key (stdlib JSON)."""
    key = issued.verifier.key.public_key()
    entry = {
        "keyid": key.key_id,
        "publisherId": "org.example.verifier",  # did:web:verifier.example.org, reversed
        "algorithm": "ed25519",
        "publicKeyPem": key.to_pem().decode(),
        "status": "active",
        "notBefore": "2026-01-01T00:00:00Z",
        "notAfter": "2027-01-01T00:00:00Z",
        "namespaceProof": {
            "method": "dns-txt",
            "txtRecord": "_acx-challenge.verifier.example.org",
            "verifiedAt": "2026-01-01T00:00:00Z",
        },
    }
    entry.update(overrides)
    document = {"schemaVersion": "acx.trust-registry/1", "keys": [entry]}
    return json.dumps(document).encode()  # noqa: TID251


@pytest.mark.req("engram.level.issuer-published")
@pytest.mark.parametrize(
    ("overrides", "trusted"),
    [
        ({}, True),
        (
            {
                "status": "revoked",
                "revokedAt": "2026-02-01T00:00:00Z",
                "revocationReason": "key-compromise",
            },
            False,
        ),
        ({"notAfter": "2026-03-01T00:00:00Z"}, False),
        (
            {
                "publisherId": "io.github.mallory",
                "namespaceProof": {
                    "method": "github-oidc",
                    "oidcSubject": "repo:mallory/x:ref:refs/heads/main",
                    "oidcIssuer": "https://token.actions.githubusercontent.com",
                    "verifiedAt": "2026-01-01T00:00:00Z",
                },
            },
            False,
        ),
    ],
)
def test_the_issuer_key_is_looked_up_in_the_acx_trust_registry(
    issued: Issued, overrides: dict[str, Any], trusted: bool
) -> None:
    registry = load_trust_registry(_registry(issued, **overrides))
    keys = registry_issuer_keys(registry, issuer_id=issued.verifier.did, signed_at=NOW, now=NOW)
    report = _verify(issued, published_issuer_keys=keys)
    assert report.trusted is trusted
    assert report.verified is trusted
