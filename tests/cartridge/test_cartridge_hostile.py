"""Hostile cartridges through the CLI: a clear error and exit code, no traceback, bounded memory
(an address-space limit set with ``resource`` in the child) and bounded time (issue 15)."""

from __future__ import annotations

import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from kit import REFERENCE, build_sample

LIMIT = 1536 * 1024**2
PEAKS: dict[str, int] = {}


def _run(*args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    done = subprocess.run(
        [sys.executable, "-c", "from engram.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=cap,
        check=False,
    )
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return done, max(peak, before)


def _bomb(tmp: Path, rows: int, size: int) -> Path:
    path = build_sample(tmp, name=f"bomb-{rows}.acx")
    packed = zlib.compress(b"\0" * size, 9)
    with sqlite3.connect(path) as conn:
        for i in range(rows):
            conn.execute(
                "INSERT INTO sqlar VALUES (?, 420, 0, ?, ?)",
                (f"rom/knowledge/b{i}.md", size, packed),
            )
    return path


def _cases(tmp: Path) -> dict[str, tuple[Path, str]]:
    cases: dict[str, tuple[Path, str]] = {}
    fifo = tmp / "fifo.acx"
    os.mkfifo(fifo)
    cases["fifo"] = (fifo, "not a regular file")
    cases["one-object-over-limit"] = (_bomb(tmp, 1, 80 * 1024**2), "object limit")
    cases["total-over-budget"] = (_bomb(tmp, 6, 60 * 1024**2), "budget")
    truncated = tmp / "truncated.acx"
    truncated.write_bytes(REFERENCE.read_bytes()[:5000])
    cases["truncated"] = (truncated, "truncated")
    wrong = tmp / "wrong.acx"
    data = bytearray(REFERENCE.read_bytes())
    data[68:72] = b"NOPE"
    wrong.write_bytes(bytes(data))
    cases["application-id"] = (wrong, "application_id")
    traversal = tmp / "traversal.acx"
    shutil.copyfile(REFERENCE, traversal)
    with sqlite3.connect(traversal) as conn:
        conn.execute(
            "UPDATE sqlar SET name = '../../etc/passwd' WHERE name = 'rom/knowledge/SKILLS.md'"
        )
    cases["traversal"] = (traversal, "traversal")
    utf8 = tmp / "utf8.acx"
    shutil.copyfile(REFERENCE, utf8)
    with sqlite3.connect(utf8) as conn:
        conn.execute(
            "UPDATE cartridge SET value = CAST(x'ff fe 41' AS TEXT) WHERE key = 'acx.agent_name'".replace(  # noqa: E501
                " fe 41", "fe41"
            )
        )
    cases["invalid-utf8"] = (utf8, "malformed")
    return cases


@pytest.mark.req(
    "engram.cartridge.hostile-files",
    "engram.cartridge.inflate-budget",
    "engram.cartridge.portable-paths",
)
def test_hostile_cartridges_fail_cleanly_in_bounded_memory(tmp_path: Path) -> None:
    for name, (path, expected) in _cases(tmp_path).items():
        for verb in ("verify", "inspect"):
            done, peak = _run("cartridge", verb, str(path))
            assert done.returncode == 2, (name, verb, done.stdout, done.stderr)
            assert "Traceback" not in done.stderr, (name, done.stderr)
            assert done.stderr.startswith("error: "), (name, done.stderr)
            assert expected in done.stderr, (name, done.stderr)
            PEAKS[f"{name}/{verb}"] = peak
    largest = PEAKS["total-over-budget/verify"]
    print(f"\npeak RSS of the largest hostile cartridge (6 x 60 MiB bombs): {largest // 1024} MiB")
    assert largest < 700 * 1024  # KiB: bounded by the 256 MiB budget plus the interpreter
