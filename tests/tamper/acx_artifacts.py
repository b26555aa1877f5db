"""The signed ACX JSON artifacts to tamper with, and each verifier's answer as a meaning.

Issue 15 ("Tests": "and later workflows, graphs, credentials"). Each artifact is a real signed
document: the reference implementation's own signed workflow and Agent Graph (copied under
tests/vectors/acx-reference), the same kinds signed by engram, a level credential engram issues
(VC 2.0, ``eddsa-jcs-2022``) and the Bitstring Status List credential it is revocable by.

A verifier *accepts* a document only when it reaches the verdict the original reached; the
meaning of an accepted document is what a relying party acts on:

- workflow / graph (``acx.workflow-signature/1`` / ``acx.agent-graph-signature/1``): the
  verdict, the JCS digest, the RFC 8785 bytes of the document less ``integrity``, and the
  signer (publisher, keyid, signing time) the signature vouches for. The integrity block's own
  spelling is not meaning: §4.2 lets a verifier read standard or URL-safe base64, padded or
  not, and the digest and Statement are recomputed from live content;
- level credential: RFC 8785 bytes of the whole credential (the proof covers all of it) and the
  verdicts (verified, trusted, revoked);
- status list credential: RFC 8785 bytes of the list credential and the bit the entry reads.

The trust registry (``acx.trust-registry/1``) is not signed (SPEC §4.4: a public-keys-only
document whose authority is where it is published), so it has no tamper suite here; its loader
is in the hostile-input suite instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acx_json_kit import (
    NOW,
    REFERENCE_CAL,
    REFERENCE_GRAPH,
    graph,
    registry_for,
    workflow,
)
from engram.core.canonical import canonicalize, parse_strict
from engram.core.keys import PrivateKey
from engram.graph import check_graph, load_graph, sign_graph
from engram.graph.internals import AGENT_GRAPH
from engram.level import (
    Ledger,
    ReferenceSolver,
    Verifier,
    check_status,
    demo_benchmark,
    prove_level,
    static_resolver,
    status_list_credential,
    verify_level,
)
from engram.level.internals import add_proof, envelope_file_name
from engram.trust import TrustRegistry, load_trust_registry
from engram.workflow import check_workflow, load_workflow, sign_workflow
from engram.workflow.internals import WORKFLOW, sign_document


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


Accept = Callable[[bytes], Any]
PUBLISHER = "io.github.example"


class Refused(Exception):
    """The verifier did not reach the original's verdict (a refusal, not a crash)."""


@dataclass(frozen=True)
class SignedJson:
    """A signed workflow or graph and the registry that makes it ``trusted``."""

    name: str
    data: bytes
    registry: TrustRegistry
    check: Callable[..., Any]
    load: Callable[..., Any]
    resign: Callable[[dict[str, Any]], bytes] | None = None
    """Sign an edited document again with the artifact's own key (engram-signed ones only)."""

    def accept(self, data: bytes) -> tuple[object, ...]:
        document = self.load(data)  # DocumentError (an engram error) refuses
        result = self.check(document, registry=self.registry, now=NOW)
        verification = result.verification
        if not result.ok or verification.verdict != "trusted":
            raise Refused(f"{verification.verdict}: {verification.reason}")
        body = {k: v for k, v in document.items() if k != "integrity"}
        return (
            verification.verdict,
            verification.digest,
            canonicalize(body),
            verification.publisher_id,
            verification.keyid,
            verification.signed_at,
        )


def _reference(name: str, path: Path, check: Callable[..., Any], load: Callable[..., Any]) -> Any:
    data = path.read_bytes()
    document = _parsed(data)
    pem = document["integrity"]["publicKeyPem"]
    registry = load_trust_registry(registry_for(pem, document["integrity"]["publisherId"]))
    return SignedJson(name, data, registry, check, load)


def _engram_signed(
    name: str, document: dict[str, Any], sign: Callable[..., Any], check: Any, load: Any
) -> SignedJson:
    key = PrivateKey.generate()
    signed = sign(document, key, publisher_id=PUBLISHER, signed_at=NOW)
    # Written as a publisher would write it (indented, members in document order), so the
    # mutations see real whitespace, escapes and numbers, not only the canonical form.
    data = json.dumps(signed, indent=2, ensure_ascii=False).encode()  # noqa: TID251
    pem = key.public_key().to_pem().decode("ascii")
    kind = AGENT_GRAPH if sign is sign_graph else WORKFLOW

    def resign(edited: dict[str, Any]) -> bytes:
        body = {k: v for k, v in edited.items() if k != "integrity"}
        again = sign_document(kind, body, key, publisher_id=PUBLISHER, signed_at=NOW)
        return json.dumps(again).encode()  # noqa: TID251

    registry = load_trust_registry(registry_for(pem, PUBLISHER))
    return SignedJson(name, data, registry, check, load, resign)


