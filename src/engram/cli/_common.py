"""What every ``engram`` command shares: the database option, token options, ``--json``, one
store opener and one way to print a result (docs/spec/cli.md "Options every command shares").

- ``--database URL`` (alias ``--db``; a bare path is a SQLite file), else ``$ENGRAM_DATABASE_URL``,
  else ``$ENGRAM_HOME/engram.db``. Only commands that create stores (``db migrate``, ``serve``)
  may name a SQLite file whose directory does not exist; everywhere else a missing directory is
  a mistyped path and is refused before anything is created.
- A token option ``--token`` also reads ``--token-file PATH``, ``$ENGRAM_TOKEN`` or
  ``$ENGRAM_TOKEN_FILE`` (in that order after the command line), so a token need not appear in
  the process list.
- ``--json`` prints the result as indented JSON instead of the human text.

The option groups are modelled on sqlite-utils' reusable click decorators: a command lists the
decorators it needs and receives plain values.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import unquote

import click

from engram.cli._settings import from_settings, settings
from engram.core.clock import SystemClock
from engram.core.jsonio import dumps_text
from engram.errors import InvalidRequest

# The store and the context domain load when a command opens its database, not when its module
# is imported: every command's --help stays within 3x `python -c pass` (issue 33).
if TYPE_CHECKING:
    from rich.console import Console

    from engram.store import Store
    from engram.trust import TrustRegistry

F = TypeVar("F", bound=Callable[..., Any])

CLOCK = SystemClock()

DATABASE_ENV = "ENGRAM_DATABASE_URL"
DATABASE_OPTS = ("--database", "--db")
DATABASE_HELP = (
    "Database URL or SQLite path (default: $ENGRAM_DATABASE_URL, else $ENGRAM_HOME/engram.db)."
)
EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
TOKEN_FILE_LIMIT = 4096  # a token is about 50 bytes; anything this large is not a token file


def database_option(command: F) -> F:
    """``--database URL`` / ``--db URL``, passed to the command as ``database``."""
    return click.option(
        *DATABASE_OPTS, "database", default=None, metavar="URL|PATH", help=DATABASE_HELP
    )(command)


def json_option(command: F) -> F:
    """``--json``, passed to the command as ``as_json``."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(command)


def database_url(database: str | None) -> str:
    """``--database`` as a URL (a bare path is ``sqlite:///abs/path``), else from the env."""
    if database is None:
        from engram.store import database_url_from_env

        return database_url_from_env(settings().environ)
    if "://" in database or database == "memory:":
        return database
    return f"sqlite://{Path(database).expanduser().absolute()}"


def _named_sqlite_file(database: str | None) -> Path | None:
    """The SQLite file the user named (``--database`` or ``$ENGRAM_DATABASE_URL``), if any.

    The default under ``$ENGRAM_HOME`` is not "named": engram creates that directory itself.
    """
    named = database if database is not None else (settings().database_url or "")
    if not named:
        return None
    url = database_url(named)
    if not url.startswith("sqlite://"):
        return None
    raw = unquote(url[len("sqlite://") :])
    return Path(raw) if raw and raw != ":memory:" and "?" not in raw else None


def open_cli_store(database: str | None, *, creates: bool = False, migrate: bool = True) -> Store:
    """Open the command's store. Unless the command ``creates`` stores, a SQLite path whose
    directory does not exist is refused (a typo must not silently make directories). The CLI
    is a composition root: unless told not to (``engram db status`` reports, it never
    changes), the context tables are brought up to date here, since domain calls only check
    the schema (docs/spec/storage.md "Migrations")."""
    path = _named_sqlite_file(database)
    if not creates and path is not None and not path.parent.is_dir():
        raise InvalidRequest(
            f"no such directory for the database: {path.parent} (check the path; "
            f"`engram db migrate --db {path}` creates a new store there)"
        )
    from engram.context import ensure_schema
    from engram.store import open_store

    store = open_store(database_url(database))
    if migrate:
        try:
            ensure_schema(store)
        except BaseException:
            store.close()
            raise
    return store


@contextmanager
def cli_store(
    database: str | None, *, creates: bool = False, migrate: bool = True
) -> Iterator[Store]:
    """``with cli_store(database) as store:``, the store closed however the block ends."""
    store = open_cli_store(database, creates=creates, migrate=migrate)
    try:
        yield store
    finally:
        store.close()


def emit(value: object, as_json: bool, human: str | Iterable[str] | Callable[[], None]) -> None:
    """Print ``value`` as indented JSON with ``--json``; else the human text: a string, lines,
    or a function that prints them."""
    if as_json:
        click.echo(dumps_text(value, indent=2))
    elif callable(human):
        human()
    elif isinstance(human, str):
        click.echo(human)
    else:
        click.echo("\n".join(human))


def read_token_file(path: Path, flag: str) -> str:
    """The token in ``path``: one line, surrounding whitespace ignored."""
    try:
        with path.open("rb") as f:
            data = f.read(TOKEN_FILE_LIMIT + 1)
    except OSError as e:
        raise InvalidRequest(f"{flag}: cannot read {path}: {e.strerror or e}") from e
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError as e:
        raise InvalidRequest(f"{flag}: {path} is not a token file (not UTF-8 text)") from e
    if len(data) > TOKEN_FILE_LIMIT or "\n" in text or not text:
        raise InvalidRequest(f"{flag}: {path} must hold one token on one line")
    return text


_TTL = re.compile(r"^(\d+)([smhd]?)$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_ttl(text: str) -> timedelta:
    """``90``, ``90s``, ``15m``, ``12h`` or ``30d``."""
    match = _TTL.match(text.strip())
    if not match:
        raise InvalidRequest(f"not a duration: {text!r} (use e.g. 3600, 15m, 12h, 30d)")
    return timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])


