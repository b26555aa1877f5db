"""``engram canonicalize``: RFC 8785 bytes of a JSON document, refusing what I-JSON forbids."""

from __future__ import annotations

import sys
from typing import BinaryIO

import click

from engram.cli._app import cli
from engram.core.canonical import canonicalize, parse_strict


@cli.command("canonicalize")
@click.argument("source", type=click.File("rb"), default="-")
def canonicalize_command(source: BinaryIO) -> None:
    """Print the RFC 8785 canonical form of the JSON in SOURCE (a file, or - for stdin)."""
    data = source.read()
    out = canonicalize(parse_strict(data))
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
