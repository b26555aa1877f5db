"""The options of a command that reads a provider as a runtime does (``engram context fetch``,
``engram chat``): ``--provider``, ``--token`` (or ``--token-file``), ``--scope``,
``--runtime-id``, and the runtime SDK's configuration built from them. A shared CLI helper.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from engram.cli._common import token_option
from engram.cli._settings import PROVIDER_URL as PROVIDER_ENV
from engram.cli._settings import TOKEN as TOKEN_ENV
from engram.cli._settings import from_settings, given, setting_over_default

# The runtime client (httpx, the verifier) loads when a command fetches, not for --help (issue 33).
if TYPE_CHECKING:
    from engram.runtime import RuntimeConfig

DEFAULT_RUNTIME_ID = "engram-cli"
RUNTIME_ID_ENV = "ENGRAM_RUNTIME_ID"
SCOPE_ENV = "ENGRAM_SCOPE"


def provider_options(command: click.decorators.FC) -> click.decorators.FC:
    """``--provider``, ``--token`` (or ``--token-file``), ``--scope``, ``--runtime-id`` (shared
    with ``engram chat``)."""
    for option in reversed(
        [
            click.option(
                "--provider",
                default=from_settings(PROVIDER_ENV),
                required=True,
                callback=given,
                metavar="URL",
                help=f"Engram provider base URL (default: ${PROVIDER_ENV}).",
            ),
            token_option(envvar=TOKEN_ENV, required=True, help="Bearer token for the subject"),
            click.option(
                "--scope",
                default=from_settings(SCOPE_ENV),
                metavar="SCOPE",
                help=f"Ask for a scoped export (e.g. professional) instead of the full context "
                f"(default: ${SCOPE_ENV}).",
            ),
            click.option(
                "--runtime-id",
                default=DEFAULT_RUNTIME_ID,
                show_default=True,
                callback=setting_over_default(RUNTIME_ID_ENV),
                help="This runtime's id, sent with corrections.",
            ),
        ]
    ):
        command = option(command)
    return command


def runtime_config(provider: str, token: str, scope: str | None, runtime_id: str) -> RuntimeConfig:
    from engram.runtime import RuntimeConfig

    return RuntimeConfig(provider_url=provider, token=token, scope=scope, runtime_id=runtime_id)


__all__ = [
    "PROVIDER_ENV",
    "RUNTIME_ID_ENV",
    "SCOPE_ENV",
    "TOKEN_ENV",
    "provider_options",
    "runtime_config",
]
