"""Hostile conversation files at ``engram record --from``: one ``error:`` line, no traceback,
within 10 s and 300 MB of the child's own peak RSS, and nothing recorded (docs/spec/limits.md)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from memory_kit import manifest_text

from peak_kit import run_python_peak

WALL_BOUND = 10.0
RSS_BOUND_KIB = 300 * 1024
CLI = "import sys; from engram.cli import cli, run_cli; sys.exit(run_cli(cli, sys.argv[1:]))"
MIB = 1024 * 1024


def _write(path: Path, case: str) -> None:
    with path.open("w") as f:
        if case == "100000 messages":
            for i in range(100_000):
                f.write(f'{{"role": "user", "content": "note {i}"}}\n')
        elif case == "10 MB of text":
            f.write("[")
            f.write(
                ",".join(f'{{"role": "user", "content": "{"z" * 90_000} {i}"}}' for i in range(117))
            )
            f.write("]")
        elif case == "11 million empty lists":
            f.write('{"messages": [' + ",".join(["[]"] * (32 * MIB // 3 - 10)) + "]}")
        else:  # "a 40 MiB file"
            f.write('[{"role": "user", "content": "' + "x" * (40 * MIB) + '"}]')


@pytest.mark.req("engram.memory.conversation.bounds", "engram.memory.conversation.cli")
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("100000 messages", "100,000 messages is more than 20,000"),
        ("10 MB of text", "more than 8,388,608 bytes of text"),
        ("11 million empty lists", "more than 1,000,000 JSON values"),
        ("a 40 MiB file", "a conversation file is at most 33,554,432 bytes"),
    ],
)
def test_a_hostile_conversation_file_is_one_line_in_bounded_time_and_memory(
    case: str, expected: str, tmp_path: Path
) -> None:
    (tmp_path / ".engram").mkdir()
    (tmp_path / ".engram" / "ote.toml").write_text(manifest_text())
    source = tmp_path / "chat.json"
    _write(source, case)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "OPENAI_"))}
    env["ENGRAM_HOME"] = str(tmp_path / "home")
    started = time.monotonic()
    done, rss_kib = run_python_peak(
        CLI, ["record", "--from", str(source)], timeout=60, cwd=tmp_path, env=env
    )
    elapsed = time.monotonic() - started
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]
    assert done.stderr.startswith("error: invalid_request: "), done.stderr[-500:]
    assert expected in done.stderr
    assert "nothing was recorded" in done.stderr
    print(f"\n{case}: {elapsed:.2f} s, {rss_kib // 1024} MiB")
    assert elapsed < WALL_BOUND, elapsed
    assert 0 < rss_kib < RSS_BOUND_KIB, rss_kib
    assert not (tmp_path / "home" / "engram.db").exists() or _memories(tmp_path) == 0


def _memories(tmp_path: Path) -> int:
    import sqlite3

    with sqlite3.connect(tmp_path / "home" / "engram.db") as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "memory_items" not in tables:
            return 0
        return int(db.execute("SELECT COUNT(*) FROM memory_items").fetchone()[0])
