"""engram.registry's names for other engram packages, benchmarks and tests: not public API.

The index file name, the lineage relations, the history and lineage gates on their own and the
problem renderers, for the CLI and the tests.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.registry`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.registry._documents import lineage_problems
    from engram.registry._history import history_problems
    from engram.registry._layout import ARTIFACTS, INDEX_FILE, ArtifactType
    from engram.registry._problems import problem_line, problem_wire
    from engram.registry._relations import RELATIONS
    from engram.registry._summaries import SUMMARIZE

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "lineage_problems": "engram.registry._documents",
    "history_problems": "engram.registry._history",
    "ARTIFACTS": "engram.registry._layout",
    "INDEX_FILE": "engram.registry._layout",
    "ArtifactType": "engram.registry._layout",
    "problem_line": "engram.registry._problems",
    "problem_wire": "engram.registry._problems",
    "RELATIONS": "engram.registry._relations",
    "SUMMARIZE": "engram.registry._summaries",
}

__all__ = [
    "ARTIFACTS",
    "INDEX_FILE",
    "RELATIONS",
    "SUMMARIZE",
    "ArtifactType",
    "history_problems",
    "lineage_problems",
    "problem_line",
    "problem_wire",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
