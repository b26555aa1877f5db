"""The root command group imports a command's module only when that command is used.

``engram.cli._app.COMMAND_MODULES`` must name every command exactly once and the module that
defines it; a command missing from it would be invisible, a stale entry would break `--help`.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engram.cli import cli
from engram.cli.internals import COMMAND_MODULES


@pytest.mark.req("engram.cli.lazy-commands")
def test_every_command_module_registers_exactly_the_commands_it_is_listed_for() -> None:
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(module)
    assert sorted(cli.commands) == sorted(COMMAND_MODULES)
    for name, command in cli.commands.items():
        callback = command.callback
        assert callback is not None
        assert callback.__module__ == COMMAND_MODULES[name], name


def _loaded_by(argv: list[str], stdin: bytes, heavy: tuple[str, ...]) -> list[str]:
    """Which of ``heavy`` (a package or module, with any of its submodules) a fresh interpreter
    has imported after running ``engram ARGV`` with ``stdin``."""
    probe = (
        f"import io, sys; from engram.cli import main; sys.argv = ['engram', *{argv!r}]\n"
        f"sys.stdin = io.TextIOWrapper(io.BytesIO({stdin!r}))\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"heavy = {heavy!r}\n"
        "found = [h for h in heavy if any(m == h or m.startswith(h + '.') for m in sys.modules)]\n"
        "print('\\nloaded:', sorted(found))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    last = result.stdout.splitlines()[-1]
    assert last.startswith("loaded: "), result.stdout
    return list(ast.literal_eval(last.removeprefix("loaded: ")))


@pytest.mark.req("engram.cli.lazy-commands")
def test_a_small_command_does_not_import_the_server_stack() -> None:
    heavy = ("starlette", "uvicorn", "psycopg", "mcp", "numpy", "rich")
    assert _loaded_by(["canonicalize", "-"], b"[1]", heavy) == []


@pytest.mark.req("engram.cli.lazy-commands")
def test_a_memory_command_does_not_import_signing_or_the_context_domain() -> None:
    """A cold ``engram recall`` (issue 16) loads neither ``cryptography`` nor the beliefs,
    tokens and export code of ``engram.context``: their names bind on first use."""
    heavy = (
        "sshsig",
        "engram.context._beliefs",
        "engram.context._tokens",
        "engram.context._export",
        "importlib.metadata",
        # nor the memory engine's other operations: engram.memory binds names on first use
        "engram.memory._distill",
        "engram.memory._outcomes",
        "engram.memory._portable",
        "engram.memory._seed",
        "engram.memory._status",
    )
    assert _loaded_by(["recall", "--help"], b"", heavy) == []


SAMPLE_ACX = Path(__file__).resolve().parents[1] / "vectors" / "acx-reference-built" / "sample.acx"


@pytest.mark.req("engram.cli.lazy-commands")
def test_cartridge_verify_imports_no_network_code_nor_the_other_cartridge_commands() -> None:
    """``engram cartridge verify`` (issue 33: 86 % of it was importing modules) loads neither
    httpx nor the level, policy and OCI subcommands, nor the schema and YAML libraries only
    they and a malformed record need."""
    heavy = (
        "httpx",
        "httpcore",
        "engram.oci",
        "engram.level",
        "engram.policy",
        "engram.cli._level",
        "engram.cli._policy",
        "engram.cli._oci",
        "jsonschema",
        "yaml",
        "numpy",
    )
    assert _loaded_by(["cartridge", "verify", str(SAMPLE_ACX)], b"", heavy) == []
    # ... while the subcommands stay reachable through the group.
    assert _loaded_by(["cartridge", "level", "--help"], b"", ("engram.cli._level",)) == [
        "engram.cli._level"
    ]


@pytest.mark.req("engram.cli.lazy-commands")
def test_cartridge_load_help_imports_no_signing_path() -> None:
    """``engram cartridge load --help`` reads ``engram.cartridge.HOST_SKILL_DIRS`` for its
    ``--host`` choices; engram.cartridge binds names on first use, so the help loads neither the
    verifier and signer nor cryptography (issue 28: it was 3.2x ``python -c pass``)."""
    heavy = (
        "cryptography",
        "sshsig",
        "engram.core.signing",
        "engram.cartridge._verify",
        "engram.cartridge._signing",
        "engram.cartridge._host",
        "engram.trust",
    )
    assert _loaded_by(["cartridge", "load", "--help"], b"", heavy) == []


# Commands whose --help loads nothing heavy (issue 33: within 3x `python -c pass`); each
# imports the engine, the network client or the server stack only when it runs.
LIGHT_HELP = (
    "belief",
    "canonicalize",
    "chat",
    "complete",
    "context",
    "correction",
    "db",
    "default-ote",
    "demo",
    "distill",
    "init",
    "keys",
    "mcp",
    "memory",
    "migrate",
    "ote",
    "outcome",
    "recall",
    "record",
    "review-link",
    "status",
    "subject",
    "token",
)


@pytest.mark.req("engram.cli.lazy-commands")
@pytest.mark.parametrize("command", LIGHT_HELP)
def test_command_help_imports_no_engine_network_client_or_server(command: str) -> None:
    heavy = (
        "numpy",
        "tantivy",
        "httpx",
        "starlette",
        "uvicorn",
        "mcp",
        "pydantic",
        "jsonschema",
        "engram.memory._engine",
        "engram.provider",
        "engram.runtime",
    )
    assert _loaded_by([command, "--help"], b"", heavy) == []


@pytest.mark.req("engram.cli.lazy-commands")
def test_lazy_names_bind_once_and_unknown_names_are_attribute_errors() -> None:
    import engram.context.internals
    import engram.core

    signer = engram.core.sign_document
    assert vars(engram.core)["sign_document"] is signer  # cached: __getattr__ is not asked again
    assert engram.context.internals.check_confidence(0.5) == 0.5
    with pytest.raises(AttributeError, match=r"'engram\.core' has no attribute 'nope'"):
        _ = engram.core.nope  # type: ignore[attr-defined]


_BLAS_PROBE = """
import ctypes, os, re, sys
from engram.cli import main
sys.argv = ['engram', '--version']
try:
    main()
except SystemExit:
    pass
import numpy  # after main, as a command would
maps = open('/proc/self/maps').read()
threads = None
for path in sorted(set(re.findall(r'/\\S*openblas\\S*[.]so\\S*', maps))):
    lib = ctypes.CDLL(path)
    for symbol in ('openblas_get_num_threads', 'openblas_get_num_threads64_',
                   'scipy_openblas_get_num_threads64_', 'scipy_openblas_get_num_threads'):
        if hasattr(lib, symbol):
            threads = getattr(lib, symbol)()
print('blas:', os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('OMP_NUM_THREADS'), threads)
"""


def _blas_after_main(extra_env: dict[str, str]) -> list[str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
    }
    result = subprocess.run(
        [sys.executable, "-c", _BLAS_PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**env, **extra_env},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[-1].removeprefix("blas: ").split()


@pytest.mark.req("engram.cli.one-blas-thread")
def test_the_command_gives_numpy_one_blas_thread_unless_the_user_chose() -> None:
    openblas, omp, threads = _blas_after_main({})
    assert (openblas, omp) == ("1", "None")
    assert threads in ("1", "None")  # None: this numpy is not built on OpenBLAS
    assert _blas_after_main({"OPENBLAS_NUM_THREADS": "2"})[:2] == ["2", "None"]
    assert _blas_after_main({"OMP_NUM_THREADS": "2"})[:2] == ["None", "2"]
