"""The ``engram`` command line: parse, call the public API, render, set the exit code.

Each command group lives in its own private module and is registered here. Errors from the
engram tree print one line (``error: <code>: <message>``) and exit 1 (2 for bad input);
no traceback reaches the user.
"""

from __future__ import annotations

import sys

import click

from engram import __version__
from engram.cli._app import run_cli

# Command groups register themselves on import; keep this list sorted.
from engram.cli import _canonicalize as _canonicalize  # noqa: F401  (registration)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="engram")
def cli() -> None:
    """engram: signed context for AI agents, a memory engine, MCP tools and cartridges."""


def main() -> None:
    sys.exit(run_cli(cli))


__all__ = ["cli", "main"]
