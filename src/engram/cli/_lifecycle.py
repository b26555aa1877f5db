"""``engram forget | restore | erase`` and ``engram memory history``: a memory's lifecycle.

Each command is one call of the memory engine (:func:`engram.memory.forget`, ``restore``,
``erase``, ``history``), acting for ``--subject`` when one is named, else for the seat
(docs/spec/memory-ownership.md). Who acted is recorded as ``cli:<login>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._app import cli
from engram.cli._common import database_option
from engram.cli._seat import actor, ote_option, seat_engine, subject_option
from engram.core.jsonio import dumps_text

if TYPE_CHECKING:  # the engine loads when a command runs, not for --help (issue 33)
    from engram.memory import LifecycleResult, MemoryHistory


def _report(results: list[LifecycleResult], as_json: bool, did: str, already: str) -> None:
    if as_json:
        click.echo(dumps_text([r.to_wire() for r in results], indent=2))
        return
    for r in results:
        if r.changed:
            click.echo(f"{did} {r.memory_id}")
        elif r.state == "erased" and r.action != "erase":
            click.echo(f"{r.memory_id} was erased: nothing to {r.action}")
        else:
            click.echo(f"{r.memory_id} {already}")


@cli.command("forget")
@click.argument("memory_ids", nargs=-1, required=True)
@click.option("--reason", default="", help="Why (kept in the memory's history).")
@click.option("--json", "as_json", is_flag=True)
@ote_option
@database_option
@subject_option
def forget_command(
    memory_ids: tuple[str, ...],
    reason: str,
    as_json: bool,
    ote: Path | None,
    database: str | None,
    subject: str | None,
) -> None:
    """Forget memories: out of recall, counts and exports until `engram restore`."""
    from engram.memory import forget

    with seat_engine(ote, database, subject=subject) as engine:
        results = forget(engine, list(memory_ids), actor=actor(), reason=reason)
    _report(results, as_json, "forgot", "was already forgotten")


@cli.command("restore")
@click.argument("memory_ids", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True)
@ote_option
@database_option
@subject_option
def restore_command(
    memory_ids: tuple[str, ...],
    as_json: bool,
    ote: Path | None,
    database: str | None,
    subject: str | None,
) -> None:
    """Bring forgotten memories back into recall."""
    from engram.memory import restore

    with seat_engine(ote, database, subject=subject) as engine:
        results = restore(engine, list(memory_ids), actor=actor())
    _report(results, as_json, "restored", "was not forgotten")


@cli.command("erase")
@click.argument("memory_ids", nargs=-1, required=True)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True)
@ote_option
@database_option
@subject_option
def erase_command(
    memory_ids: tuple[str, ...],
    yes: bool,
    as_json: bool,
    ote: Path | None,
    database: str | None,
    subject: str | None,
) -> None:
    """Erase memories for good: their words leave the database and the index; a tombstone
    (id, content hash) stays so an import cannot bring them back."""
    from engram.transfer import erase_memories

    if not yes:
        click.confirm(
            f"erase {len(memory_ids)} memory(ies) for good? This cannot be undone", abort=True
        )
    with seat_engine(ote, database, subject=subject) as engine:
        results = erase_memories(engine, list(memory_ids), actor=actor())
    _report(results, as_json, "erased", "was already erased")


@click.command("history")
@click.argument("memory_id")
@click.option("--json", "as_json", is_flag=True)
@ote_option
@database_option
@subject_option
def history_command(
    memory_id: str, as_json: bool, ote: Path | None, database: str | None, subject: str | None
) -> None:
    """A memory's history: recorded, outcomes, forgotten, restored, erased (who and when)."""
    from engram.memory import history

    with seat_engine(ote, database, subject=subject) as engine:
        found: MemoryHistory = history(engine, memory_id)
    if as_json:
        click.echo(dumps_text(found.to_wire(), indent=2))
        return
    click.echo(f"{found.memory_id}: {found.state}")
    for e in found.entries:
        detail = f" ({e.detail})" if e.detail else ""
        click.echo(f"  {e.at}  {e.event:<9} by {e.actor}{detail}")


__all__ = ["actor", "erase_command", "forget_command", "history_command", "restore_command"]
