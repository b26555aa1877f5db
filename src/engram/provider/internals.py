"""engram.provider's names for other engram packages, benchmarks and tests: not public API.

The middleware, the rate limiter, the proxy list parser and the signed-bytes helper, for the tests
and the benchmarks.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.provider`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.provider._auth import parse_trusted_proxies
    from engram.provider._limits import RateLimiter
    from engram.provider._middleware import ProviderMiddleware
    from engram.provider._signer import signed_bytes

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "parse_trusted_proxies": "engram.provider._auth",
    "RateLimiter": "engram.provider._limits",
    "ProviderMiddleware": "engram.provider._middleware",
    "signed_bytes": "engram.provider._signer",
}

__all__ = [
    "ProviderMiddleware",
    "RateLimiter",
    "parse_trusted_proxies",
    "signed_bytes",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
