"""Readiness with proven levels (issue 17 leftover; SPEC §14.2 ``minLevel``, §10, §17.6).

A slot's ``minLevel`` is met only by a level a credential proves that every check verified:
issued by a key the issuers' trust registry publishes, bound to the cartridge's ROM, its status
bit read and clear, its evidence replayed. Credentials here are issued by ``engram.level`` over
the reference cartridge's real ROM digest; the reference's own signed workflow asks for
``minLevel acxLevel 15`` for its builder.
"""

from __future__ import annotations

import copy
import json
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from acx_json_kit import NOW, REFERENCE_CAL, REFERENCE_CARTRIDGE
from engram.cli import cli, run_cli
from engram.core.canonical import canonicalize
from engram.core.keys import PrivateKey, save_private_key
from engram.level import (
    CommandSolver,
    Ledger,
    ReferenceSolver,
    Solver,
    Verifier,
    demo_benchmark,
    prove_level,
    set_entry,
    status_list_credential,
)
from engram.level.internals import add_proof, envelope_file_name
from engram.trust import TrustRegistry, TrustState, load_trust_registry
from engram.workflow import (
    CartridgeOffer,
    ProvenLevel,
    load_workflow,
    prove_levels,
    read_cartridge_offer,
    ready,
    verify_workflow,
)
from engram.workflow.internals import LevelCredential

DID = "did:web:verifier.example.org"
LIST_URL = "https://verifier.example.org/status/1"


def issuers_registry(key: PrivateKey) -> bytes:
    """A hand-written acx.trust-registry/1 publishing the verifier's key for its did:web."""
    public = key.public_key()
    entry = {
        "keyid": public.key_id,
        "publisherId": "org.example.verifier",  # did:web:verifier.example.org, reversed
        "algorithm": "ed25519",
        "publicKeyPem": public.to_pem().decode(),
        "status": "active",
        "notBefore": "2026-01-01T00:00:00Z",
        "notAfter": "2027-12-31T00:00:00Z",
        "namespaceProof": {
            "method": "dns-txt",
            "txtRecord": "_acx-challenge.verifier.example.org",
            "verifiedAt": "2026-01-01T00:00:00Z",
        },
    }
    return json.dumps({"schemaVersion": "acx.trust-registry/1", "keys": [entry]}).encode()  # noqa: TID251


# Reads the task (JSON on stdin) and succeeds on the easier ones: a cartridge of some skill, so the
# rating's uncertainty narrows (a solver that passes everything never clears the sigma gate).
SOLVES_EASY_TASKS = "import json, sys; sys.exit(json.load(sys.stdin)['difficulty'] > 33)"


class Issued:
    """A level credential for the reference cartridge, its status list and its evidence."""

    def __init__(self, tmp: Path, offer: CartridgeOffer, solver: Solver | None = None) -> None:
        self.verifier = Verifier(DID, PrivateKey.generate(), "Example verifier")
        issuance = prove_level(
            rom_digest=offer.rom_digest,
            publisher_id=offer.publisher_id,
            subject_id=f"urn:acx:cartridge:{offer.publisher_id}/{offer.artifact_id}",
            publisher_keyids=sorted(offer.publisher_keyids),
            benchmark=demo_benchmark(),
            # A real run (a program per task that solves the easier ones), not the demo
            # solver, whose levels never count (issue 32).
            solver=solver or CommandSolver([sys.executable, "-c", SOLVES_EASY_TASKS]),
            verifier=self.verifier,
            ledger=Ledger(tmp / "ledger.sqlite"),
            now=NOW,
            status_list_url=LIST_URL,
        )
        assert issuance.credential is not None
        self.credential: dict[str, Any] = issuance.credential
        self.envelopes = {e.file_name: e.envelope_bytes for e in issuance.evidence}
        self.status_list = add_proof(
            status_list_credential(list_id=LIST_URL, issuer=DID, valid_from="2026-07-01T00:00:00Z"),
            self.verifier.key,
            verification_method=self.verifier.verification_method,
            created="2026-07-01T00:00:00Z",
        )
        self.issuers: TrustRegistry = load_trust_registry(issuers_registry(self.verifier.key))

    def as_given(self, credential: dict[str, Any] | None = None) -> LevelCredential:
        data = canonicalize(credential if credential is not None else self.credential)
        return LevelCredential(
            "cred.json", data, lambda link: self.envelopes.get(envelope_file_name(link) or "")
        )

    def fetch(self, status_list: dict[str, Any] | None = None) -> Callable[[str], bytes]:
        return lambda _url: canonicalize(
            status_list if status_list is not None else self.status_list
        )

    def resign(self, credential: dict[str, Any]) -> dict[str, Any]:
        """An edited credential signed again by the verifier: a valid proof over other claims."""
        body = {k: v for k, v in credential.items() if k != "proof"}
        method = self.verifier.verification_method
        return add_proof(body, self.verifier.key, verification_method=method,
                         created="2026-09-01T00:00:00Z")  # fmt: skip

    def revoked(self) -> dict[str, Any]:
        index = int(self.credential["credentialStatus"]["statusListIndex"])
        return set_entry(self.status_list, index, self.verifier.key,
                         verification_method=self.verifier.verification_method,
                         created="2026-07-02T00:00:00Z")  # fmt: skip


