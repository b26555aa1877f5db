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

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

# Names bind on first use (engram.core.lazy): `engram cartridge level --help` and every other
# command's help import none of this package's modules (issue 33).
if TYPE_CHECKING:
    from engram.level._benchmark import (
        Benchmark,
        Task,
        demo_benchmark,
        load_benchmark,
        seal_benchmark,
    )
    from engram.level._credential import CONTEXT, level_credential
    from engram.level._defaults import DEFAULT_COOLDOWN, DEFAULT_DRAW, MIN_ENTRIES
    from engram.level._errors import LevelRefused, LevelUnverified, ProofInvalid, StatusCheckError
    from engram.level._evidence import (
        TRAJECTORY_PREDICATE,
        Evidence,
        check_evidence,
        envelope_file_name,
        ni_uri,
    )
    from engram.level._fetch import MAX_FETCH_BYTES, fetch_location, pinned_fetch
    from engram.level._issue import Issuance, Verifier, prove_level
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
    from engram.level._ob3 import Finding, finding_wire, published_schema
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
        Fetch,
        StatusList,
        StatusResult,
        check_status,
        set_entry,
        status_list_credential,
    )
    from engram.level._trust import issuer_key_published, registry_issuer_keys, self_issued
    from engram.level._verify import EvidenceLookup, LevelReport, verify_level

_LAZY: dict[str, str] = {
    "Benchmark": "engram.level._benchmark",
    "Task": "engram.level._benchmark",
    "demo_benchmark": "engram.level._benchmark",
    "load_benchmark": "engram.level._benchmark",
    "seal_benchmark": "engram.level._benchmark",
    "CONTEXT": "engram.level._credential",
    "level_credential": "engram.level._credential",
    "LevelRefused": "engram.level._errors",
    "LevelUnverified": "engram.level._errors",
    "ProofInvalid": "engram.level._errors",
    "StatusCheckError": "engram.level._errors",
    "TRAJECTORY_PREDICATE": "engram.level._evidence",
    "Evidence": "engram.level._evidence",
    "check_evidence": "engram.level._evidence",
    "envelope_file_name": "engram.level._evidence",
    "ni_uri": "engram.level._evidence",
    "MAX_FETCH_BYTES": "engram.level._fetch",
    "fetch_location": "engram.level._fetch",
    "pinned_fetch": "engram.level._fetch",
    "DEFAULT_COOLDOWN": "engram.level._defaults",
    "DEFAULT_DRAW": "engram.level._defaults",
    "Issuance": "engram.level._issue",
    "Verifier": "engram.level._issue",
    "prove_level": "engram.level._issue",
    "AttemptRow": "engram.level._ledger",
    "Ledger": "engram.level._ledger",
    "base58btc_decode": "engram.level._multikey",
    "digest_from_multibase": "engram.level._multikey",
    "digest_multibase": "engram.level._multikey",
    "private_from_multikey": "engram.level._multikey",
    "private_multikey": "engram.level._multikey",
    "public_from_multikey": "engram.level._multikey",
    "public_multikey": "engram.level._multikey",
    "Finding": "engram.level._ob3",
    "finding_wire": "engram.level._ob3",
    "published_schema": "engram.level._ob3",
    "CRYPTOSUITE": "engram.level._proof",
    "KeyResolver": "engram.level._proof",
    "VerifiedProof": "engram.level._proof",
    "add_proof": "engram.level._proof",
    "did_document_resolver": "engram.level._proof",
    "did_key_resolver": "engram.level._proof",
    "hash_data": "engram.level._proof",
    "static_resolver": "engram.level._proof",
    "verify_proof": "engram.level._proof",
    "MIN_GAMES": "engram.level._rating",
    "SIGMA_MAX": "engram.level._rating",
    "TIERS": "engram.level._rating",
    "Game": "engram.level._rating",
    "Gate": "engram.level._rating",
    "Rating": "engram.level._rating",
    "career_tier": "engram.level._rating",
    "environment": "engram.level._rating",
    "level_for": "engram.level._rating",
    "rate": "engram.level._rating",
    "require_verified": "engram.level._require",
    "Attempt": "engram.level._solver",
    "CommandSolver": "engram.level._solver",
    "ReferenceSolver": "engram.level._solver",
    "Solver": "engram.level._solver",
    "MIN_ENTRIES": "engram.level._defaults",
    "Fetch": "engram.level._status",
    "StatusList": "engram.level._status",
    "StatusResult": "engram.level._status",
    "check_status": "engram.level._status",
    "set_entry": "engram.level._status",
    "status_list_credential": "engram.level._status",
    "issuer_key_published": "engram.level._trust",
    "registry_issuer_keys": "engram.level._trust",
    "self_issued": "engram.level._trust",
    "EvidenceLookup": "engram.level._verify",
    "LevelReport": "engram.level._verify",
    "verify_level": "engram.level._verify",
}

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
    "finding_wire",
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

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
