"""engram.trust: the ACX public-keys-only trust registry and the §4.5 trust taxonomy.

Spec: lboel/acx@85f1358 SPEC.md §4.3-§4.5; our decisions are in docs/spec/acx-trust.md. Shared
by every ACX artifact that is signed (cartridges, workflows, Agent Graphs, level credentials):
load a registry with :func:`load_trust_registry`, let the artifact's verifier rule out
``tampered`` and ``legacy``, then ask :func:`evaluate_signer` whether the key that verified the
signature makes it ``portable``, ``trusted`` or ``local``.
"""

from engram.trust._evaluate import SignerTrust, TrustState, evaluate_signer
from engram.trust._registry import (
    KeyStatus,
    TrustedKey,
    TrustRegistry,
    TrustRegistryError,
    load_trust_registry,
)

__all__ = [
    "KeyStatus",
    "SignerTrust",
    "TrustRegistry",
    "TrustRegistryError",
    "TrustState",
    "TrustedKey",
    "evaluate_signer",
    "load_trust_registry",
]