@pytest.fixture(scope="module")
def ada() -> CartridgeOffer:
    offer = read_cartridge_offer(REFERENCE_CARTRIDGE, now=NOW)
    assert offer.trust is TrustState.PORTABLE
    assert offer.publisher_keyids  # the ROM signature's key, for the self-issuance check
    return offer


@pytest.fixture(scope="module")
def issued(ada: CartridgeOffer, tmp_path_factory: pytest.TempPathFactory) -> Issued:
    return Issued(tmp_path_factory.mktemp("level"), ada)


def _builder(offers: list[CartridgeOffer]) -> Any:
    document = load_workflow(REFERENCE_CAL.read_bytes())
    report = ready(document, offers, verification=verify_workflow(document, now=NOW))
    return {s.alias: s for s in report.staffing}["builder"]


@pytest.mark.req("engram.workflow.ready-level-credentials", "engram.workflow.ready-level-proven")
def test_a_verified_credential_proves_the_level_that_staffs_the_slot(
    ada: CartridgeOffer, issued: Issued
) -> None:
    assert _builder([ada]).selected is None  # no credential: the declared level never counts
    offers, outcomes = prove_levels(
        [ada], [issued.as_given()], issuers=issued.issuers, now=NOW, status_fetch=issued.fetch()
    )
    (outcome,) = outcomes
    result = issued.credential["credentialSubject"]["result"][0]
    assert outcome.counts, outcome.reason
    assert outcome.level == ProvenLevel(result["acx:acxLevel"], result["acx:careerTier"])
    assert outcome.level.acx_level >= 15
    assert offers[0].level == outcome.level
    assert _builder(offers).selected == offers[0]


@pytest.mark.req("engram.workflow.ready-level-proven", "engram.level.simulated-says-so")
def test_a_demo_level_never_counts(ada: CartridgeOffer, tmp_path: Path) -> None:
    # Issue 32: a level the built-in simulated solver played verified, so `workflow ready`
    # staffed a slot with it although nothing from the cartridge ever ran.
    demo = Issued(tmp_path, ada, ReferenceSolver(33))
    assert demo.credential["credentialSubject"]["result"][0]["acx:acxLevel"] >= 15
    offers, outcomes = prove_levels(
        [ada], [demo.as_given()], issuers=demo.issuers, now=NOW, status_fetch=demo.fetch()
    )
    (outcome,) = outcomes
    assert not outcome.counts
    assert outcome.level is None
    assert "demo level" in outcome.reason
    assert offers[0].level is None
    assert _builder(offers).selected is None


