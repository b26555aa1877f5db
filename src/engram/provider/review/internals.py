"""engram.provider.review's names for the provider and the tests: not public API.

The review routes the provider mounts, the page's content security policy and the link lifetime
cap, for the provider and the tests.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.provider.review`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.provider.review._html import CONTENT_SECURITY_POLICY
    from engram.provider.review._routes import review_routes
    from engram.provider.review._sessions import MAX_LINK_TTL

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "CONTENT_SECURITY_POLICY": "engram.provider.review._html",
    "review_routes": "engram.provider.review._routes",
    "MAX_LINK_TTL": "engram.provider.review._sessions",
}

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "MAX_LINK_TTL",
    "review_routes",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
