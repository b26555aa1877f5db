"""The root command group imports a command's module only when that command is used.

``engram.cli._app.COMMAND_MODULES`` must name every command exactly once and the module that
defines it; a command missing from it would be invisible, a stale entry would break `--help`.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from engram.cli import COMMAND_MODULES, cli


@pytest.mark.req("engram.cli.lazy-commands")
def test_every_command_module_registers_exactly_the_commands_it_is_listed_for() -> None:
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(module)
    assert sorted(cli.commands) == sorted(COMMAND_MODULES)
    for name, command in cli.commands.items():
        callback = command.callback
        assert callback is not None
        assert callback.__module__ == COMMAND_MODULES[name], name


@pytest.mark.req("engram.cli.lazy-commands")
def test_a_small_command_does_not_import_the_server_stack() -> None:
    probe = (
        "import sys; from engram.cli import main; sys.argv = ['engram', 'canonicalize', '-'];\n"
        "import io; sys.stdin = io.TextIOWrapper(io.BytesIO(b'[1]'))\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('starlette', 'uvicorn', 'psycopg', 'mcp', 'numpy', 'rich')\n"
        "print('\\nloaded:', sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "loaded: []"
