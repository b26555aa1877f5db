"""Run many ``engram`` command lines in one interpreter, each bounded in time; report as JSON.

``python cli_driver.py RUNS.json SECONDS``: RUNS.json is a list of argument lists. Each runs
through ``engram.cli``'s own entry (``run_cli``) with stdout and stderr captured; an exception
that escapes it is recorded with its traceback (a crash), and a run still going after SECONDS
is stopped by ``SIGALRM`` and recorded as hung. One interpreter for all runs keeps the suite
fast (starting engram costs seconds on a loaded machine); the parent sets the memory limit.
"""

from __future__ import annotations

import contextlib
import io
import json
import signal
import sys
import traceback
from pathlib import Path
from types import FrameType


class Hung(BaseException):
    """Raised by the alarm: a BaseException, so no ``except Exception``/``OSError`` hides it."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hung


def main() -> None:
    from engram.cli import cli, run_cli

    runs = json.loads(Path(sys.argv[1]).read_text())
    seconds = int(sys.argv[2])
    signal.signal(signal.SIGALRM, _alarm)
    results = []
    for args in runs:
        out, err = io.StringIO(), io.StringIO()
        result: dict[str, object] = {"args": args, "hung": False, "crash": None, "code": None}
        signal.alarm(seconds)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                result["code"] = run_cli(cli, list(args))
        except Hung:
            result["hung"] = True
        except BaseException:
            result["crash"] = traceback.format_exc()[-2000:]
        finally:
            signal.alarm(0)
        result["stdout"], result["stderr"] = out.getvalue()[:4000], err.getvalue()[:4000]
        results.append(result)
    sys.stdout.write(json.dumps(results))  # noqa: TID251 - a test report, not signed bytes


if __name__ == "__main__":
    main()
