"""``bench/bench_locomo.py`` without its data: one line saying where the public data set
lives and ``--data PATH``, exit 2, no traceback (issue 11)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_locomo.py"


@pytest.mark.req("engram.memory.bench-locomo-data")
@pytest.mark.parametrize("args", [[], ["--data", "/nonexistent/locomo10.json"]])
def test_the_locomo_bench_without_its_data_says_where_to_get_it(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "snap-research/locomo" in lines[0]
    assert "--data PATH" in lines[0]