DEFAULT_URL = "http://127.0.0.1:8420"
"""Where ``engram serve`` listens by default, and the URL ``demo`` and ``review-link`` print
when ``$ENGRAM_PUBLIC_URL`` names none."""


# Piped or redirected, a table is as wide as its rows: a line of `grep`-able text never wrapped
# mid-id at rich's default 80 columns, nor folded inside a cell (issue 32).
UNWRAPPED_WIDTH = 100_000


def rich_console(*, markup: bool = True, stderr: bool = False) -> Console:
    """rich's console for a command's tables: fitted to a terminal; piped, never wrapped."""
    import sys

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else UNWRAPPED_WIDTH
    return Console(soft_wrap=False, highlight=False, markup=markup, width=width, stderr=stderr)


TRUST_REGISTRY = "--trust-registry"
TRUST_REGISTRY_HELP = "ACX trust registry (acx.trust-registry/1, public keys only)."
TRUST_REGISTRY_ALIASES = ("--registry", "--trust")
"""The spellings commands used before issue 32, kept as hidden aliases so scripts keep working."""


def _trust_registry(command: F, aliases: tuple[str, ...]) -> F:
    hidden = [(flag, f"trust_registry_as_{flag.lstrip('-')}") for flag in aliases]

    @functools.wraps(command)
    def merged(*args: Any, **kwargs: Any) -> Any:
        given = [(TRUST_REGISTRY, kwargs.pop("trust_registry"))]
        given += [(flag, kwargs.pop(key)) for flag, key in hidden]
        named = [(flag, value) for flag, value in given if value is not None]
        if len(named) > 1:
            shown = " and ".join(flag for flag, _ in named)
            raise click.UsageError(f"{shown} name the same trust registry: give it once")
        kwargs["trust_registry"] = load_trust_registry_file(named[0][1]) if named else None
        return command(*args, **kwargs)

    decorated: Any = merged
    for flag, key in hidden:
        decorated = click.option(flag, key, type=EXISTING_FILE, default=None, hidden=True)(
            decorated
        )
    decorated = click.option(
        TRUST_REGISTRY, "trust_registry", type=EXISTING_FILE, default=None, help=TRUST_REGISTRY_HELP
    )(decorated)
    return cast("F", decorated)


def trust_registry_option(command: F) -> F:
    """``--trust-registry FILE``, the one declaration of the ACX trust registry option (issue
    32): the command receives ``trust_registry``, the registry loaded (or None). The spellings
    commands used before (``--registry``, ``--trust``) are hidden aliases; two at once are a
    usage error."""
    return _trust_registry(command, TRUST_REGISTRY_ALIASES)


def trust_registry_option_beside_folder(command: F) -> F:
    """:func:`trust_registry_option` for ``engram share``, whose ``--registry`` is another thing
    (the git folder artifacts go to): only ``--trust`` is kept as an alias there."""
    return _trust_registry(command, ("--trust",))


def load_trust_registry_file(path: Path) -> TrustRegistry:
    """The trust registry in ``path``: a bounded read of a regular file, parsed by the library."""
    from engram.core.files import read_regular
    from engram.trust import TrustRegistryError, load_trust_registry

    return load_trust_registry(read_regular(path, what="trust registry", error=TrustRegistryError))


def token_option(
    name: str = "token", *, envvar: str, required: bool, help: str
) -> Callable[[F], F]:
    """``--<name> TOKEN`` and ``--<name>-file PATH``, merged into one ``name`` argument.

    Precedence: the command line (``--<name>`` or ``--<name>-file``, not both), then
    ``$<envvar>``, then ``$<envvar>_FILE``. A token on the command line is visible to other
    users of the machine in the process list; the file and the variable are not.
    """
    flag = "--" + name.replace("_", "-")
    file_flag = flag + "-file"
    file_name = name + "_file"
    file_env = envvar + "_FILE"

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def merged(*args: Any, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            value: str | None = kwargs.pop(name)
            path: Path | None = kwargs.pop(file_name)
            source = ctx.get_parameter_source(name)
            file_source = ctx.get_parameter_source(file_name)
            command_line = click.core.ParameterSource.COMMANDLINE
            if source == command_line and file_source == command_line:
                raise click.UsageError(f"give {flag} or {file_flag}, not both", ctx=ctx)
            if path is not None and file_source == command_line:
                value = read_token_file(path, file_flag)
            elif path is not None and not value:  # only $<envvar>_FILE is set
                value = read_token_file(path, file_env)
            if required and not value:
                raise click.UsageError(
                    f"Missing option '{flag}' (or {file_flag}, ${envvar}, ${file_env}).", ctx=ctx
                )
            kwargs[name] = value or None
            return command(*args, **kwargs)

        decorated = click.option(
            file_flag,
            file_name,
            default=from_settings(file_env),
            metavar="PATH",
            type=click.Path(dir_okay=False, path_type=Path),
            help=f"Read the token from a file instead (default: ${file_env}).",
        )(merged)
        decorated = click.option(
            flag,
            name,
            default=from_settings(envvar),
            metavar="TOKEN",
            help=f"{help} (default: ${envvar}; or use {file_flag}).",
        )(decorated)
        return cast("F", decorated)

    return decorate


__all__ = [
    "CLOCK",
    "DATABASE_ENV",
    "DATABASE_HELP",
    "DATABASE_OPTS",
    "DEFAULT_URL",
    "cli_store",
    "database_option",
    "database_url",
    "emit",
    "json_option",
    "load_trust_registry_file",
    "open_cli_store",
    "parse_ttl",
    "read_token_file",
    "rich_console",
    "token_option",
    "trust_registry_option",
    "trust_registry_option_beside_folder",
]
