"""engram.level: provable character levels as W3C VC 2.0 / Open Badges 3.0 credentials (SPEC §10).

Spec: lboel/acx@85f1358 SPEC.md §10 and §12 item 13; W3C Data Integrity EdDSA Cryptosuites v1.0
(eddsa-jcs-2022); W3C Bitstring Status List v1.0; Open Badges 3.0. engram's normative text is
docs/spec/acx-levels.md. Inputs are bytes and plain values (a ROM ``manifest_hash``, a publisher
id, public keys), so binding to an ``.acx`` file is one call into the cartridge reader:

- :func:`prove_level` issues (benchmark, solver seam, TrueSkill gate, evidence, ledger);
- :func:`verify_level` reports every check as a :class:`Finding`;
- :func:`add_proof` / :func:`verify_proof` are ``eddsa-jcs-2022``;
- :class:`StatusList`, :func:`status_list_credential`, :func:`set_entry`, :func:`check_status`
  are the Bitstring Status List.
"""

from engram.level._benchmark import (
    Benchmark,
    Task,
    demo_benchmark,
    load_benchmark,
    seal_benchmark,
)
from engram.level._credential import CONTEXT, level_credential
from engram.level._errors import LevelRefused, LevelUnverified, ProofInvalid, StatusCheckError
from engram.level._evidence import (
    TRAJECTORY_PREDICATE,
    Evidence,
    check_evidence,
    envelope_file_name,
    ni_uri,
)
from engram.level._fetch import MAX_FETCH_BYTES, fetch_location, pinned_fetch
from engram.level._issue import DEFAULT_COOLDOWN, DEFAULT_DRAW, Issuance, Verifier, prove_level
from engram.level._ledger import AttemptRow, Ledger
from engram.level._multikey import (
    base58btc_decode,
    digest_from_multibase,
    digest_multibase,
    private_from_multikey,
    private_multikey,
    public_from_multikey,
    public_multikey,
)
from engram.level._ob3 import Finding, published_schema
from engram.level._proof import (
    CRYPTOSUITE,
    KeyResolver,
    VerifiedProof,
    add_proof,
    did_document_resolver,
    did_key_resolver,
    hash_data,
    static_resolver,
    verify_proof,
)
from engram.level._rating import (
    MIN_GAMES,
    SIGMA_MAX,
    TIERS,
    Game,
    Gate,
    Rating,
    career_tier,
    environment,
    level_for,
    rate,
)
from engram.level._require import require_verified
from engram.level._solver import Attempt, CommandSolver, ReferenceSolver, Solver
from engram.level._status import (
    MIN_ENTRIES,
    Fetch,
    StatusList,
    StatusResult,
    check_status,
    set_entry,
    status_list_credential,
)
from engram.level._trust import issuer_key_published, registry_issuer_keys, self_issued
from engram.level._verify import EvidenceLookup, LevelReport, verify_level

__all__ = [
    "CONTEXT",
    "CRYPTOSUITE",
    "DEFAULT_COOLDOWN",
    "DEFAULT_DRAW",
    "MAX_FETCH_BYTES",
    "MIN_ENTRIES",
    "MIN_GAMES",
    "SIGMA_MAX",
    "TIERS",
    "TRAJECTORY_PREDICATE",
    "Attempt",
    "AttemptRow",
    "Benchmark",
    "CommandSolver",
    "Evidence",
    "EvidenceLookup",
    "Fetch",
    "Finding",
    "Game",
    "Gate",
    "Issuance",
    "KeyResolver",
    "Ledger",
    "LevelRefused",
    "LevelReport",
    "LevelUnverified",
    "ProofInvalid",
    "Rating",
    "ReferenceSolver",
    "Solver",
    "StatusCheckError",
    "StatusList",
    "StatusResult",
    "Task",
    "VerifiedProof",
    "Verifier",
    "add_proof",
    "base58btc_decode",
    "career_tier",
    "check_evidence",
    "check_status",
    "demo_benchmark",
    "did_document_resolver",
    "did_key_resolver",
    "digest_from_multibase",
    "digest_multibase",
    "envelope_file_name",
    "environment",
    "fetch_location",
    "hash_data",
    "issuer_key_published",
    "level_credential",
    "level_for",
    "load_benchmark",
    "ni_uri",
    "pinned_fetch",
    "private_from_multikey",
    "private_multikey",
    "prove_level",
    "public_from_multikey",
    "public_multikey",
    "published_schema",
    "rate",
    "registry_issuer_keys",
    "require_verified",
    "seal_benchmark",
    "self_issued",
    "set_entry",
    "static_resolver",
    "status_list_credential",
    "verify_level",
    "verify_proof",
]
