"""engram.conformance: the requirement ledger, the provider runner, the runtime harness and
signed certification bundles (OpenWOP v2 Conformance applied to Engram v0.1 Conformance).

Probes speak HTTP with their own small client and never import ``engram.runtime``.
"""

from engram.conformance._bundle import HostInfo, build_bundle, witness_sha256
from engram.conformance._ledger import Ledger, Requirement, default_ledger_path, load_ledger
from engram.conformance._provider_runner import ProviderReport, ProviderRunOptions, run_provider
from engram.conformance._results import Recorder, Row, badge
from engram.conformance._verify import Outcome, VerifyReport, read_discovery, verify_bundle

__all__ = [
    "HostInfo",
    "Ledger",
    "Outcome",
    "ProviderReport",
    "ProviderRunOptions",
    "Recorder",
    "Requirement",
    "Row",
    "VerifyReport",
    "badge",
    "build_bundle",
    "default_ledger_path",
    "load_ledger",
    "read_discovery",
    "run_provider",
    "verify_bundle",
    "witness_sha256",
]