def _edited(issued: Issued, edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    credential: dict[str, Any] = copy.deepcopy(issued.credential)
    edit(credential)
    return credential


def _raise(_url: str) -> bytes:
    raise OSError("unreachable")


CASES: dict[str, tuple[Callable[[Issued], dict[str, Any]], str]] = {
    # case: (keyword arguments for prove_levels' inputs, the reason must say)
    "revoked": (lambda i: {"status_fetch": i.fetch(i.revoked())}, "revoked"),
    "status list unreachable": (lambda _: {"status_fetch": _raise}, "STATUS_RETRIEVAL_ERROR"),
    "status not dereferenced": (lambda _: {"status_fetch": None}, "status"),
    "issuer's registry key is another key": (
        lambda _: {"issuers": load_trust_registry(issuers_registry(PrivateKey.generate()))},
        "does not verify",
    ),
    "issuer absent from the registry": (
        lambda _: {"issuers": TrustRegistry.empty()},
        "no trusted key",
    ),
    "level edited after signing": (
        lambda i: {
            "credential": _edited(
                i, lambda c: c["credentialSubject"]["result"][0].update({"acx:acxLevel": 40})
            )
        },
        "proof",
    ),
    "another ROM": (
        lambda i: {
            "credential": i.resign(
                _edited(
                    i,
                    lambda c: c["credentialSubject"]["result"][0].update(
                        {"acx:cartridgeRomDigest": "sha256:" + "0" * 64}
                    ),
                )
            )
        },
        "no usable cartridge",
    ),
    "evidence unavailable": (lambda _: {"evidence": None}, "evidence"),
    "issuer key expired": (lambda _: {"now": NOW + timedelta(days=3650)}, "no trusted key"),
}


@pytest.mark.req("engram.workflow.ready-level-credentials")
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_unverifiable_or_revoked_credential_never_counts(
    case: str, ada: CartridgeOffer, issued: Issued
) -> None:
    make, says = CASES[case]
    given = make(issued)
    credential = issued.as_given(given.get("credential"))
    if "evidence" in given:
        credential = replace(credential, evidence=given["evidence"])
    offers, (outcome,) = prove_levels(
        [ada],
        [credential],
        issuers=given.get("issuers", issued.issuers),
        now=given.get("now", NOW),
        status_fetch=given.get("status_fetch", issued.fetch()),
    )
    assert not outcome.counts
    assert outcome.level is None
    assert says in outcome.reason, outcome.reason
    assert offers[0].level is None
    assert _builder(offers).selected is None


@pytest.mark.req("engram.workflow.ready-level-credentials")
def test_a_tampered_cartridge_is_never_given_a_level(ada: CartridgeOffer, issued: Issued) -> None:
    tampered = replace(ada, trust=TrustState.TAMPERED)
    offers, (outcome,) = prove_levels(
        [tampered],
        [issued.as_given()],
        issuers=issued.issuers,
        now=NOW,
        status_fetch=issued.fetch(),
    )
    assert offers[0].level is None
    assert "no usable cartridge" in outcome.reason


@pytest.mark.req("engram.workflow.ready-level-credentials", "engram.workflow.cli")
def test_ready_takes_credentials_and_issuers_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    roster, creds = tmp_path / "roster", tmp_path / "credentials"
    roster.mkdir()
    shutil.copyfile(REFERENCE_CARTRIDGE, roster / "ada.acx")
    key = PrivateKey.generate()
    save_private_key(tmp_path / "verifier.pem", key)
    (tmp_path / "issuers.json").write_bytes(issuers_registry(key))
    status = tmp_path / "status.json"
    level, pem = ["cartridge", "level"], str(tmp_path / "verifier.pem")
    cred = str(creds / "ada.level.json")
    assert run_cli(cli, [*level, "status-list", "--id", LIST_URL, "--issuer", DID,
                         "--key", pem, "-o", str(status)]) == 0  # fmt: skip
    solver = shlex.join([sys.executable, "-c", SOLVES_EASY_TASKS])  # a real run, not a demo
    assert run_cli(cli, [*level, "prove", "--solver", solver, str(REFERENCE_CARTRIDGE),
                         "--verifier-key", pem,
                         "--verifier-did", DID, "--status-list-url", LIST_URL,
                         "--ledger", str(tmp_path / "l.sqlite"), "--evidence-dir", str(creds),
                         "-o", cred]) == 0  # fmt: skip
    ready_args = ["workflow", "ready", str(REFERENCE_CAL), "--cartridges", str(roster),
                  "--credentials", str(creds), "--issuers", str(tmp_path / "issuers.json"),
                  "--status-list", str(status), "--json"]  # fmt: skip
    capsys.readouterr()
    run_cli(cli, ready_args)
    report = json.loads(capsys.readouterr().out)
    (outcome,) = report["levels"]
    assert outcome["counts"], outcome
    builder = {s["alias"]: s for s in report["staffing"]}["builder"]
    assert builder["selected"]["provenLevel"] == outcome["provenLevel"]
    # Revoked: the same credential no longer counts and the builder seat is empty again.
    assert run_cli(cli, [*level, "revoke", str(status), "--credential", cred, "--key", pem]) == 0
    capsys.readouterr()
    assert run_cli(cli, ready_args) == 1
    report = json.loads(capsys.readouterr().out)
    assert not report["levels"][0]["counts"]
    assert "revoked" in report["levels"][0]["reason"]
    assert {s["alias"]: s for s in report["staffing"]}["builder"]["selected"] is None
    # --credentials without --issuers is a usage error: no issuer, no proven level.
    assert run_cli(cli, ready_args[:6]) == 2
