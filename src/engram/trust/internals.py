"""engram.trust's names for other engram packages, benchmarks and tests: not public API.

The trust order, the GitHub OIDC issuer and the namespace-proof types, for the CLI and the tests.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.trust`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.trust._evaluate import TRUST_ORDER
    from engram.trust._registry import GITHUB_OIDC_ISSUER, NamespaceProof, ProofMethod

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "TRUST_ORDER": "engram.trust._evaluate",
    "GITHUB_OIDC_ISSUER": "engram.trust._registry",
    "NamespaceProof": "engram.trust._registry",
    "ProofMethod": "engram.trust._registry",
}

__all__ = [
    "GITHUB_OIDC_ISSUER",
    "TRUST_ORDER",
    "NamespaceProof",
    "ProofMethod",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
