"""``engram context fetch``: fetch one export with the runtime SDK, verify it, print it.

The first thing a runtime author runs when debugging (Engram v0.1 conformance, runtime
requirements): it does exactly what a runtime does at session start - discovery, key list,
export, every check of docs/spec/runtime.md "Verification" - and prints the system prompt a
runtime would inject, or the whole verified export with ``--json``. Any failure is one line on
stderr (``error: <code>: <reason>``) and a non-zero exit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from engram.cli._app import cli
from engram.cli._common import token_option
from engram.core.jsonio import dumps_text

# The runtime client (httpx, the verifier) loads when a command fetches, not for --help (issue 33).
if TYPE_CHECKING:
    from engram.runtime import RuntimeConfig

PROVIDER_ENV = "ENGRAM_PROVIDER_URL"
TOKEN_ENV = "ENGRAM_TOKEN"  # noqa: S105 - the name of a variable, not a secret
RUNTIME_ID_ENV = "ENGRAM_RUNTIME_ID"
SCOPE_ENV = "ENGRAM_SCOPE"


def provider_options(command: click.decorators.FC) -> click.decorators.FC:
    """``--provider``, ``--token`` (or ``--token-file``), ``--scope``, ``--runtime-id`` (shared
    with ``engram chat``)."""
    for option in reversed(
        [
            click.option(
                "--provider",
                envvar=PROVIDER_ENV,
                required=True,
                metavar="URL",
                help=f"Engram provider base URL (default: ${PROVIDER_ENV}).",
            ),
            token_option(envvar=TOKEN_ENV, required=True, help="Bearer token for the subject"),
            click.option(
                "--scope",
                envvar=SCOPE_ENV,
                default=None,
                metavar="SCOPE",
                help=f"Ask for a scoped export (e.g. professional) instead of the full context "
                f"(default: ${SCOPE_ENV}).",
            ),
            click.option(
                "--runtime-id",
                envvar=RUNTIME_ID_ENV,
                default="engram-cli",
                show_default=True,
                help="This runtime's id, sent with corrections.",
            ),
        ]
    ):
        command = option(command)
    return command


def runtime_config(provider: str, token: str, scope: str | None, runtime_id: str) -> RuntimeConfig:
    from engram.runtime import RuntimeConfig

    return RuntimeConfig(provider_url=provider, token=token, scope=scope, runtime_id=runtime_id)


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


__all__ = ["context_group", "fetch_command", "provider_options", "runtime_config"]
