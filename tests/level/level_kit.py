"""Shared set-up for the level tests: vectors, a verifier, an issued credential, a status list."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from engram.core.canonical import canonicalize
from engram.core.keys import PrivateKey
from engram.level import (
    Issuance,
    Ledger,
    ReferenceSolver,
    Verifier,
    demo_benchmark,
    prove_level,
    set_entry,
    static_resolver,
    status_list_credential,
)
from engram.level.internals import add_proof, public_multikey

HERE = Path(__file__).resolve().parent
VECTORS = HERE.parent / "vectors"
W3C = VECTORS / "w3c-eddsa-jcs-2022"
REFERENCE = VECTORS / "acx-reference"
PROOF3_ROM = "sha256:1726cf1e6025c166e06dc839a5cbae6c900f0ffa3e0b1235be8b78e88ee09943"
ROM = "sha256:" + "5e" * 32
PUBLISHER = "io.github.alice"
SUBJECT = "urn:acx:cartridge:io.github.alice/git-helper@7f0c5b1e-0000-4000-8000-000000000001"
LIST_URL = "https://verifier.example.org/status/1"
NOW = datetime(2026, 7, 16, 12, 0, tzinfo=UTC)


@dataclass
class Issued:
    verifier: Verifier
    publisher_key: PrivateKey
    issuance: Issuance
    credential: dict[str, Any]
    status_list: dict[str, Any]
    ledger: Ledger

    def resolver(self) -> Any:
        return static_resolver({self.verifier.verification_method: self.verifier.key.public_key()})

    def fetch(self, url: str) -> bytes:
        assert url == LIST_URL
        return canonicalize(self.status_list)

    def revoked_list(self) -> dict[str, Any]:
        """The status list with this credential's bit set, re-signed."""
        index = int(self.credential["credentialStatus"]["statusListIndex"])
        return set_entry(
            self.status_list,
            index,
            self.verifier.key,
            verification_method=self.verifier.verification_method,
            created="2026-07-17T00:00:00Z",
        )

    def resign(self, credential: dict[str, Any]) -> dict[str, Any]:
        """``credential`` (edited) signed again by the verifier: a forgery with a valid proof."""
        unsigned = {k: v for k, v in credential.items() if k != "proof"}
        return add_proof(
            unsigned,
            self.verifier.key,
            verification_method=self.verifier.verification_method,
            created="2026-07-16T12:00:00Z",
        )

    def envelopes(self) -> dict[str, bytes]:
        return {e.file_name: e.envelope_bytes for e in self.issuance.evidence}


def issue(tmp_path: Path, *, competence: float = 33, rom: str = ROM) -> Issued:
    verifier = Verifier("did:web:verifier.example.org", PrivateKey.generate(), "Example verifier")
    publisher = PrivateKey.generate()
    ledger = Ledger(tmp_path / "ledger.sqlite")
    issuance = prove_level(
        rom_digest=rom,
        publisher_id=PUBLISHER,
        subject_id=SUBJECT,
        publisher_keyids=[publisher.public_key().key_id],
        benchmark=demo_benchmark(),
        solver=ReferenceSolver(competence),
        verifier=verifier,
        ledger=ledger,
        now=NOW,
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
    return Issued(verifier, publisher, issuance, issuance.credential, status, ledger)


def node_verify(
    tmp_path: Path, issued: Issued, credential: Any, status_list: Any | None = None
) -> dict[str, Any]:
    """Run Digital Bazaar's verifier (tests/level/verify.mjs) on ``credential``."""
    node = shutil.which("node")
    modules = HERE / "node_modules" / "@digitalbazaar" / "vc"
    if node is None or not modules.is_dir():
        reason = "node or tests/level/node_modules missing (run: scripts/node-tools)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason}; CI must run the independent verifier", pytrace=False)
        pytest.skip(reason)
    case = tmp_path / "case.json"
    case.write_text(
        json.dumps(  # noqa: TID251 - a test peer's own input file, not signed bytes
            {
                "credential": credential,
                "verificationMethod": issued.verifier.verification_method,
                "publicKeyMultibase": public_multikey(issued.verifier.key.public_key()),
                "statusList": status_list if status_list is not None else issued.status_list,
            }
        )
    )
    done = subprocess.run(
        [node, str(HERE / "verify.mjs"), str(case)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result
