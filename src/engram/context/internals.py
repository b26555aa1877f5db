"""engram.context's names for other engram packages, benchmarks and tests: not public API.

What the provider and the CLI share to serve the protocol: token authentication with cached state,
scope resolution, permission checks, the export diff and state version, the injection text, the
demo subject, and the context cache.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.context`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.context._cache import ContextCache
    from engram.context._corrections import recent_decisions
    from engram.context._demo import ensure_demo, seed_demo
    from engram.context._export import ENGRAM_VERSION, build_diff, state_version
    from engram.context._injection import render_injection
    from engram.context._model import DemoSubject, TokenGrant
    from engram.context._registry import SCOPES, Scope, resolve_scope
    from engram.context._tokens import (
        authenticate_cached,
        authenticate_token_with_state,
        authorize,
        hash_token,
        require_permission,
    )
    from engram.context._validate import check_confidence

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "ContextCache": "engram.context._cache",
    "recent_decisions": "engram.context._corrections",
    "ensure_demo": "engram.context._demo",
    "seed_demo": "engram.context._demo",
    "ENGRAM_VERSION": "engram.context._export",
    "build_diff": "engram.context._export",
    "state_version": "engram.context._export",
    "render_injection": "engram.context._injection",
    "DemoSubject": "engram.context._model",
    "TokenGrant": "engram.context._model",
    "SCOPES": "engram.context._registry",
    "Scope": "engram.context._registry",
    "resolve_scope": "engram.context._registry",
    "authenticate_cached": "engram.context._tokens",
    "authenticate_token_with_state": "engram.context._tokens",
    "authorize": "engram.context._tokens",
    "hash_token": "engram.context._tokens",
    "require_permission": "engram.context._tokens",
    "check_confidence": "engram.context._validate",
}

__all__ = [
    "ENGRAM_VERSION",
    "SCOPES",
    "ContextCache",
    "DemoSubject",
    "Scope",
    "TokenGrant",
    "authenticate_cached",
    "authenticate_token_with_state",
    "authorize",
    "build_diff",
    "check_confidence",
    "ensure_demo",
    "hash_token",
    "recent_decisions",
    "render_injection",
    "require_permission",
    "resolve_scope",
    "seed_demo",
    "state_version",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
