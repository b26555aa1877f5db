"""The ``engram`` command line: parse, call the public API, render, set the exit code.

Each command lives in a private module that attaches itself to the root group in ``_app``;
``_app.COMMAND_MODULES`` names the module of every command, which is imported only when the
command is used. Errors from the engram tree print one line (``error: <code>: <message>``) and
exit 2 for bad input, 1 otherwise; never a traceback (docs/spec/cli.md).
"""

from __future__ import annotations

from engram.cli._app import cli, main, run_cli

# The helpers tests and embedders reach (the command tables, option helpers, the provider app
# with MCP) are in engram.cli.internals, bound on first use there: command modules load only when
# their command runs (tests/cli/test_cli_lazy.py).

__all__ = ["cli", "main", "run_cli"]
