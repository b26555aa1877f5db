"""``engram db migrate|status``: bring a database's schema up to date, show where it stands.

docs/spec/storage.md "Migrations". The store does not import domain packages (imports point
downwards), so the CLI, which may import everything, collects the schema components: every
module-level :class:`~engram.store.Component` in ``engram.store`` and the packages above it,
found by walking them. A new domain module that defines a component is migrated with no list to
edit. Two different components with one name are refused.

Every command here takes ``--database URL`` (alias ``--db``; a bare path means a SQLite file);
without it ``$ENGRAM_DATABASE_URL``, else ``$ENGRAM_HOME/engram.db`` (``~/.engram``). ``migrate``
creates the store (and a missing directory) when there is none; ``status`` does not.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import TYPE_CHECKING

from engram.cli._app import cli
from engram.cli._common import (
    cli_store,
    database_option,
    emit,
    json_option,
)
from engram.errors import StoreError

if TYPE_CHECKING:  # the store loads when a command opens one, not for --help (issue 33)
    from engram.store import Component

# Packages whose modules may define components, store first so its tables exist before the
# domain's. cli and runtime hold no tables; core knows no SQL.
COMPONENT_PACKAGES = (
    "engram.store",
    "engram.context",
    "engram.memory",
    "engram.cartridge",
    "engram.transfer",
    "engram.integrations._schema",
    "engram.provider",
    "engram.mcp",
    "engram.conformance",
)


def _modules(package_name: str) -> list[ModuleType]:
    try:
        package = importlib.import_module(package_name)
    except ImportError as e:
        raise StoreError(f"cannot import {package_name} to find its schema: {e}") from e
    found = [package]
    for info in pkgutil.walk_packages(package.__path__, prefix=package_name + "."):
        try:
            found.append(importlib.import_module(info.name))
        except ImportError as e:
            raise StoreError(f"cannot import {info.name} to find its schema: {e}") from e
    return found


def discover_components(packages: tuple[str, ...] = COMPONENT_PACKAGES) -> list[Component]:
    """Every module-level Component in ``packages``, in package order, each once."""
    from engram.store import Component

    found: dict[str, tuple[Component, str]] = {}
    for package in packages:
        for module in _modules(package):
            for value in vars(module).values():
                if not isinstance(value, Component):
                    continue
                seen = found.get(value.name)
                if seen is None:
                    found[value.name] = (value, module.__name__)
                elif seen[0] is not value and seen[0] != value:
                    raise StoreError(
                        f"two schema components are named {value.name!r} "
                        f"({seen[1]} and {module.__name__})"
                    )
    return [component for component, _ in found.values()]


@cli.group("db")
def db_group() -> None:
    """The database: schema migrations and status."""


@db_group.command("migrate")
@database_option
@json_option
def migrate_command(database: str | None, as_json: bool) -> None:
    """Apply every pending schema migration of every engram component."""
    components = discover_components()
    with cli_store(database, creates=True) as store:
        applied = store.migrate(*components)
        versions = store.schema_versions()
        url = store.url
    summary = ", ".join(f"{name} v{version}" for name, version in sorted(versions.items()))
    state = f"migrated {len(applied)} step(s)" if applied else "already up to date"
    value = {
        "database": url,
        "applied": [{"component": c, "version": v, "name": n} for c, v, n in applied],
        "versions": dict(versions),
    }
    lines = [f"applied {component} v{version}: {name}" for component, version, name in applied]
    emit(value, as_json, [*lines, f"{url}: {state} ({summary})"])


@db_group.command("status")
@database_option
@json_option
def status_command(database: str | None, as_json: bool) -> None:
    """Show each component's applied and known schema version, and pending steps."""
    known = {c.name: len(c.migrations) for c in discover_components()}
    with cli_store(database, migrate=False) as store:
        versions = store.schema_versions()
        from engram.store.internals import applied_migrations

        history = applied_migrations(store)
        url = store.url
    rows = [
        (name, versions.get(name, 0), known.get(name, 0))
        for name in sorted(set(known) | set(versions))
    ]
    value = {
        "database": url,
        "components": [
            {"component": name, "applied": applied, "known": latest}
            for name, applied, latest in rows
        ],
        "history": [
            {
                "component": h.component,
                "version": h.version,
                "name": h.name,
                "applied_at": h.applied_at,
            }
            for h in history
        ],
    }
    lines = [url]
    for name, applied, latest in rows:
        note = "up to date" if applied == latest else f"{latest - applied} pending"
        if applied > latest:
            note = "NEWER than this engram: upgrade engram"
        lines.append(f"  {name}: v{applied} of v{latest} ({note})")
    emit(value, as_json, lines)


__all__ = ["COMPONENT_PACKAGES", "db_group", "discover_components"]
