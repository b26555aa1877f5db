"""``engram demo``: the demo subject (beliefs in every category, health and financial included)
and its all-permissions token, printed with the provider URL and curl lines to try.

``engram demo`` and ``engram serve --demo`` reuse one demo subject and one token per database.
The raw token is kept in a file only its owner can read (mode 0600; see :func:`token_file`),
and the text output names that file instead of printing the token, so a live token does not
land in a terminal scroll-back or beside the provider's access log; ``--json`` carries it for
scripts. docs/spec/context-model.md "The demo subject".
"""

from __future__ import annotations

import click

from engram.cli._app import cli
from engram.cli._common import DEFAULT_URL, cli_store, database_option, emit, json_option
from engram.cli._demo_subject import demo_summary, demo_text, open_demo
from engram.cli._settings import settings


@cli.command("demo")
@database_option
@json_option
@click.option("--url", default=None, help="Provider URL to print (default: $ENGRAM_PUBLIC_URL).")
def demo_command(database: str | None, as_json: bool, url: str | None) -> None:
    """Create the demo subject if absent; print its id, where its token is, and the URL."""
    base = (url or settings().public_url or DEFAULT_URL).rstrip("/")
    with cli_store(database) as store:
        demo, path = open_demo(store)
    emit(demo_summary(demo, path, base), as_json, demo_text(demo, path, base))


__all__ = ["demo_command"]
