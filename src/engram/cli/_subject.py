"""``engram subject create|list|delete``, and the store/output helpers the context commands share.

Every context command takes ``--db`` (a database URL such as ``postgresql://...`` or
``sqlite:///path``, or a plain file path); without it ``ENGRAM_DATABASE_URL``, else
``$ENGRAM_HOME/engram.db``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from engram.cli._app import cli
from engram.context import create_subject, ensure_schema, erase_subject, list_subjects
from engram.core.canonical import JsonValue
from engram.core.clock import SystemClock
from engram.core.jsonio import dumps_text
from engram.store import Store, database_url_from_env, open_store

F = TypeVar("F", bound=Callable[..., Any])


def database_url(db: str | None) -> str:
    """``--db`` as a URL (a bare path becomes ``sqlite:///abs/path``), else from the env."""
    if db is None:
        return database_url_from_env(os.environ)
    if "://" in db or db in ("memory:",):
        return db
    return f"sqlite://{Path(db).expanduser().absolute()}"


def open_cli_store(db: str | None) -> Store:
    """The store, its context tables brought up to date (the CLI is a composition root)."""
    store = open_store(database_url(db))
    try:
        ensure_schema(store)
    except BaseException:
        store.close()
        raise
    return store


def db_option(command: F) -> F:
    return click.option(
        "--db",
        default=None,
        metavar="URL|PATH",
        help="Database URL or SQLite path (default: $ENGRAM_DATABASE_URL, else $ENGRAM_HOME).",
    )(command)


def json_option(command: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(command)


def emit(value: JsonValue, as_json: bool, text: str) -> None:
    """Print ``value`` as indented JSON with ``--json``, else the human ``text``."""
    click.echo(dumps_text(value, indent=2) if as_json else text)


CLOCK = SystemClock()


@cli.group("subject")
def subject_group() -> None:
    """Subjects: the people whose context the provider serves."""


@subject_group.command("create")
@click.option("--name", required=True, help="Display name.")
@click.option("--timezone", default="UTC", show_default=True, help="IANA time zone name.")
@db_option
@json_option
def create_command(name: str, timezone: str, db: str | None, as_json: bool) -> None:
    """Create a subject and print its id."""
    store = open_cli_store(db)
    try:
        subject = create_subject(store, CLOCK, name, timezone)
    finally:
        store.close()
    emit(subject.to_wire(), as_json, subject.id)


@subject_group.command("list")
@db_option
@json_option
def list_command(db: str | None, as_json: bool) -> None:
    """List subjects."""
    store = open_cli_store(db)
    try:
        subjects = list_subjects(store)
    finally:
        store.close()
    lines = [f"{s.id}  {s.display_name} ({s.timezone})" for s in subjects]
    emit([s.to_wire() for s in subjects], as_json, "\n".join(lines) or "no subjects")


@subject_group.command("delete")
@click.option("--subject", "subject_id", required=True, help="Subject id.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@db_option
def delete_command(subject_id: str, yes: bool, db: str | None) -> None:
    """Erase a subject: its beliefs, corrections and history are deleted for good."""
    if not yes:
        click.confirm(f"erase subject {subject_id} and all its data?", abort=True)
    store = open_cli_store(db)
    try:
        erase_subject(store, CLOCK, subject_id)
    finally:
        store.close()
    click.echo(f"erased {subject_id}")


__all__ = ["CLOCK", "database_url", "db_option", "emit", "json_option", "open_cli_store"]
