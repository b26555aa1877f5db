"""engram.conformance's names for other engram packages, benchmarks and tests: not public API.

The ledger's file name and witnesses, the recorder, the bundle's preimage and validation helpers
and the badge table, for the CLI's rendering and the tests.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.conformance`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.conformance._bundle import HostInfo, attestation_preimage, witness_sha256
    from engram.conformance._bundle_schema import UNSIGNED
    from engram.conformance._harness_judge import RUNTIME_WITNESSED
    from engram.conformance._ledger import LEDGER_FILE, validate_document
    from engram.conformance._provider_runner import PROVIDER_WITNESSED
    from engram.conformance._results import BADGES, Recorder, Row, tiers_of, totals, utf16_key
    from engram.conformance._verify import read_discovery

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "HostInfo": "engram.conformance._bundle",
    "attestation_preimage": "engram.conformance._bundle",
    "witness_sha256": "engram.conformance._bundle",
    "UNSIGNED": "engram.conformance._bundle_schema",
    "RUNTIME_WITNESSED": "engram.conformance._harness_judge",
    "LEDGER_FILE": "engram.conformance._ledger",
    "validate_document": "engram.conformance._ledger",
    "PROVIDER_WITNESSED": "engram.conformance._provider_runner",
    "BADGES": "engram.conformance._results",
    "Recorder": "engram.conformance._results",
    "Row": "engram.conformance._results",
    "tiers_of": "engram.conformance._results",
    "totals": "engram.conformance._results",
    "utf16_key": "engram.conformance._results",
    "read_discovery": "engram.conformance._verify",
}

__all__ = [
    "BADGES",
    "LEDGER_FILE",
    "PROVIDER_WITNESSED",
    "RUNTIME_WITNESSED",
    "UNSIGNED",
    "HostInfo",
    "Recorder",
    "Row",
    "attestation_preimage",
    "read_discovery",
    "tiers_of",
    "totals",
    "utf16_key",
    "validate_document",
    "witness_sha256",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
