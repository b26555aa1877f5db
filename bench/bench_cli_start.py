"""`engram --version`, `--help` and every `engram COMMAND [SUBCOMMAND ...] --help` beside
`python -c pass`.

Run: ``python -m bench cli-start [--rounds N] [COMMAND ...]``: every command path of the tree (a
group's subcommands too: ``engram cartridge level verify --help``), or only the paths under the
COMMANDs named.

A hook that runs ``engram`` per tool call pays its start-up every time. Each figure is the least
CPU time (user + system, from ``getrusage`` of the finished child) of N fresh processes; the
baseline ``python -c pass`` is measured in the same run. Target (issue 33): each <= 3x the
baseline.
"""

from __future__ import annotations

import compileall
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

import engram
from engram.cli import cli


def _least_cpu(argv: list[str], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command path under ``group`` (imported here, in the bench process, not timed)."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from command_paths(command, (*prefix, name))


def main(*, rounds: int = 7, argv: list[str] | None = None) -> int:
    # Bytecode as an installed wheel has it (PYTHONDONTWRITEBYTECODE would recompile each run).
    compileall.compile_dir(Path(engram.__file__).parent, quiet=1)
    engram_cli = str(Path(sys.executable).parent / "engram")
    paths = [p for p in command_paths(cli) if not argv or p[0] in argv]
    base = _least_cpu([sys.executable, "-c", "pass"], rounds)
    table = Table(
        title=f"CLI start-up, least CPU of {rounds} fresh processes (load "
        f"{os.getloadavg()[0]:.1f})",
        title_justify="left",
    )
    for column in ("command", "CPU", "x python -c pass"):
        table.add_column(column, justify="left" if column == "command" else "right")
    table.add_row("python -c pass (baseline)", f"{base * 1e3:.0f} ms", "1.00")
    rows = [("engram --version", ["--version"]), ("engram --help", ["--help"])]
    rows += [(f"engram {' '.join(p)} --help", [*p, "--help"]) for p in paths]
    worst = 0.0
    for label, args in rows:
        cpu = _least_cpu([engram_cli, *args], rounds)
        worst = max(worst, cpu / base)
        table.add_row(label, f"{cpu * 1e3:.0f} ms", f"{cpu / base:.2f}")
    table.caption = f"{len(rows)} commands; worst {worst:.2f}x (target <= 3x, issue 33)"
    table.caption_justify = "left"
    Console(width=None if Console().is_terminal else 100).print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(argv=sys.argv[1:]))
