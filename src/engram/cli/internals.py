"""engram.cli's names for other engram packages, benchmarks and tests: not public API.

The command tables, the shared option helpers and the provider app with MCP, for the docs
generators, the tests and the benchmarks. The command line's interface is its commands (docs/cli),
not Python.

They import them from here rather than from the private modules, so those modules can be rearranged
with one place to keep working. Nothing here is a stable API: names may change or go in any
release. Applications use ``engram.cli`` (its ``__all__``).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

if TYPE_CHECKING:
    from engram.cli._app import COMMAND_HELP, COMMAND_MODULES, SUBCOMMAND_HELP, SUBCOMMAND_MODULES
    from engram.cli._common import DATABASE_HELP, DATABASE_OPTS, TRUST_REGISTRY_HELP, token_option
    from engram.cli._db import discover_components
    from engram.cli._seat import SEAT_LOOKUP, seat_engine
    from engram.cli._serve_app import provider_app_with_mcp
    from engram.cli._serve_run import metrics_environment

# Bound on first use (engram.core.lazy), as the package's own names are: importing this module
# loads none of the modules it names.
_LAZY = {
    "COMMAND_HELP": "engram.cli._app",
    "COMMAND_MODULES": "engram.cli._app",
    "SUBCOMMAND_HELP": "engram.cli._app",
    "SUBCOMMAND_MODULES": "engram.cli._app",
    "DATABASE_HELP": "engram.cli._common",
    "DATABASE_OPTS": "engram.cli._common",
    "TRUST_REGISTRY_HELP": "engram.cli._common",
    "token_option": "engram.cli._common",
    "discover_components": "engram.cli._db",
    "SEAT_LOOKUP": "engram.cli._seat",
    "seat_engine": "engram.cli._seat",
    "provider_app_with_mcp": "engram.cli._serve_app",
    "metrics_environment": "engram.cli._serve_run",
}

__all__ = [
    "COMMAND_HELP",
    "COMMAND_MODULES",
    "DATABASE_HELP",
    "DATABASE_OPTS",
    "SEAT_LOOKUP",
    "SUBCOMMAND_HELP",
    "SUBCOMMAND_MODULES",
    "TRUST_REGISTRY_HELP",
    "discover_components",
    "metrics_environment",
    "provider_app_with_mcp",
    "seat_engine",
    "token_option",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
