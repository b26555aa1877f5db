"""The ``engram`` command line: parse, call the public API, render, set the exit code.

Each command lives in a private module that attaches itself to the root group in ``_app``;
``_app.COMMAND_MODULES`` names the module of every command, which is imported only when the
command is used. Errors from the engram tree print one line (``error: <code>: <message>``) and
exit 2 for bad input, 1 otherwise; never a traceback (docs/spec/cli.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from engram.cli._app import (
    COMMAND_HELP,
    COMMAND_MODULES,
    SUBCOMMAND_HELP,
    SUBCOMMAND_MODULES,
    cli,
    main,
    run_cli,
)

if TYPE_CHECKING:
    from engram.cli._common import DATABASE_HELP, DATABASE_OPTS, TRUST_REGISTRY_HELP, token_option
    from engram.cli._db import discover_components
    from engram.cli._seat import seat_engine
    from engram.cli._serve_app import provider_app_with_mcp
    from engram.cli._serve_run import metrics_environment

__all__ = [
    "COMMAND_HELP",
    "COMMAND_MODULES",
    "DATABASE_HELP",
    "DATABASE_OPTS",
    "SUBCOMMAND_HELP",
    "SUBCOMMAND_MODULES",
    "TRUST_REGISTRY_HELP",
    "cli",
    "discover_components",
    "main",
    "metrics_environment",
    "provider_app_with_mcp",
    "run_cli",
    "seat_engine",
    "token_option",
]


# Command modules load only when their command runs (tests/cli/test_cli_lazy.py), so the hooks
# tests and embedders use from them resolve on first access (PEP 562), not at import time.
_LAZY = {
    "DATABASE_HELP": "engram.cli._common",
    "DATABASE_OPTS": "engram.cli._common",
    "TRUST_REGISTRY_HELP": "engram.cli._common",
    "token_option": "engram.cli._common",
    "discover_components": "engram.cli._db",
    "provider_app_with_mcp": "engram.cli._serve_app",
    "seat_engine": "engram.cli._seat",
    "metrics_environment": "engram.cli._serve_run",
}


def __getattr__(name: str) -> Any:  # PEP 562: the attribute's own type, known at run time
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
