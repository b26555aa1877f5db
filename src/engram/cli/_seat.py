"""Opening the seat's memory engine for a command: the manifest, the database, the subject.

Shared by every command that uses the memory engine (record, recall, forget, PAM, cartridges,
``engram mcp``) and by ``engram serve``: ``--ote`` and ``--subject`` are declared here once, and
so are the words every ``--help`` uses for the seat lookup (:data:`SEAT_LOOKUP`) and the line
that tells the user the default seat is in use (:func:`default_seat_line`). The lookup itself is
``engram.memory``'s ``locate_seat`` (docs/spec/memory-rest.md "The default seat").
"""

from __future__ import annotations

import getpass
import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from engram.cli._common import open_cli_store
from engram.cli._settings import NO_SEAT, settings
from engram.errors import InvalidRequest

if TYPE_CHECKING:  # imported when a command opens an engine: `--help` stays cheap
    from engram.memory import MemoryEngine
    from engram.memory.internals import SeatSource
    from engram.store import Store

F = TypeVar("F", bound=Callable[..., Any])


# How a command finds its seat without --ote, in the order ``locate_seat`` applies it.
SEAT_LOOKUP = (
    "$ENGRAM_OTE, else the nearest .engram/ote.toml upwards, else "
    "$ENGRAM_HOME/default-ote.toml, written when first needed"
)


def ote_option(command: F) -> F:
    return click.option(
        "--ote",
        "ote",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help=f"Seat manifest (default: {SEAT_LOOKUP}; {NO_SEAT}=1 leaves that last out).",
    )(command)


def actor() -> str:
    """Who acts from this command line, for a memory's history."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        return "cli"


def require_subject(store: Store, subject: str | None) -> None:
    """Refuse a ``--subject`` that names no subject (``user_not_found``): a misspelt id would
    otherwise act for a new, empty subject."""
    if subject is not None:
        from engram.context import get_subject

        get_subject(store, subject)


def subject_option(command: F) -> F:
    return click.option(
        "--subject",
        "subject",
        default=None,
        help="Act for this subject: their own memories beside the shared rings "
        "(default: the seat's own; docs/memory-ownership.md).",
    )(command)


def default_seat_line(seat: SeatSource, change: str) -> str:
    """The one line saying the default seat is in use (and whether this command wrote it):
    ``engram serve``'s banner line, and every other command's note on stderr."""
    if seat.created:
        change = f"`engram default-ote`'s; {change}"
        return f"seat: wrote the default seat manifest {seat.path} ({change})"
    return f"seat: the default seat manifest {seat.path} ({change})"


# What a command other than serve says a user can do instead of the default seat.
OTHER_SEAT = "edit it to change the seat; --ote FILE or ENGRAM_OTE names another"


def resolve_seat(ote: Path | None) -> SeatSource:
    """``locate_seat``'s answer for this command line: ``--ote``, else ``$ENGRAM_OTE``, else
    ``.engram/ote.toml`` found upwards from here, else the default seat (the one ``engram
    serve`` serves; not with ``$ENGRAM_NO_SEAT``), said so in one line on stderr, so that
    stdout (JSON, MCP messages) carries only the command's answer."""
    from engram.memory.internals import locate_seat

    given = settings()
    seat = locate_seat(ote, given.environ, Path.cwd(), default=not given.no_seat)
    if seat.origin == "default":
        click.echo(default_seat_line(seat, OTHER_SEAT), err=True)
    return seat


NO_HIT_HINT = (
    "hint: without --subject, recall searches the seat's own and shared rings; memories "
    "recorded with a subject's token (REST, /mcp) are that subject's: --subject ID recalls them"
)
"""Said when a recall for the seat finds nothing (docs/memory-ownership.md)."""


def kind_required(ote: Path | None) -> InvalidRequest:
    """A memory given as TEXT needs a kind: the error names the seat's, so the user can pick."""
    from engram.memory.internals import load_seat

    kinds = ", ".join(load_seat(resolve_seat(ote)).ontology.allowed_kinds)
    return InvalidRequest(f"--kind is required with TEXT: one of this seat's kinds ({kinds})")


def index_folder_for(store: Store) -> Path | None:
    """Where this host keeps the store's derived index: beside a SQLite file (None: the
    engine's default), ``$ENGRAM_HOME/index/<database>`` for PostgreSQL, so every process on
    the host shares one index and keeps it current from the shared database's change sequence."""
    from engram.store.internals import redact_url

    if store.dialect.name != "postgresql":
        return None
    digest = hashlib.sha256(redact_url(store.url).encode("utf-8")).hexdigest()[:16]
    return settings().home / "index" / f"postgresql-{digest}"


@contextmanager
def seat_engine(
    ote: Path | None,
    database: str | None,
    seat: SeatSource | None = None,
    subject: str | None = None,
    *,
    deferred: bool = False,
) -> Iterator[MemoryEngine]:
    """The seat's engine on the database, acting for ``subject`` when one is named.

    ``deferred`` (``engram mcp``): the engine opens when first used (numpy and tantivy load
    then, not at start-up), and acting for ``subject`` is left to the caller, which checks it
    exists here all the same."""
    from engram.core.clock import SystemClock
    from engram.memory import remote_stages
    from engram.memory.internals import deferred_engine, load_seat

    spec = load_seat(seat or resolve_seat(ote))
    embedder, reranker = remote_stages(spec, settings().thalamus_url)
    store = open_cli_store(database)
    try:
        require_subject(store, subject)

        def opened() -> MemoryEngine:
            from engram.memory import open_engine  # numpy and tantivy load here

            return open_engine(
                store,
                spec,
                SystemClock(),
                embedder=embedder,
                reranker=reranker,
                index_folder=index_folder_for(store),
            )

        if deferred:
            yield deferred_engine(spec, opened)
        else:
            from engram.memory import subject_view

            yield subject_view(opened(), subject)
    finally:
        for client in (embedder, reranker):
            if client is not None:
                client.close()
        store.close()


__all__ = [
    "NO_HIT_HINT",
    "OTHER_SEAT",
    "SEAT_LOOKUP",
    "actor",
    "default_seat_line",
    "index_folder_for",
    "ote_option",
    "require_subject",
    "resolve_seat",
    "seat_engine",
    "subject_option",
]
