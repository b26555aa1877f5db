"""``engram init | default-ote | ote check | migrate --rings``: seat manifests and ring ids.

engram.ote.v1 & MCP contract (Part V, Plate 03, §3.1), including "Ring ids cns init writes (S5
revision 3)". docs/spec/memory-manifest.md.
"""

from __future__ import annotations

from pathlib import Path

import click

from engram.cli._app import cli
from engram.cli._common import database_option, open_cli_store
from engram.core.jsonio import dumps_text
from engram.errors import InvalidRequest


@cli.command("default-ote")
def default_ote_command() -> None:
    """Print the built-in engram.ote.v1 seat manifest."""
    from engram.memory import default_manifest_text

    click.echo(default_manifest_text(), nl=False)


@cli.group("ote")
def ote_group() -> None:
    """Seat manifests (engram.ote.v1)."""


@ote_group.command("check")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True)
def ote_check_command(file: Path, as_json: bool) -> None:
    """Validate FILE; an error names the file, the key and what was expected."""
    from engram.memory import load_manifest

    spec = load_manifest(file)
    summary = {
        "file": str(file),
        "valid": True,
        "seat_id": spec.seat.seat_id,
        "mounts": [
            {
                "ring": m.ring,
                "ring_id": m.ring_id,
                "access": m.access,
                "budget_share_pct": m.budget_share_pct,
            }
            for m in spec.mounts
        ],
    }
    if as_json:
        click.echo(dumps_text(summary, indent=2))
        return
    rings = ", ".join(f"{m.ring}={m.ring_id}" for m in spec.mounts)
    click.echo(f"{file}: valid engram.ote.v1 ({spec.seat.seat_id}; {rings})")


@cli.command("init")
@click.option("--domain", default=None, help="Domain (default: from the directory name).")
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(),
    help="Repository directory (default: the working directory).",
)
@click.option("--json", "as_json", is_flag=True)
def init_command(domain: str | None, repo: Path, as_json: bool) -> None:
    """Write .engram/ote.toml for this repository (never rewrites an existing one)."""
    from engram.memory import init_repository

    result = init_repository(repo, domain)
    if as_json:
        click.echo(dumps_text(result.to_wire(), indent=2))
        return
    if not result.written:
        click.echo(
            f"{result.path} exists; left unchanged (M2 {result.m2_ring_id}, seat {result.seat_id})"
        )
        return
    click.echo(f"wrote {result.path}: seat {result.seat_id}, M2 {result.m2_ring_id}")
    if result.generated:
        click.echo(f"no commit yet: generated M2 id {result.m2_ring_id} (kept in the file)")


@cli.command("migrate")
@click.option("--rings", is_flag=True, help="Move canon:fleet memories to canon:shared.")
@click.option("--json", "as_json", is_flag=True)
@database_option
def migrate_command(rings: bool, as_json: bool, database: str | None) -> None:
    """Data migrations (schema migrations are `engram db migrate`)."""
    from engram.memory import migrate_rings

    if not rings:
        raise InvalidRequest("nothing to migrate: pass --rings")
    store = open_cli_store(database)
    try:
        result = migrate_rings(store)
    finally:
        store.close()
    if as_json:
        click.echo(dumps_text(result.to_wire(), indent=2))
    elif result.moved or result.merged:
        click.echo(
            f"moved {result.moved} memories from canon:fleet to canon:shared "
            f"({result.merged} merged into existing ones)"
        )
    else:
        click.echo("no canon:fleet memories: nothing to move")
