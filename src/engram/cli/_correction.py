"""``engram correction list|confirm|reject``: the subject decides on runtimes' corrections."""

from __future__ import annotations

import click

from engram.cli._app import cli
from engram.cli._common import CLOCK, cli_store, database_option, emit, json_option
from engram.context import CorrectionStatus

_subject = click.option("--subject", "subject_id", required=True, help="Subject id.")


@cli.group("correction")
def correction_group() -> None:
    """Corrections proposed by runtimes; nothing changes until the subject confirms."""


@correction_group.command("list")
@_subject
@click.option(
    "--status",
    type=click.Choice([s.value for s in CorrectionStatus]),
    default=None,
    help="Only corrections with this status (default: all).",
)
@database_option
@json_option
def list_command(subject_id: str, status: str | None, database: str | None, as_json: bool) -> None:
    """List corrections, newest first."""
    from engram.context import list_corrections

    with cli_store(database) as store:
        wanted = None if status is None else CorrectionStatus(status)
        items = list_corrections(store, subject_id, wanted)
    lines = [
        f"{c.id}  {c.status.value}  belief {c.belief_id}: {c.new_value!r} (from {c.runtime_id})"
        for c in items
    ]
    emit([c.to_wire() for c in items], as_json, "\n".join(lines) or "no corrections")


def _decide(
    subject_id: str, correction_id: str, database: str | None, as_json: bool, ok: bool
) -> None:
    from engram.context import confirm_correction, reject_correction

    with cli_store(database) as store:
        decide = confirm_correction if ok else reject_correction
        correction = decide(store, CLOCK, subject_id, correction_id)
    emit(correction.to_wire(), as_json, f"{correction.status.value} {correction.id}")


@correction_group.command("confirm")
@_subject
@click.argument("correction_id")
@database_option
@json_option
def confirm_command(
    subject_id: str, correction_id: str, database: str | None, as_json: bool
) -> None:
    """Confirm a pending correction: the belief takes the new value now."""
    _decide(subject_id, correction_id, database, as_json, ok=True)


@correction_group.command("reject")
@_subject
@click.argument("correction_id")
@database_option
@json_option
def reject_command(
    subject_id: str, correction_id: str, database: str | None, as_json: bool
) -> None:
    """Reject a pending correction; the belief is untouched."""
    _decide(subject_id, correction_id, database, as_json, ok=False)
