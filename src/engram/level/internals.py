"""engram.level's names for other engram packages, benchmarks and tests: not public API.

The issuance defaults the CLI offers, the Data Integrity proof functions, the Multikey codec, the
rating maths, the pinned fetcher and the credential schema, for the CLI, the transfer bridge and
the tests.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.level`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.level._benchmark import seal_benchmark
    from engram.level._defaults import DEFAULT_COOLDOWN, DEFAULT_DRAW, MIN_ENTRIES
    from engram.level._evidence import envelope_file_name
    from engram.level._fetch import MAX_FETCH_BYTES, pinned_fetch
    from engram.level._multikey import (
        base58btc_decode,
        private_from_multikey,
        public_from_multikey,
        public_multikey,
    )
    from engram.level._ob3 import finding_wire, published_schema
    from engram.level._proof import add_proof, did_key_resolver, hash_data, verify_proof
    from engram.level._rating import Game, Gate, career_tier, level_for, rate
    from engram.level._trust import registry_issuer_keys
    from engram.level._verify import EvidenceLookup

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "public_from_multikey": "engram.level._multikey",
    "public_multikey": "engram.level._multikey",
    "seal_benchmark": "engram.level._benchmark",
    "DEFAULT_COOLDOWN": "engram.level._defaults",
    "DEFAULT_DRAW": "engram.level._defaults",
    "MIN_ENTRIES": "engram.level._defaults",
    "envelope_file_name": "engram.level._evidence",
    "MAX_FETCH_BYTES": "engram.level._fetch",
    "pinned_fetch": "engram.level._fetch",
    "base58btc_decode": "engram.level._multikey",
    "private_from_multikey": "engram.level._multikey",
    "finding_wire": "engram.level._ob3",
    "published_schema": "engram.level._ob3",
    "add_proof": "engram.level._proof",
    "did_key_resolver": "engram.level._proof",
    "hash_data": "engram.level._proof",
    "verify_proof": "engram.level._proof",
    "Game": "engram.level._rating",
    "Gate": "engram.level._rating",
    "career_tier": "engram.level._rating",
    "level_for": "engram.level._rating",
    "rate": "engram.level._rating",
    "registry_issuer_keys": "engram.level._trust",
    "EvidenceLookup": "engram.level._verify",
}

__all__ = [
    "DEFAULT_COOLDOWN",
    "DEFAULT_DRAW",
    "MAX_FETCH_BYTES",
    "MIN_ENTRIES",
    "EvidenceLookup",
    "Game",
    "Gate",
    "add_proof",
    "base58btc_decode",
    "career_tier",
    "did_key_resolver",
    "envelope_file_name",
    "finding_wire",
    "hash_data",
    "level_for",
    "pinned_fetch",
    "private_from_multikey",
    "public_from_multikey",
    "public_multikey",
    "published_schema",
    "rate",
    "registry_issuer_keys",
    "seal_benchmark",
    "verify_proof",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
