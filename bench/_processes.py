"""What the fresh-process benches share (``cartridge-cli``, ``pam``): each command a process of
its own under GNU time, the figures as medians beside the first process (the baseline) of the
same run, and the table they are printed in.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

import engram

Figures = dict[str, dict[str, list[float]]]
"""Per process name (the baseline first): its ``cpu`` and ``wall`` seconds and ``rss`` MB."""


def timed(argv: list[str]) -> tuple[float, float, int]:
    """CPU seconds (user + system), wall seconds and peak RSS (KiB) of one fresh process.

    GNU time is the parent so the peak is the child's own (Linux keeps the high-water mark of a
    forking parent across exec)."""
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%U %S %e %M", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    last = done.stderr.decode().strip().splitlines()[-1]
    if done.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed: {done.stderr.decode()[-2000:]}")
    user, system, wall, peak = last.split()
    return float(user) + float(system), float(wall), int(peak)


def fresh(path: Path) -> Path:
    """``path`` with nothing at it or beside it under its name (SQLite's -wal and -shm too)."""
    for p in path.parent.glob(path.name + "*"):
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    return path


def arguments(prog: str, argv: list[str] | None) -> argparse.Namespace:
    """``--n`` (memory counts) and ``--cache`` (where the built stores are kept)."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--n", default="10000,100000", help="comma-separated memory counts")
    parser.add_argument("--cache", type=Path, default=None, help="keep the built stores here")
    return parser.parse_args(argv or [])


def prepare(cache: Path | None, prefix: str) -> tuple[Console, Path]:
    """The console and the cache folder; every engram module compiled first."""
    console = Console(width=None if Console().is_terminal else 120)
    # Bytecode as an installed wheel has it (PYTHONDONTWRITEBYTECODE would recompile each run).
    compileall.compile_dir(Path(engram.__file__).parent, quiet=1)
    return console, cache or Path(tempfile.mkdtemp(prefix=prefix))


def figures_table(what: str, rounds: int, leading: Sequence[str]) -> Table:
    table = Table(
        title=f"{what}, fresh processes, median of {rounds} rounds (load "
        f"{os.getloadavg()[0]:.1f} at start)",
        title_justify="left",
    )
    for column in (*leading, "process", "CPU", "x baseline CPU", "wall", "peak RSS"):
        table.add_column(column, justify="left" if column == "process" else "right")
    return table


def add_figures(
    table: Table,
    figures: Figures,
    leading: Sequence[str],
    baseline_leading: Sequence[str] | None = None,
) -> None:
    """One row per process: the ``leading`` cells (the baseline's own, when it has them), its
    name, and its medians beside the baseline's."""
    base = statistics.median(next(iter(figures.values()))["cpu"])
    for index, (name, f) in enumerate(figures.items()):
        cpu = statistics.median(f["cpu"])
        table.add_row(
            *(baseline_leading if index == 0 and baseline_leading is not None else leading),
            name,
            f"{cpu * 1e3:,.0f} ms",
            f"{cpu / base:.2f}",
            f"{statistics.median(f['wall']) * 1e3:,.0f} ms",
            f"{max(f['rss']):,.0f} MB",
        )
    table.add_section()


def print_table(console: Console, table: Table) -> None:
    console.print(table)
    console.print(f"[dim]load average at the end: {os.getloadavg()[0]:.1f}[/dim]")


__all__ = [
    "Figures",
    "add_figures",
    "arguments",
    "figures_table",
    "fresh",
    "prepare",
    "print_table",
    "timed",
]
