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
    from engram.level._benchmark import Benchmark, Task, demo_benchmark, load_benchmark
    from engram.level._errors import LevelRefused, LevelUnverified, ProofInvalid, StatusCheckError
    from engram.level._fetch import fetch_location
    from engram.level._issue import Issuance, Verifier, prove_level
    from engram.level._ledger import Ledger
    from engram.level._ob3 import Finding
    from engram.level._proof import KeyResolver, did_document_resolver, static_resolver
    from engram.level._require import require_verified
    from engram.level._solver import Attempt, CommandSolver, ReferenceSolver, Solver
    from engram.level._status import (
        Fetch,
        StatusList,
        check_status,
        set_entry,
        status_list_credential,
    )
    from engram.level._verify import LevelReport, verify_level

_LAZY: dict[str, str] = {
    "Benchmark": "engram.level._benchmark",
    "Task": "engram.level._benchmark",
    "demo_benchmark": "engram.level._benchmark",
    "load_benchmark": "engram.level._benchmark",
    "LevelRefused": "engram.level._errors",
    "LevelUnverified": "engram.level._errors",
    "ProofInvalid": "engram.level._errors",
    "StatusCheckError": "engram.level._errors",
    "fetch_location": "engram.level._fetch",
    "Issuance": "engram.level._issue",
    "Verifier": "engram.level._issue",
    "prove_level": "engram.level._issue",
    "Ledger": "engram.level._ledger",
    "Finding": "engram.level._ob3",
    "KeyResolver": "engram.level._proof",
    "did_document_resolver": "engram.level._proof",
    "static_resolver": "engram.level._proof",
    "require_verified": "engram.level._require",
    "Attempt": "engram.level._solver",
    "CommandSolver": "engram.level._solver",
    "ReferenceSolver": "engram.level._solver",
    "Solver": "engram.level._solver",
    "Fetch": "engram.level._status",
    "StatusList": "engram.level._status",
    "check_status": "engram.level._status",
    "set_entry": "engram.level._status",
    "status_list_credential": "engram.level._status",
    "LevelReport": "engram.level._verify",
    "verify_level": "engram.level._verify",
}

__all__ = [
    "Attempt",
    "Benchmark",
    "CommandSolver",
    "Fetch",
    "Finding",
    "Issuance",
    "KeyResolver",
    "Ledger",
    "LevelRefused",
    "LevelReport",
    "LevelUnverified",
    "ProofInvalid",
    "ReferenceSolver",
    "Solver",
    "StatusCheckError",
    "StatusList",
    "Task",
    "Verifier",
    "check_status",
    "demo_benchmark",
    "did_document_resolver",
    "fetch_location",
    "load_benchmark",
    "prove_level",
    "require_verified",
    "set_entry",
    "static_resolver",
    "status_list_credential",
    "verify_level",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
