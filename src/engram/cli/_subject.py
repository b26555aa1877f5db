"""``engram subject create|list|delete``: the people whose context the provider serves."""

from __future__ import annotations

import click

from engram.cli._app import cli
from engram.cli._common import CLOCK, cli_store, database_option, emit, json_option
from engram.cli._seat import actor, index_folder_for


@cli.group("subject")
def subject_group() -> None:
    """Subjects: the people whose context the provider serves."""


@subject_group.command("create")
@click.option("--name", required=True, help="Display name.")
@click.option("--timezone", default="UTC", show_default=True, help="IANA time zone name.")
@database_option
@json_option
def create_command(name: str, timezone: str, database: str | None, as_json: bool) -> None:
    """Create a subject and print its id."""
    from engram.context import create_subject

    with cli_store(database) as store:
        subject = create_subject(store, CLOCK, name, timezone)
    emit(subject.to_wire(), as_json, subject.id)


@subject_group.command("list")
@database_option
@json_option
def list_command(database: str | None, as_json: bool) -> None:
    """List subjects."""
    from engram.context import list_subjects

    with cli_store(database) as store:
        subjects = list_subjects(store)
    lines = [f"{s.id}  {s.display_name} ({s.timezone})" for s in subjects]
    emit([s.to_wire() for s in subjects], as_json, "\n".join(lines) or "no subjects")


@subject_group.command("delete")
@click.option("--subject", "subject_id", required=True, help="Subject id.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@database_option
def delete_command(subject_id: str, yes: bool, database: str | None) -> None:
    """Erase a subject: its beliefs, corrections, history and memories are deleted for good."""
    from engram.context import erase_subject, get_subject
    from engram.integrations import erase_subject_integrations
    from engram.memory import default_manifest_text, open_engine, parse_manifest
    from engram.transfer import erase_subject_memories

    if not yes:
        click.confirm(f"erase subject {subject_id} and all its data?", abort=True)
    with cli_store(database) as store:
        get_subject(store, subject_id)  # an unknown id is user_not_found before anything changes
        # The subject's own ring holds their memories whatever seat recorded them, so any
        # manifest reaches it: the built-in one (docs/spec/memory-ownership.md). Memories
        # first: if this stops half way, running it again finds the subject and finishes.
        spec = parse_manifest(default_manifest_text(), "<built-in manifest>")
        engine = open_engine(store, spec, CLOCK, index_folder=index_folder_for(store))
        erased = erase_subject_memories(engine, subject_id, actor=actor())
        erased += erase_subject_integrations(engine, subject_id, actor=actor())
        erase_subject(store, CLOCK, subject_id)
    click.echo(f"erased {subject_id} ({erased} memories and stored items)")


__all__ = ["subject_group"]
