"""Tamper, long mode: tens of thousands of mutations of a signed export, diff and bundle.

Run: ``python -m bench tamper [--rounds N]`` (N x 10,000 mutations per artifact; default 7 ->
70,000). The same kit and artifacts as the CI suite (``tests/tamper/``), which runs a few
thousand: each mutation is a single-byte or structural edit of a real document signed by
engram's provider, judged by the rule "accepted => the meaning is identical". The table gives,
per artifact, what was tried, refused, accepted with the same meaning, accepted with another
meaning (must be 0) and crashed (must be 0), and mutations judged per second; the baseline row
is the same loop with a do-nothing judge (the cost of making the mutations), measured in the
same run. Exits non-zero if the rule is ever broken.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

# The kit lives with the tests it serves (tests/tamper/), which are not a package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "tamper"))

from json_tamper import TamperReport, mutations, run_tamper
from tamper_artifacts import make_artifacts

PER_ROUND = 10_000


def main(*, rounds: int) -> int:
    artifacts = make_artifacts()
    count = PER_ROUND * max(rounds, 1)
    judged: list[tuple[TamperReport, float]] = []
    cases: list[tuple[str, bytes, Callable[[bytes], Any], int]] = [
        ("export", artifacts.export, artifacts.accept_export, 1),
        ("diff", artifacts.diff, artifacts.accept_diff, 2),
        ("bundle", artifacts.bundle, artifacts.accept_bundle, 3),
    ]
    for name, original, accept, seed in cases:
        started = time.perf_counter()
        for _ in mutations(original, seed=seed, count=count):
            pass
        baseline = time.perf_counter() - started
        report = run_tamper(name, original, accept, mutations(original, seed=seed, count=count))
        judged.append((report, baseline))
    table = Table(title=f"tamper: {count:,} mutations per artifact", title_justify="left")
    for column in (
        "artifact",
        "tried",
        "refused",
        "same meaning",
        "other meaning",
        "crashed",
        "judged/s",
        "baseline mutations/s",
        "judge x baseline",
    ):
        table.add_column(column, justify="right")
    for report, baseline in judged:
        rate = report.tried / report.seconds
        base_rate = report.tried / max(baseline, 1e-9)
        table.add_row(
            report.artifact,
            f"{report.tried:,}",
            f"{report.refused:,}",
            f"{report.accepted_same:,}",
            str(len(report.accepted_different)),
            str(len(report.crashed)),
            f"{rate:,.0f}",
            f"{base_rate:,.0f}",
            f"{report.seconds / max(baseline, 1e-9):.1f}",
        )
    Console(width=160).print(table)
    shown = len(artifacts.unsigned_edits)
    print(f"bundle edits accepted in unsigned members (shown by verify): {shown}")
    broken = [r for r, _ in judged if r.accepted_different or r.crashed]
    for report in broken:
        print(report.summary())
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(rounds=1))
