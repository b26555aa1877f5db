"""Opening the seat's memory engine for a command: the manifest, the database, the subject.

Shared by every command that uses the memory engine (record, recall, forget, PAM, cartridges,
``engram mcp``): ``--ote`` and ``--subject`` are declared here once.
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
from engram.cli._settings import settings

if TYPE_CHECKING:  # imported when a command opens an engine: `--help` stays cheap
    from engram.memory import MemoryEngine
    from engram.memory.internals import SeatSource
    from engram.store import Store

F = TypeVar("F", bound=Callable[..., Any])


def ote_option(command: F) -> F:
    return click.option(
        "--ote",
        "ote",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Seat manifest (default: $ENGRAM_OTE, else the nearest .engram/ote.toml upwards).",
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


def resolve_seat(ote: Path | None) -> SeatSource:
    """``--ote``, else ``$ENGRAM_OTE``, else ``.engram/ote.toml`` found upwards from here."""
    from engram.memory.internals import locate_seat

    return locate_seat(ote, settings().environ, Path.cwd())


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
    "actor",
    "index_folder_for",
    "ote_option",
    "require_subject",
    "resolve_seat",
    "seat_engine",
    "subject_option",
]
