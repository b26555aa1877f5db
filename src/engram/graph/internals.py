"""engram.graph's names for other engram packages, benchmarks and tests: not public API.

The card ``engram graph inspect`` prints, the knowledge-module reference and the artifact kind, for
the CLI and the tests.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.graph`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.graph._events import KnowledgeRef
    from engram.graph._graph import AGENT_GRAPH
    from engram.graph._render import graph_card

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "KnowledgeRef": "engram.graph._events",
    "AGENT_GRAPH": "engram.graph._graph",
    "graph_card": "engram.graph._render",
}

__all__ = [
    "AGENT_GRAPH",
    "KnowledgeRef",
    "graph_card",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
