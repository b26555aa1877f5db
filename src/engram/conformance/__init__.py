"""engram.conformance: the requirement ledger, the provider runner, the runtime harness and
signed certification bundles (OpenWOP v2 Conformance applied to Engram v0.1 Conformance).

Probes speak HTTP with their own small client and never import ``engram.runtime``.
"""

from engram.conformance._bundle import HostInfo, attestation_preimage, build_bundle, witness_sha256
from engram.conformance._bundle_schema import UNSIGNED
from engram.conformance._harness_judge import RUNTIME_WITNESSED, RuntimeReport, run_runtime
from engram.conformance._ledger import (
    LEDGER_FILE,
    Ledger,
    Requirement,
    default_ledger_path,
    load_ledger,
    validate_document,
)
from engram.conformance._probe import TokenRefused
from engram.conformance._provider_runner import (
    PROVIDER_WITNESSED,
    ProviderReport,
    ProviderRunOptions,
    run_provider,
)
from engram.conformance._results import BADGES, Recorder, Row, badge, tiers_of, totals, utf16_key
from engram.conformance._verify import Outcome, VerifyReport, read_discovery, verify_bundle

__all__ = [
    "BADGES",
    "LEDGER_FILE",
    "PROVIDER_WITNESSED",
    "RUNTIME_WITNESSED",
    "UNSIGNED",
    "HostInfo",
    "Ledger",
    "Outcome",
    "ProviderReport",
    "ProviderRunOptions",
    "Recorder",
    "Requirement",
    "Row",
    "RuntimeReport",
    "TokenRefused",
    "VerifyReport",
    "attestation_preimage",
    "badge",
    "build_bundle",
    "default_ledger_path",
    "load_ledger",
    "read_discovery",
    "run_provider",
    "run_runtime",
    "tiers_of",
    "totals",
    "utf16_key",
    "validate_document",
    "verify_bundle",
    "witness_sha256",
]
