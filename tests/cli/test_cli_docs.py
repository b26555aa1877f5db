"""docs/spec/cli.md cannot drift from the CLI (after sqlite-utils' tests/test_docs.py).

Its table "Every command" lists each command once, and says ``--database`` exactly for the
commands that take the one shared database option (``--database`` with its alias ``--db``,
the same help everywhere); the README says the same of the option.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from engram.cli import cli
from engram.cli.internals import COMMAND_MODULES, DATABASE_HELP, DATABASE_OPTS

REPO = Path(__file__).resolve().parents[2]
CLI_DOC = REPO / "docs" / "spec" / "cli.md"
ROW = re.compile(r"^\| `(?P<command>engram [a-z -]+)` \|(?P<what>[^|]+)\|(?P<db>[^|]*)\|$")


def leaf_commands() -> dict[str, click.Command]:
    """Every command a user can run, by its full name; groups attach their late subgroups
    (``engram cartridge level``) when looked up, as they do when a user runs them."""
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(module)
    ctx = click.Context(cli)

    def walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None, f"{path} {name}"
                yield from walk(sub, f"{path} {name}")
        else:
            yield path, command

    return dict(walk(cli, "engram"))


def documented() -> dict[str, bool]:
    """Command -> whether the table says it takes ``--database``."""
    text = CLI_DOC.read_text(encoding="utf-8")
    table = text.split("## Every command", 1)[1]
    rows: dict[str, bool] = {}
    for line in table.splitlines():
        match = ROW.match(line)
        if match:
            assert match["command"] not in rows, f"{match['command']} is listed twice"
            rows[match["command"]] = match["db"].strip() == "`--database`"
    return rows


@pytest.mark.req("engram.cli.one-database-option")
def test_every_command_is_in_the_table_and_every_row_is_a_command() -> None:
    commands, rows = set(leaf_commands()), set(documented())
    assert sorted(commands - rows) == [], "commands missing from docs/spec/cli.md"
    assert sorted(rows - commands) == [], "docs/spec/cli.md lists commands that do not exist"


@pytest.mark.req("engram.cli.one-database-option")
@pytest.mark.parametrize(("path", "takes_database"), sorted(documented().items()))
def test_the_database_option_is_the_same_wherever_the_table_says_so(
    path: str, takes_database: bool
) -> None:
    command = leaf_commands()[path]
    options = [
        p for p in command.params if isinstance(p, click.Option) and p.name in ("database", "db")
    ]
    spelled = [o for o in command.params if set(getattr(o, "opts", ())) & set(DATABASE_OPTS)]
    if not takes_database:
        assert options == spelled == [], f"{path} takes a database option; say so in cli.md"
        return
    assert len(options) == 1, f"{path} takes no --database"
    (option,) = options
    assert (option.name, tuple(option.opts), option.help) == (
        "database",
        DATABASE_OPTS,
        DATABASE_HELP,
    )
    assert spelled == [option]


@pytest.mark.req("engram.cli.one-database-option")
def test_the_readme_claims_the_option_only_for_commands_that_use_the_database() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "Every command takes `--database" not in readme
    assert "Every command that uses the database takes `--database URL` (alias `--db`" in readme
