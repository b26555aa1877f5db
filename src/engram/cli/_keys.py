"""``engram keys create|list|rotate|retire|export``: the signing keyring of one database.

docs/spec/storage.md "Signing keys"; the lifecycle is engram.core.keyring's (a retired key stays
published until the last thing it signed has expired). Output never contains a private key;
``export`` is the one way out and writes a 0600 PEM file. ``--database`` as everywhere
(``engram.cli._common``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import click

from engram.cli._app import cli
from engram.cli._common import CLOCK, cli_store, database_option, emit, json_option
from engram.cli._settings import settings
from engram.core.canonical import Json
from engram.core.clock import format_instant
from engram.core.keyring import KeyInfo
from engram.store.keys import DEFAULT_LIFETIME

lifetime_option = click.option(
    "--lifetime-days",
    type=click.IntRange(min=1, max=3650),
    default=DEFAULT_LIFETIME.days,
    show_default=True,
    help="Days until the new key stops signing.",
)


def _status(info: KeyInfo, now: datetime) -> str:
    status = info.status_at(now)  # next (published ahead), active, retired
    if status == "active" and not info.can_sign(now):
        return "expired"
    return status


def _wire(info: KeyInfo, now: datetime) -> dict[str, Json]:
    def instant(moment: datetime | None) -> str | None:
        return None if moment is None else format_instant(moment)

    return {
        "kid": info.kid,
        "alg": "Ed25519",
        "public_key": info.public_key.b64url,
        "status": _status(info, now),
        "created_at": instant(info.created_at),
        "expires_at": instant(info.expires_at),
        "signs_from": instant(info.first_signs),
        "retired_at": instant(info.retired_at),
        "published_until": instant(info.published_until),
        "published": info.is_published(now),
    }


def _line(info: KeyInfo, now: datetime) -> str:
    wire = _wire(info, now)
    until = wire["published_until"] or "-"
    return (
        f"{info.kid}  {wire['status']:<7}  created {wire['created_at']}  "
        f"expires {wire['expires_at']}  published_until {until}"
    )


def _show(infos: list[KeyInfo], now: datetime, as_json: bool, empty: str = "") -> None:
    lines = [_line(i, now) for i in infos]
    emit([_wire(i, now) for i in infos], as_json, lines or [empty])


@cli.group("keys")
def keys_group() -> None:
    """Signing keys: create, list, rotate, retire, export."""


@keys_group.command("create")
@database_option
@lifetime_option
@click.option("--kid", default=None, help="Key id (default: ed25519:<sha256 of the key>).")
@json_option
def create_command(
    database: str | None, lifetime_days: int, kid: str | None, as_json: bool
) -> None:
    """Generate a new signing key and store it in the database."""
    from engram.store.keys import KeyStore

    now = CLOCK.now()
    with cli_store(database) as store:
        info = KeyStore(store).create(now, timedelta(days=lifetime_days), kid=kid)
    _show([info], now, as_json)


@keys_group.command("list")
@database_option
@json_option
def list_command(database: str | None, as_json: bool) -> None:
    """List every key: kid, status, created/expires, published_until."""
    from engram.store.keys import KeyStore

    now = CLOCK.now()
    with cli_store(database) as store:
        infos = KeyStore(store).list()
    _show(infos, now, as_json, empty="no signing keys (engram keys create makes one)")


@keys_group.command("rotate")
@database_option
@lifetime_option
@click.option(
    "--immediately",
    is_flag=True,
    help="Sign with the new key at once (after a compromise) instead of publishing it for the "
    "key list's cache lifetime first ($ENGRAM_KEYS_MAX_AGE_SECONDS, default 300 s).",
)
@json_option
def rotate_command(
    database: str | None, lifetime_days: int, immediately: bool, as_json: bool
) -> None:
    """Publish a new key now; it signs once the key list's cache lifetime has passed, and the
    others retire then (they stay published while needed)."""
    from engram.store.keys import KeyStore

    now = CLOCK.now()
    from engram.provider import ProviderConfig  # starlette: only this command needs it (issue 33)

    lead = (
        timedelta(0)
        if immediately
        else ProviderConfig.from_env(settings().environ).key_publish_lead
    )
    with cli_store(database) as store:
        info = KeyStore(store).rotate(now, timedelta(days=lifetime_days), lead=lead)
    _show([info], now, as_json)


@keys_group.command("retire")
@click.argument("kid")
@database_option
@json_option
def retire_command(kid: str, database: str | None, as_json: bool) -> None:
    """Stop KID signing now; it stays published until what it signed has expired."""
    from engram.store.keys import KeyStore

    now = CLOCK.now()
    with cli_store(database) as store:
        info = KeyStore(store).retire(kid, now)
    _show([info], now, as_json)


@keys_group.command("export")
@click.argument("kid")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@database_option
def export_command(kid: str, path: Path, database: str | None) -> None:
    """Write the PRIVATE key of KID to PATH (PEM, mode 0600; never overwrites)."""
    from engram.store.keys import KeyStore

    with cli_store(database) as store:
        written = KeyStore(store).export_private_key(kid, path)
    click.echo(f"wrote the private key of {kid} to {written} (mode 0600)")


__all__ = ["keys_group"]
