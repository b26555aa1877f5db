"""Timing and reporting shared by every benchmark.

A benchmark is a list of :class:`Case` rows, each holding several :class:`Contender` callables
for the same workload; the first contender is the baseline. Each is timed in this process, in
the same run, interleaved round by round so that background load on a shared machine hits all
contenders alike; the report gives the best and median time per operation and the ratio of
each contender's median to the baseline's.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from rich.console import Console
from rich.table import Table


@dataclass(frozen=True)
class Contender:
    name: str
    run: Callable[[], object]


@dataclass
class Case:
    label: str
    contenders: list[Contender]
    note: str = ""
    samples: dict[str, list[float]] = field(default_factory=dict)


def wait_until_up(url: str, process: subprocess.Popen[str], seconds: float, what: str) -> None:
    """Poll ``url`` until it answers 200; kill ``process`` and exit if it does not in time."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"{what} did not start")


def _loops_for(run: Callable[[], object], target_seconds: float) -> int:
    """How many calls make one sample last about ``target_seconds``."""
    loops = 1
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            run()
        elapsed = time.perf_counter() - start
        if elapsed >= target_seconds / 4 or loops >= 1_000_000:
            return max(1, int(loops * target_seconds / max(elapsed, 1e-9)))
        loops *= 4


def measure(case: Case, *, rounds: int = 7, sample_seconds: float = 0.05) -> None:
    """Fill ``case.samples`` with ``rounds`` per-call timings (seconds) for each contender."""
    loops = {c.name: _loops_for(c.run, sample_seconds) for c in case.contenders}
    case.samples = {c.name: [] for c in case.contenders}
    for _ in range(rounds):
        for contender in case.contenders:
            n = loops[contender.name]
            start = time.perf_counter()
            for _ in range(n):
                contender.run()
            case.samples[contender.name].append((time.perf_counter() - start) / n)


def report(title: str, cases: list[Case], console: Console | None = None) -> None:
    """Print one rich table: per case and contender, best/median time and ratio to baseline."""
    # Piped output (CI logs, reports) gets a fixed width instead of a squeezed 80 columns.
    console = console or Console(width=None if Console().is_terminal else 110)
    table = Table(title=title, title_justify="left")
    table.add_column("workload")
    table.add_column("contender")
    table.add_column("best", justify="right")
    table.add_column("median", justify="right")
    table.add_column("× baseline", justify="right")
    for case in cases:
        baseline = statistics.median(case.samples[case.contenders[0].name])
        for index, contender in enumerate(case.contenders):
            times = case.samples[contender.name]
            median = statistics.median(times)
            ratio = "1.00 (baseline)" if index == 0 else f"{median / baseline:.2f}"
            table.add_row(
                case.label if index == 0 else "",
                contender.name,
                _duration(min(times)),
                _duration(median),
                ratio,
            )
        if case.note:
            table.add_row("", f"[dim]{case.note}[/dim]", "", "", "")
        table.add_section()
    console.print(table)


def _duration(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"
