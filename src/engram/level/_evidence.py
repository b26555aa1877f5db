"""Evidence: each graded trajectory content-addressed and DSSE-signed as an in-toto Statement.

SPEC §10.1/§10.2 step 2 (lboel/acx@85f1358): "each full trajectory is content-addressed (sha256
multihash → ``acx:digestMultibase``), signed as a DSSE/in-toto envelope, and URL-linked in
``evidence[]``". The reference signs the bare trajectory JSON with ``payloadType``
``application/vnd.in-toto+json``, which is not an in-toto Statement; engram signs a Statement v1
(docs/spec/acx-levels.md §6):

- subject: ``{name: "trajectory/<task id>", digest: {sha256: <hex of the trajectory bytes>}}``;
- ``predicateType``: ``https://acx.dev/attestation/trajectory/v1``;
- predicate: benchmark id/version/digest, task, difficulty, passed, ROM digest, solver, and the
  trajectory itself (so the envelope alone is the whole evidence);
- the credential's ``evidence[]`` entry: ``id`` = ``ni:///sha-256;<b64url>`` of the trajectory
  (RFC 6920, content-addressed by construction), ``acx:digestMultibase`` = the sha2-256
  multihash, ``acx:dsseEnvelope`` = where the envelope is published (``<base><hex>.dsse.json``)
  or, without a base URL, its own ``ni:`` name.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

from engram.core.canonical import Json, JsonObject, canonicalize, parse_strict
from engram.core.dsse import (
    PAYLOAD_TYPE_IN_TOTO,
    in_toto_statement,
    load_in_toto_statement,
    sign_envelope,
    statement_subject,
    verify_envelope,
)
from engram.core.keys import PrivateKey, PublicKey
from engram.level._benchmark import Benchmark
from engram.level._multikey import digest_multibase
from engram.level._solver import Attempt

TRAJECTORY_PREDICATE = "https://acx.dev/attestation/trajectory/v1"


def ni_uri(digest: bytes) -> str:
    """RFC 6920 ``ni:///sha-256;<base64url>`` naming content by its SHA-256."""
    return "ni:///sha-256;" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class Evidence:
    task_id: str
    difficulty: float
    passed: bool
    trajectory_sha256: str
    envelope: JsonObject

    @property
    def envelope_bytes(self) -> bytes:
        return canonicalize(self.envelope)

    @property
    def envelope_sha256(self) -> str:
        return hashlib.sha256(self.envelope_bytes).hexdigest()

    @property
    def file_name(self) -> str:
        """The envelope's content-addressed file name in an evidence folder."""
        return f"{self.envelope_sha256}.dsse.json"

    def entry(self, base_url: str | None, benchmark: Benchmark) -> JsonObject:
        """The credential's ``evidence[]`` member linking this trajectory."""
        digest = bytes.fromhex(self.trajectory_sha256)
        link = (
            base_url + self.file_name if base_url else ni_uri(bytes.fromhex(self.envelope_sha256))
        )
        return {
            "id": ni_uri(digest),
            "type": ["Evidence"],
            "name": f"{benchmark.coordinate} {self.task_id}: {'pass' if self.passed else 'fail'}",
            "acx:digestMultibase": digest_multibase(digest),
            "acx:dsseEnvelope": link,
        }


def sign_trajectory(
    attempt: Attempt, *, benchmark: Benchmark, rom_digest: str, solver: str, key: PrivateKey
) -> Evidence:
    trajectory_hex = hashlib.sha256(attempt.trajectory).hexdigest()
    predicate = {
        "benchmarkId": benchmark.id,
        "benchmarkVersion": benchmark.version,
        "benchmarkDigest": benchmark.digest,
        "task": attempt.task.id,
        "difficulty": attempt.task.difficulty,
        "passed": attempt.passed,
        "romDigest": rom_digest,
        "solver": solver,
        "trajectory": parse_strict(attempt.trajectory),
    }
    statement = in_toto_statement(
        [statement_subject(f"trajectory/{attempt.task.id}", trajectory_hex)],
        TRAJECTORY_PREDICATE,
        predicate,
    )
    envelope = sign_envelope(canonicalize(statement), PAYLOAD_TYPE_IN_TOTO, key)
    return Evidence(
        attempt.task.id, attempt.task.difficulty, attempt.passed, trajectory_hex, envelope
    )


def envelope_file_name(link: str) -> str | None:
    """The evidence-folder file an ``acx:dsseEnvelope`` link names (``<hex>.dsse.json``).

    A ``ni:///sha-256;...`` link names the envelope by its digest; a URL names it by its last
    path segment, which engram writes as that same digest file name.
    """
    if link.startswith("ni:///sha-256;"):
        body = link[len("ni:///sha-256;") :]
        try:
            digest = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        except (ValueError, binascii.Error):
            return None
        return f"{digest.hex()}.dsse.json" if len(digest) == 32 else None
    name = link.rstrip("/").rsplit("/", 1)[-1]
    return name if name.endswith(".dsse.json") else None


@dataclass(frozen=True)
class CheckedEvidence:
    task: str
    difficulty: float
    passed: bool
    rom_digest: str
    benchmark_digest: str
    trajectory_sha256: str


def check_evidence(envelope: Mapping[str, Json], issuer_key: PublicKey) -> CheckedEvidence:
    """Verify one envelope by the issuer's key and read what it attests.

    Raises :class:`~engram.errors.VerificationError` subclasses or ``InvalidRequest``: a bad
    signature, a payload that is not an in-toto Statement v1 of the trajectory predicate, or a
    subject digest that is not the digest of the trajectory it carries.
    """
    verified = verify_envelope(
        envelope, {issuer_key.key_id: issuer_key}, expected_payload_type=PAYLOAD_TYPE_IN_TOTO
    )
    statement = load_in_toto_statement(verified.payload)
    if statement["predicateType"] != TRAJECTORY_PREDICATE:
        raise ValueError(f"predicateType {statement['predicateType']!r} is not a trajectory")
    predicate = statement["predicate"]
    trajectory_hex = hashlib.sha256(canonicalize(predicate["trajectory"])).hexdigest()
    if statement["subject"][0]["digest"].get("sha256") != trajectory_hex:
        raise ValueError("the Statement's subject digest is not the trajectory's")
    return CheckedEvidence(
        task=predicate["task"],
        difficulty=predicate["difficulty"],
        passed=predicate["passed"] is True,
        rom_digest=predicate["romDigest"],
        benchmark_digest=predicate["benchmarkDigest"],
        trajectory_sha256=trajectory_hex,
    )


__all__ = [
    "TRAJECTORY_PREDICATE",
    "CheckedEvidence",
    "Evidence",
    "check_evidence",
    "envelope_file_name",
    "ni_uri",
    "sign_trajectory",
]
