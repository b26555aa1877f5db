"""engram.runtime's names for other engram packages, benchmarks and tests: not public API.

The document and key-list parsers and the signature check on their own, and the injected heading,
for the tests.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.runtime`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.runtime._prompt import CONTEXT_HEADING
    from engram.runtime._verify import parse_document, parse_key_list, verify_signed

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "CONTEXT_HEADING": "engram.runtime._prompt",
    "parse_document": "engram.runtime._verify",
    "parse_key_list": "engram.runtime._verify",
    "verify_signed": "engram.runtime._verify",
}

__all__ = [
    "CONTEXT_HEADING",
    "parse_document",
    "parse_key_list",
    "verify_signed",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
