"""engram.conformance: the requirement ledger, the provider runner, the runtime harness and
signed certification bundles (OpenWOP v2 Conformance applied to Engram v0.1 Conformance).

Probes speak HTTP with their own small client and never import ``engram.runtime``.
"""

from engram.conformance._bundle import build_bundle
from engram.conformance._harness_judge import RuntimeReport, run_runtime
from engram.conformance._ledger import Ledger, Requirement, load_ledger
from engram.conformance._provider_runner import ProviderReport, ProviderRunOptions, run_provider
from engram.conformance._results import badge
from engram.conformance._verify import Outcome, VerifyReport, verify_bundle

__all__ = [
    "Ledger",
    "Outcome",
    "ProviderReport",
    "ProviderRunOptions",
    "Requirement",
    "RuntimeReport",
    "VerifyReport",
    "badge",
    "build_bundle",
    "load_ledger",
    "run_provider",
    "run_runtime",
    "verify_bundle",
]
