"""The ``engram`` command line: parse, call the public API, render, set the exit code.

Each command group lives in its own private module that attaches itself to the root group in
``_app``; importing the module registers it. Errors from the engram tree print one line
(``error: <code>: <message>``) and exit 2 for bad input, 1 otherwise; never a traceback.
"""

from __future__ import annotations

# Command modules register on import; keep these sorted.
from engram.cli import _belief as _belief
from engram.cli import _canonicalize as _canonicalize
from engram.cli import _cartridge as _cartridge
from engram.cli import _chat as _chat
from engram.cli import _conformance as _conformance
from engram.cli import _context as _context
from engram.cli import _correction as _correction
from engram.cli import _db as _db
from engram.cli import _demo as _demo
from engram.cli import _keys as _keys
from engram.cli import _mcp as _mcp
from engram.cli import _memory as _memory
from engram.cli import _ote as _ote
from engram.cli import _review as _review
from engram.cli import _serve as _serve
from engram.cli import _subject as _subject
from engram.cli import _token as _token
from engram.cli._app import cli, main

__all__ = ["cli", "main"]
