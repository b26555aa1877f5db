"""engram.policy's names for other engram packages, benchmarks and tests: not public API.

The ROM and SAVE paths the CLI reads, the host-limit resolution on its own, the schema table and
the verification result type, for the CLI and the tests.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.policy`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.policy._document import POLICY_PATH, schema_for
    from engram.policy._evaluator import VerificationResult
    from engram.policy._limits import EffectiveLimits, effective_limits
    from engram.policy._overlay import OVERLAY_PATH

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "POLICY_PATH": "engram.policy._document",
    "schema_for": "engram.policy._document",
    "VerificationResult": "engram.policy._evaluator",
    "EffectiveLimits": "engram.policy._limits",
    "effective_limits": "engram.policy._limits",
    "OVERLAY_PATH": "engram.policy._overlay",
}

__all__ = [
    "OVERLAY_PATH",
    "POLICY_PATH",
    "EffectiveLimits",
    "VerificationResult",
    "effective_limits",
    "schema_for",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
