"""``engram belief add|list|delete|history``: a subject's beliefs from the command line."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from engram.cli._app import cli
from engram.cli._common import CLOCK, cli_store, database_option, emit, json_option
from engram.context import CATEGORIES
from engram.core.clock import format_instant

if TYPE_CHECKING:
    from engram.context import EvolutionEntry


@cli.group("belief")
def belief_group() -> None:
    """Beliefs about a subject (categories: see `engram belief add --help`)."""


_subject = click.option("--subject", "subject_id", required=True, help="Subject id.")


@belief_group.command("add")
@_subject
@click.option("--category", required=True, type=click.Choice(CATEGORIES))
@click.option("--statement", required=True)
@click.option("--confidence", type=float, default=0.8, show_default=True)
@click.option("--source", default="cli", show_default=True)
@database_option
@json_option
def add_command(
    subject_id: str,
    category: str,
    statement: str,
    confidence: float,
    source: str,
    database: str | None,
    as_json: bool,
) -> None:
    """Add a belief (authoritative at once) and print its id."""
    from engram.context import add_belief

    with cli_store(database) as store:
        belief = add_belief(store, CLOCK, subject_id, category, statement, confidence, source)
    emit(belief.to_wire(), as_json, belief.id)


@belief_group.command("list")
@_subject
@database_option
@json_option
def list_command(subject_id: str, database: str | None, as_json: bool) -> None:
    """List the subject's live beliefs."""
    from engram.context import list_beliefs

    with cli_store(database) as store:
        beliefs = list_beliefs(store, subject_id)
    lines = [f"{b.id}  [{b.category}] {b.statement} ({b.confidence:.2f})" for b in beliefs]
    emit([b.to_wire() for b in beliefs], as_json, "\n".join(lines) or "no beliefs")


@belief_group.command("delete")
@_subject
@click.option("--belief", "belief_id", required=True, help="Belief id.")
@database_option
@json_option
def delete_command(subject_id: str, belief_id: str, database: str | None, as_json: bool) -> None:
    """Delete (tombstone) a belief; diffs report it as deleted."""
    from engram.context import delete_belief

    with cli_store(database) as store:
        tombstone = delete_belief(store, CLOCK, subject_id, belief_id)
    emit(tombstone.tombstone_wire(), as_json, f"deleted {tombstone.id}")


@belief_group.command("history")
@_subject
@click.option("--belief", "belief_id", required=True, help="Belief id.")
@database_option
@json_option
def history_command(subject_id: str, belief_id: str, database: str | None, as_json: bool) -> None:
    """Show a belief's evolution history, newest first."""
    from engram.context import belief_history

    with cli_store(database) as store:
        entries = belief_history(store, subject_id, belief_id)
    emit([e.to_wire() for e in entries], as_json, "\n".join(_history_line(e) for e in entries))


ERASED = "(text erased when the belief was deleted)"


def _history_line(entry: EvolutionEntry) -> str:
    """One change in words: a creation has no previous value, and a deleted belief's history
    keeps its shape but not its text, which would otherwise read ``None -> None``."""
    from engram.context import ChangeKind

    head = f"v{entry.version} {entry.kind.value} {format_instant(entry.at)}"
    if entry.kind is ChangeKind.DELETED:
        return f"{head} (every version's text erased)"
    by = f" (correction {entry.correction_id} from {entry.runtime_id})"
    by = by if entry.correction_id else ""
    if entry.value is None and entry.previous is None:
        return f"{head} {ERASED}{by}"
    if entry.kind is ChangeKind.CREATED:
        return f"{head}: {entry.value!r}"
    return f"{head}: {entry.previous!r} -> {entry.value!r}{by}"
