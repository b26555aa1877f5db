"""engram.integrations.langgraph's names for the tests: not public API.

How the store maps LangGraph namespaces to rings and manifests, for the tests.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.integrations.langgraph`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.integrations.langgraph._context import manifest_text, ring_id_for

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "manifest_text": "engram.integrations.langgraph._context",
    "ring_id_for": "engram.integrations.langgraph._context",
}

__all__ = [
    "manifest_text",
    "ring_id_for",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
