"""Run Python code in a child process and report the peak RSS of that code alone.

``ru_maxrss`` (``wait4``, ``getrusage``) of a child started from a large test process is the
parent's size: the kernel keeps the high-water mark of the address space a process had before
``execve`` (the fork's copy of the parent). ``VmHWM`` in ``/proc/self/status`` belongs to the
address space the child's program runs in, so the child reports it at exit into a file the
parent reads: the figure a "bounded memory" assertion means, whatever ran in the parent before.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from process_kit import run_measured

PEAK_FILE = "PEAK_KIT_FILE"
_PRELUDE = """
import atexit as _peak_atexit, os as _peak_os
def _peak_report():
    with open("/proc/self/status") as status:
        line = next(x for x in status if x.startswith("VmHWM:"))
    with open(_peak_os.environ["PEAK_KIT_FILE"], "w") as out:
        out.write(line.split()[1])
_peak_atexit.register(_peak_report)
"""


def run_python_peak(
    code: str,
    args: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str],
    cwd: Path | None = None,
) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``python -c code args`` to its end; return what it printed and its peak RSS in KiB.

    The peak is 0 when the child did not reach its exit handlers (killed, ``os._exit``)."""
    with tempfile.TemporaryDirectory(prefix="peak-kit-") as folder:
        report = Path(folder) / "peak"
        done, _ = run_measured(
            [sys.executable, "-c", _PRELUDE + code, *args],
            timeout=timeout,
            cwd=cwd,
            env={**env, PEAK_FILE: str(report)},
        )
        peak = int(report.read_text()) if report.exists() else 0
    return done, peak


__all__ = ["run_python_peak"]
