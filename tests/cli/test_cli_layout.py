"""The CLI room's layout (issue 28): command modules import only shared CLI helpers and the
library, never each other. import-linter's independence contract in pyproject.toml enforces it;
this checks that the contract names every command module, so a new command cannot slip past it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import click
import pytest

from engram.cli import cli
from engram.cli.internals import COMMAND_MODULES, SUBCOMMAND_MODULES

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
CONTRACT = "CLI command modules do not import each other"


def _command_modules() -> set[str]:
    found = set(COMMAND_MODULES.values())
    for children in SUBCOMMAND_MODULES.values():
        found |= {target.partition(":")[0] for target in children.values()}
    return found


@pytest.mark.req("engram.cli.command-modules-independent")
def test_the_independence_contract_names_every_command_module() -> None:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    independence = next(c for c in contracts if c["name"] == CONTRACT)
    assert independence["type"] == "independence"
    assert set(independence["modules"]) == _command_modules()


@pytest.mark.req("engram.trust.taxonomy-order")
def test_the_trust_states_a_user_may_accept_are_the_librarys() -> None:
    from engram.trust import TrustState

    ctx = click.Context(cli)
    group = cli.get_command(ctx, "cartridge")
    assert isinstance(group, click.Group)
    for name in ("activate", "import", "load"):
        command = group.get_command(ctx, name)
        assert command is not None
        accept = next(p for p in command.params if p.name == "accept")
        assert isinstance(accept.type, click.Choice)
        assert set(accept.type.choices) == {s.value for s in TrustState} - {"tampered"}
