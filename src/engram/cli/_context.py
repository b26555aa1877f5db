"""``engram context fetch``: fetch one export with the runtime SDK, verify it, print it.

The first thing a runtime author runs when debugging (Engram v0.1 conformance, runtime
requirements): it does exactly what a runtime does at session start - discovery, key list,
export, every check of docs/spec/runtime.md "Verification" - and prints the system prompt a
runtime would inject, or the whole verified export with ``--json``. Any failure is one line on
stderr (``error: <code>: <reason>``) and a non-zero exit.
"""

from __future__ import annotations

import click

from engram.cli._app import cli
from engram.cli._provider_client import provider_options, runtime_config
from engram.core.jsonio import dumps_text


@cli.group("context")
def context_group() -> None:
    """Engram context as a runtime sees it (fetch and verify)."""


@context_group.command("fetch")
@provider_options
@click.option("--json", "as_json", is_flag=True, help="Print the whole verified export as JSON.")
def fetch_command(
    provider: str, token: str, scope: str | None, runtime_id: str, as_json: bool
) -> None:
    """Fetch, verify and print one export (its system prompt, or all of it with --json)."""
    from engram.runtime import EngramClient

    with EngramClient(runtime_config(provider, token, scope, runtime_id)) as engram:
        view = engram.fetch()
    if as_json:
        click.echo(dumps_text(dict(view.export), indent=2))
    else:
        click.echo(view.system_prompt())


__all__ = ["context_group", "fetch_command"]
