"""Tamper, long mode for the signed ACX artifacts: workflows, Agent Graphs, level credentials.

Run: ``python -m bench tamper-acx [--rounds N]``: per round, 2,000 mutations of each signed
workflow and Agent Graph (the reference implementation's and engram's), 500 of a level
credential (each verification replays its 30+ evidence envelopes) and 5,000 of its Bitstring
Status List credential; default 7 rounds. The same kit and artifacts as the CI suite
(``tests/tamper/test_tamper_acx.py``), judged by "accepted => the meaning is identical". The
baseline column is the same loop with a do-nothing judge (the cost of making the mutations),
measured in the same run. Exits non-zero if the rule is ever broken.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

# The kits live with the tests they serve (tests/, tests/tamper/), which are not packages.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "tamper"))

from acx_artifacts import issue_level, signed_json_artifacts
from json_tamper import TamperReport, mutations, run_tamper

PER_ROUND = {"signed": 2_000, "level": 500, "status": 5_000}


def main(*, rounds: int) -> int:
    rounds = max(rounds, 1)
    cases: list[tuple[str, bytes, Callable[[bytes], Any], int]] = [
        (a.name, a.data, a.accept, PER_ROUND["signed"] * rounds) for a in signed_json_artifacts()
    ]
    with tempfile.TemporaryDirectory() as tmp:
        level = issue_level(Path(tmp))
    cases += [
        (
            "level credential",
            level.credential,
            level.accept_credential,
            PER_ROUND["level"] * rounds,
        ),
        ("status list", level.status_list, level.accept_status_list, PER_ROUND["status"] * rounds),
    ]
    judged: list[tuple[TamperReport, float]] = []
    for seed, (name, original, accept, count) in enumerate(cases, start=100):
        started = time.perf_counter()
        for _ in mutations(original, seed=seed, count=count):
            pass
        baseline = time.perf_counter() - started
        judged.append(
            (
                run_tamper(name, original, accept, mutations(original, seed=seed, count=count)),
                baseline,
            )
        )
    table = Table(title=f"tamper (ACX): {rounds} round(s)", title_justify="left")
    for column in ("artifact", "tried", "refused", "same meaning", "other meaning", "crashed",
                   "judged/s", "judge x baseline"):  # fmt: skip
        table.add_column(column, justify="right")
    for report, baseline in judged:
        table.add_row(
            report.artifact,
            f"{report.tried:,}",
            f"{report.refused:,}",
            f"{report.accepted_same:,}",
            str(len(report.accepted_different)),
            str(len(report.crashed)),
            f"{report.tried / report.seconds:,.0f}",
            f"{report.seconds / max(baseline, 1e-9):.1f}",
        )
    Console(width=160).print(table)
    broken = [r for r, _ in judged if r.accepted_different or r.crashed]
    for report in broken:
        print(report.summary())
        for mutation in report.accepted_different[:5]:
            print("  accepted:", mutation.name)
        for mutation, why in report.crashed[:5]:
            print("  crashed:", mutation.name, why)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(rounds=1))
