"""The solver seam: how a verifier re-runs the pinned ROM on one held-out task (SPEC §10.2 step 2).

A :class:`Solver` turns ``(rom_digest, task)`` into an :class:`Attempt`: pass or fail plus the
bytes of its trajectory, which become signed evidence. Two solvers ship:

- :class:`CommandSolver`, the production seam: one subprocess per task, run in a fresh, empty
  working directory that is deleted afterwards, with a minimal environment (no inherited
  secrets), the task as JSON on stdin, a wall-clock limit after which its whole process group is
  killed, and bounded output. It passes when it exits 0 and, if the task pins graded artifacts,
  every pinned file exists in the working directory with exactly the pinned SHA-256;
- :class:`ReferenceSolver`, deterministic, for tests and the demo: pass/fail is a pure function of
  the ROM digest, the task id and a competence, as the reference's ``referenceSolver`` is
  (h = SHA-256 of ``<D>|<task>|acx-benchmark-v1``; u = first 13 hex digits / 2^52; pass when
  u < 1 / (1 + e^(−0.6 (competence − difficulty)))).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Protocol

from engram.core.canonical import canonicalize
from engram.errors import InvalidRequest
from engram.level._benchmark import Task

MAX_OUTPUT_BYTES = 64 * 1024


@dataclass(frozen=True)
class Attempt:
    task: Task
    passed: bool
    trajectory: bytes
    """The attempt's record, content-addressed and signed as evidence."""


class Solver(Protocol):
    @property
    def name(self) -> str: ...

    def solve(self, rom_digest: str, task: Task) -> Attempt: ...


@dataclass(frozen=True)
class ReferenceSolver:
    competence: float
    name: str = "reference"

    def solve(self, rom_digest: str, task: Task) -> Attempt:
        digest = hashlib.sha256(f"{rom_digest}|{task.id}|acx-benchmark-v1".encode()).hexdigest()
        u = int(digest[:13], 16) / 2**52
        p = 1.0 / (1.0 + math.exp(-0.6 * (self.competence - task.difficulty)))
        passed = u < p
        record = {
            "solver": self.name,
            "task": task.id,
            "difficulty": task.difficulty,
            "romDigest": rom_digest,
            "draw": u,
            "passProbability": p,
            "passed": passed,
        }
        return Attempt(task, passed, canonicalize(record))


@dataclass(frozen=True)
class CommandSolver:
    """Run ``argv`` once per task (see the module docstring for the sandbox rules)."""

    argv: Sequence[str]
    timeout_sec: float = 300.0
    extra_env: Mapping[str, str] = field(default_factory=dict)
    name: str = "command"

    def __post_init__(self) -> None:
        if not self.argv:
            raise InvalidRequest("a solver command needs at least the program")
        if self.timeout_sec <= 0:
            raise InvalidRequest("a solver time limit is positive")

    def solve(self, rom_digest: str, task: Task) -> Attempt:
        workdir = Path(tempfile.mkdtemp(prefix="engram-solve-"))
        try:
            return self._run(rom_digest, task, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _run(self, rom_digest: str, task: Task, workdir: Path) -> Attempt:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(workdir),
            "TMPDIR": str(workdir),
            "LANG": "C.UTF-8",
            "ACX_ROM_DIGEST": rom_digest,
            "ACX_TASK_ID": task.id,
            **self.extra_env,
        }
        stdout_path, stderr_path = workdir / ".stdout", workdir / ".stderr"
        started = time.monotonic()
        timed_out = False
        with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
            process = subprocess.Popen(
                list(self.argv),
                cwd=workdir,
                env=env,
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            try:
                process.communicate(canonicalize(task.to_wire()), timeout=self.timeout_sec)
            except subprocess.TimeoutExpired:
                timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        elapsed = time.monotonic() - started
        produced = _graded(workdir, task.artifacts)
        passed = (
            not timed_out
            and process.returncode == 0
            and all(produced.get(path) == sha for path, sha in task.artifacts.items())
        )
        record = {
            "solver": self.name,
            "task": task.id,
            "difficulty": task.difficulty,
            "romDigest": rom_digest,
            "exitCode": None if timed_out else process.returncode,
            "timedOut": timed_out,
            "seconds": round(elapsed, 3),
            "stdout": _tail(stdout_path),
            "stderr": _tail(stderr_path),
            "artifacts": produced,
            "passed": passed,
        }
        return Attempt(task, passed, canonicalize(record))


def _graded(workdir: Path, pinned: Mapping[str, str]) -> dict[str, str]:
    """SHA-256 of each pinned artifact the run produced (regular files inside workdir only)."""
    found: dict[str, str] = {}
    root = workdir.resolve()
    for name in pinned:
        relative = PurePosixPath(name)
        if relative.is_absolute() or ".." in relative.parts:
            continue
        path = (workdir / relative).resolve()
        if not path.is_relative_to(root) or path.is_symlink() or not path.is_file():
            continue
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 16), b""):
                digest.update(block)
        found[name] = digest.hexdigest()
    return found


def _tail(path: Path) -> str:
    size = path.stat().st_size
    with path.open("rb") as handle:
        if size > MAX_OUTPUT_BYTES:
            handle.seek(size - MAX_OUTPUT_BYTES)
        return handle.read().decode("utf-8", errors="replace")


__all__ = ["MAX_OUTPUT_BYTES", "Attempt", "CommandSolver", "ReferenceSolver", "Solver"]
