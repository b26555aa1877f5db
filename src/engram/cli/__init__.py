"""The ``engram`` command line: parse, call the public API, render, set the exit code.

Each command lives in a private module that attaches itself to the root group in ``_app``;
``_app.COMMAND_MODULES`` names the module of every command, which is imported only when the
command is used. Errors from the engram tree print one line (``error: <code>: <message>``) and
exit 2 for bad input, 1 otherwise; never a traceback (docs/spec/cli.md).
"""

from __future__ import annotations

from engram.cli._app import cli, main

__all__ = ["cli", "main"]