def signed_json_artifacts() -> list[SignedJson]:
    return [
        _reference("workflow (reference)", REFERENCE_CAL, check_workflow, load_workflow),
        _engram_signed(
            "workflow (engram)", workflow(), sign_workflow, check_workflow, load_workflow
        ),
        _reference("graph (reference)", REFERENCE_GRAPH, check_graph, load_graph),
        _engram_signed("graph (engram)", graph(), sign_graph, check_graph, load_graph),
    ]


# -- level credential and status list ---------------------------------------------------------

ROM = "sha256:" + "5e" * 32
LEVEL_PUBLISHER = "io.github.alice"
SUBJECT = "urn:acx:cartridge:io.github.alice/git-helper@7f0c5b1e-0000-4000-8000-000000000001"
LIST_URL = "https://verifier.example.org/status/1"
LEVEL_NOW = datetime(2026, 7, 16, 12, 0, tzinfo=UTC)


@dataclass
class Level:
    """An issued level credential, its status list, and how a relying party verifies both."""

    verifier: Verifier
    publisher_keyid: str
    credential: bytes
    status_list: bytes
    envelopes: dict[str, bytes]

    def _resolver(self) -> Any:
        return static_resolver({self.verifier.verification_method: self.verifier.key.public_key()})

    def accept_credential(self, data: bytes) -> tuple[object, ...]:
        report = verify_level(
            data,
            resolve=self._resolver(),
            now=LEVEL_NOW,
            rom_digest=ROM,
            publisher_id=LEVEL_PUBLISHER,
            publisher_keyids=[self.publisher_keyid],
            published_issuer_keys={self.verifier.key.public_key().key_id},
            status_fetch=lambda _url: self.status_list,
            evidence=lambda link: self.envelopes.get(envelope_file_name(link) or ""),
        )
        if not report.verified:
            raise Refused("; ".join(f.message for f in report.failures()[:2]))
        assert report.credential is not None
        return canonicalize(report.credential), report.verified, report.trusted, report.revoked

    def accept_status_list(self, data: bytes) -> tuple[object, ...]:
        entry = _parsed(self.credential)["credentialStatus"]
        result = check_status(  # StatusCheckError (an engram error) refuses
            entry,
            lambda _url: data,
            self._resolver(),
            now=LEVEL_NOW,
            expected_issuer=self.verifier.did,
        )
        return canonicalize(parse_strict(data)), result.purpose, result.index, result.status

    def resign(self, edited: dict[str, Any]) -> bytes:
        """``edited`` with a fresh proof by the verifier's own key (a validly signed edit)."""
        body = {k: v for k, v in edited.items() if k != "proof"}
        signed = add_proof(
            body,
            self.verifier.key,
            verification_method=self.verifier.verification_method,
            created="2026-07-16T12:00:00Z",
        )
        return json.dumps(signed).encode()  # noqa: TID251


def issue_level(tmp: Path) -> Level:
    """A level credential proved by the reference solver on the built-in benchmark."""
    verifier = Verifier("did:web:verifier.example.org", PrivateKey.generate(), "Example verifier")
    publisher = PrivateKey.generate()
    issuance = prove_level(
        rom_digest=ROM,
        publisher_id=LEVEL_PUBLISHER,
        subject_id=SUBJECT,
        publisher_keyids=[publisher.public_key().key_id],
        benchmark=demo_benchmark(),
        solver=ReferenceSolver(33),
        verifier=verifier,
        ledger=Ledger(tmp / "ledger.sqlite"),
        now=LEVEL_NOW,
        status_list_url=LIST_URL,
    )
    assert issuance.credential is not None
    status = add_proof(
        status_list_credential(
            list_id=LIST_URL, issuer=verifier.did, valid_from="2026-07-01T00:00:00Z"
        ),
        verifier.key,
        verification_method=verifier.verification_method,
        created="2026-07-01T00:00:00Z",
    )
    return Level(
        verifier,
        publisher.public_key().key_id,
        json.dumps(issuance.credential, indent=2).encode(),  # noqa: TID251 - as published
        json.dumps(status, indent=2).encode(),  # noqa: TID251
        {e.file_name: e.envelope_bytes for e in issuance.evidence},
    )


__all__ = ["Accept", "Level", "Refused", "SignedJson", "issue_level", "signed_json_artifacts"]
