"""``engram --help`` lists every command without importing what only running one needs.

Help used to import every command module (0.8 s, the MCP SDK and numpy among them, against
0.05 s for ``engram --version``). The root group now lists commands from ``COMMAND_HELP``; the
text must be exactly what click prints once every module is imported, so the table cannot
drift from the commands' own help.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

from engram.cli import cli
from engram.cli.internals import COMMAND_HELP, COMMAND_MODULES, SUBCOMMAND_HELP, SUBCOMMAND_MODULES

PROBE = """
import sys
from engram.cli import cli, run_cli
{before}
code = run_cli(cli, ["--help"])
# _app (the root group) and _settings (the environment read at the edge) run every command line.
edge = ("engram.cli._app", "engram.cli._settings")
loaded = sorted(m for m in sys.modules if m.startswith("engram.cli._") and m not in edge)
heavy = sorted(
    m for m in sys.modules
    if m.split(".")[0] in ("mcp", "numpy", "starlette", "uvicorn", "psycopg", "rich", "httpx")
)
print("\\n#", code, loaded, heavy)
"""


def _help(before: str = "") -> tuple[str, str]:
    run = subprocess.run(
        [sys.executable, "-c", PROBE.format(before=before)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert run.returncode == 0, run.stderr
    text, _, facts = run.stdout.rpartition("\n# ")
    return text, facts


@pytest.mark.req("engram.cli.help-is-light")
def test_root_help_imports_no_command_module_and_nothing_heavy() -> None:
    text, facts = _help()
    assert facts.strip() == "0 [] []"
    for name in COMMAND_MODULES:
        assert f"\n  {name} " in text


@pytest.mark.req("engram.cli.help-is-light")
def test_root_help_reads_the_same_as_with_every_module_imported() -> None:
    modules = sorted(set(COMMAND_MODULES.values()))
    eager = f"import importlib\nfor m in {modules!r}:\n    importlib.import_module(m)"
    lazy_text, _ = _help()
    eager_text, facts = _help(eager)
    assert "[]" not in facts.split("]")[0]  # the eager run did import the modules
    assert lazy_text == eager_text


@pytest.mark.req("engram.cli.help-is-light")
def test_every_summary_is_the_commands_own_first_sentence() -> None:
    assert sorted(COMMAND_HELP) == sorted(COMMAND_MODULES)
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(module)
    for name, summary in COMMAND_HELP.items():
        assert summary == cli.commands[name].get_short_help_str(10**6), name


SUBGROUP_PROBE = """
import importlib, sys
from engram.cli import run_cli
from engram.cli import cli
from engram.cli.internals import SUBCOMMAND_MODULES
{before}
code = run_cli(cli, [{parent!r}, "--help"])
elsewhere = {{m.partition(":")[0] for m in SUBCOMMAND_MODULES[{parent!r}].values()}}
print("\\n#", code, sorted(m for m in elsewhere if m in sys.modules))
"""


def _group_help(parent: str, eager: bool) -> tuple[str, str]:
    loop = f"for m in SUBCOMMAND_MODULES[{parent!r}].values():\n"
    before = loop + "    importlib.import_module(m.partition(':')[0])" if eager else ""
    run = subprocess.run(
        [sys.executable, "-c", SUBGROUP_PROBE.format(before=before, parent=parent)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert run.returncode == 0, run.stderr
    text, _, facts = run.stdout.rpartition("\n# ")
    return text, facts


@pytest.mark.req("engram.cli.help-is-light")
@pytest.mark.parametrize("parent", sorted(SUBCOMMAND_HELP))
def test_a_group_lists_its_lazy_subcommands_without_importing_them(parent: str) -> None:
    lazy_text, lazy_facts = _group_help(parent, eager=False)
    eager_text, eager_facts = _group_help(parent, eager=True)
    assert lazy_facts.strip() == "0 []"
    assert eager_facts.strip() != "0 []"  # the eager run did import them
    assert lazy_text == eager_text


@pytest.mark.req("engram.cli.help-is-light")
def test_every_subcommand_summary_is_its_own_first_sentence() -> None:
    assert {p: sorted(c) for p, c in SUBCOMMAND_HELP.items()} == {
        p: sorted(c) for p, c in SUBCOMMAND_MODULES.items()
    }
    for parent, children in SUBCOMMAND_MODULES.items():
        for name, target in children.items():
            module, _, attribute = target.partition(":")
            command = getattr(importlib.import_module(module), attribute or "COMMAND")
            assert SUBCOMMAND_HELP[parent][name] == command.get_short_help_str(10**6), name
