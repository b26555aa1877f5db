"""Run a child process and report ITS peak RSS; stop a served one as Ctrl-C does.

``getrusage(RUSAGE_CHILDREN).ru_maxrss`` is the largest of every child the test process ever
waited for, so a memory-hungry child of an earlier test (a 1M-row import, a browser) would be
blamed on the child under test. ``os.wait4`` returns the resource usage of the one process it
reaps, which is what a "bounded memory" assertion means.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path


def run_measured(
    argv: Sequence[str],
    *,
    timeout: float,
    preexec_fn: Callable[[], None] | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run ``argv`` to its end; return what it printed and its own peak RSS in KiB.

    Killed after ``timeout`` seconds (its return code is then -9, as subprocess reports it)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(
            list(argv), stdout=out, stderr=err, text=True, preexec_fn=preexec_fn, cwd=cwd, env=env
        )
        timer = threading.Timer(timeout, process.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(list(argv), process.returncode, out.read(), err.read())
    return done, usage.ru_maxrss


def interrupt(process: subprocess.Popen[str]) -> None:
    """Ctrl-C a served child (``engram serve``) and reap it, its pipes drained; killed if it
    has not stopped within 30 s, so a hung server never hangs the suite."""
    process.send_signal(signal.SIGINT)
    try:
        process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


__all__ = ["interrupt", "run_measured"]
