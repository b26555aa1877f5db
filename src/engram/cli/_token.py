"""``engram token create|list|revoke``: bearer tokens for a subject (shown once, stored hashed).

``create`` prints the token alone on stdout (so ``TOKEN=$(engram token create ...)`` works) and
its token id, which ``revoke`` takes, on stderr; ``--json`` carries both.
"""

from __future__ import annotations

import click

from engram.cli._app import cli
from engram.cli._common import CLOCK, cli_store, database_option, emit, json_option, parse_ttl
from engram.context import Permission
from engram.core.clock import format_instant


@cli.group("token")
def token_group() -> None:
    """Bearer tokens bound to one subject and a set of permissions."""


@token_group.command("create")
@click.option("--subject", "subject_id", required=True, help="Subject id.")
@click.option(
    "--permissions",
    default="read,correct",
    show_default=True,
    help=f"Comma-separated: {', '.join(p.value for p in Permission)} (admin implies all; "
    "memory is for agents using the MCP memory tools at /mcp).",
)
@click.option("--ttl", default="30d", show_default=True, help="Lifetime: 3600, 15m, 12h, 30d.")
@click.option("--label", default="", help="A note to recognise the token by.")
@database_option
@json_option
def create_command(
    subject_id: str, permissions: str, ttl: str, label: str, database: str | None, as_json: bool
) -> None:
    """Create a token and print it; it cannot be shown again."""
    from engram.context import authenticate_token, issue_token

    lifetime = parse_ttl(ttl)
    with cli_store(database) as store:
        token = issue_token(store, CLOCK, subject_id, permissions.split(","), lifetime, label=label)
        # Only the token's hash is stored; reading it back gives the id `token revoke` needs.
        grant = authenticate_token(store, CLOCK, token)
    value = {
        "subject_id": subject_id,
        "token_id": grant.token_id,
        "token": token,
        "permissions": sorted(p.value for p in grant.permissions),
        "expires_at": format_instant(grant.expires_at),
    }
    emit(value, as_json, token)
    if not as_json:
        click.echo(
            f"token id {grant.token_id} (for `engram token revoke --subject {subject_id} "
            f"--token-id {grant.token_id}`); expires {value['expires_at']}; the token is shown "
            "only now",
            err=True,
        )


@token_group.command("list")
@click.option("--subject", "subject_id", required=True, help="Subject id.")
@database_option
@json_option
def list_command(subject_id: str, database: str | None, as_json: bool) -> None:
    """List a subject's tokens (ids and permissions; never the secret)."""
    from engram.context import list_tokens

    with cli_store(database) as store:
        tokens = list_tokens(store, subject_id)
    lines = [
        f"{t.token_id}  {','.join(sorted(p.value for p in t.permissions))}"
        f"  expires {format_instant(t.expires_at)}" + ("  revoked" if t.revoked_at else "")
        for t in tokens
    ]
    emit([t.to_wire() for t in tokens], as_json, "\n".join(lines) or "no tokens")


@token_group.command("revoke")
@click.option("--subject", "subject_id", required=True, help="Subject id.")
@click.option(
    "--token-id", required=True, help="Token id (printed by `token create`; `token list`)."
)
@database_option
def revoke_command(subject_id: str, token_id: str, database: str | None) -> None:
    """Revoke a token at once."""
    from engram.context import revoke_token

    with cli_store(database) as store:
        revoke_token(store, CLOCK, subject_id, token_id)
    click.echo(f"revoked {token_id}")


__all__ = ["token_group"]
