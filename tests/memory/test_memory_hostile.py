"""Hostile local input (issue 15 point 6, issue 11's error messages): each case once crashed,
hung or exhausted memory; now each is one clear line and an exit code, in bounded memory
(``RLIMIT_AS`` on the subprocess) and bounded time. docs/spec/memory-manifest.md "Untrusted
manifests", docs/spec/memory-cli.md "record --from".
"""

from __future__ import annotations

import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from memory_kit import manifest_text

ENGRAM = [sys.executable, "-c", "from engram.cli import main; main()"]
MEMORY_LIMIT = 768 << 20  # the whole process: interpreter, numpy, tantivy, and the input


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run(
    *args: str, cwd: Path, stdin: int | None = None, timeout: float = 60
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*ENGRAM, *args],
        cwd=cwd,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_limited,
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "OPENBLAS_NUM_THREADS": "1"},
    )


def _finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def _one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.req("engram.memory.manifest-untrusted")
def test_deeply_nested_toml_is_a_clear_error_not_a_recursion_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    code, _, err = _finish(_run("ote", "check", str(deep), cwd=tmp_path))
    assert code == 2
    line = _one_line_error(err)
    assert "nested too deeply" in line
    assert "RecursionError" not in err


@pytest.mark.req("engram.memory.manifest-untrusted")
def test_a_catastrophic_pattern_runs_in_linear_time_and_non_linear_ones_are_refused(
    tmp_path: Path,
) -> None:
    seat = tmp_path / "ote.toml"
    seat.write_text(
        manifest_text().replace(
            'entity_patterns = ["ADR-\\\\d{4}", "K\\\\d{2}"]', 'entity_patterns = ["(a+)+$"]'
        )
    )
    assert "(a+)+$" in seat.read_text()
    code, out, err = _finish(_run("ote", "check", str(seat), cwd=tmp_path))
    assert code == 0, err
    # Before: a backtracking engine took exponential time on this text (33 a's and a '!').
    text = "a" * 33 + "!"
    db = f"sqlite://{tmp_path / 'engram.db'}"
    code, out, err = _finish(
        _run("record", text, "--kind", "fact", "--ote", str(seat), "--database", db, cwd=tmp_path),
        timeout=30,
    )
    assert code == 0, err
    assert out.startswith("recorded ")
    # A 100,000-character memory against the same pattern: still immediate.
    long_text = "a" * 99_999 + "!"
    code, _, err = _finish(
        _run(
            "record",
            long_text,
            "--kind",
            "fact",
            "--ote",
            str(seat),
            "--database",
            db,
            cwd=tmp_path,
        ),
        timeout=30,
    )
    assert code == 0, err
    for bad, why in (("(a)\\\\1", "backreference"), ("(?=a)b", "lookahead")):
        seat.write_text(
            manifest_text().replace(
                'entity_patterns = ["ADR-\\\\d{4}", "K\\\\d{2}"]', f'entity_patterns = ["{bad}"]'
            )
        )
        code, _, err = _finish(_run("ote", "check", str(seat), cwd=tmp_path))
        assert code == 2, why
        line = _one_line_error(err)
        assert "ontology.entity_patterns" in line
        assert "RE2" in line


@pytest.mark.req("engram.memory.cli-record-stream")
def test_record_from_refuses_an_endless_line_in_bounded_memory(tmp_path: Path) -> None:
    seat = tmp_path / "ote.toml"
    seat.write_text(manifest_text())
    db = f"sqlite://{tmp_path / 'engram.db'}"
    proc = _run(
        "record",
        "--from",
        "-",
        "--ote",
        str(seat),
        "--database",
        db,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
    )
    assert proc.stdin is not None
    sent = 0

    def feed() -> None:
        # 1 GiB without a newline: more than the process may hold at all.
        nonlocal sent
        chunk = '{"text": "' + "x" * (1 << 20)
        try:
            for _ in range(1024):
                proc.stdin.write(chunk)  # type: ignore[union-attr]
                sent += len(chunk)
        except (OSError, ValueError):
            pass  # the command stopped reading and exited: what the test wants

    writer = threading.Thread(target=feed)
    writer.start()
    # The writer ends when the command stops reading (broken pipe) or after 1 GiB. Only then
    # may stdin close: communicate() closes it at once, and a command that has not yet read a
    # starved writer's first megabyte would see a clean EOF instead of the long line.
    writer.join(timeout=60)
    assert not writer.is_alive(), "the command neither read the line to its end nor stopped"
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    line = _one_line_error(err)
    assert line == "error: invalid_request: -:1: line is longer than 1,048,576 bytes"
    assert sent < 64 << 20  # it stopped reading long before the end


@pytest.mark.req("engram.memory.cli-line-errors")
@pytest.mark.parametrize(
    ("command", "lines", "expected"),
    [
        (
            "record",
            ['{"text": "fine", "kind": "fact"}', '{"text": "broken", "kind": }'],
            "{path}:2:28: not I-JSON: syntax (Expecting value)",
        ),
        (
            "recall",
            ['"a good query"', '{"query": "dup", "query": "again"}'],
            "{path}:2:18: not I-JSON: duplicate_member",
        ),
    ],
)
def test_a_bad_json_line_is_named_by_file_line_and_column_once(
    tmp_path: Path, command: str, lines: list[str], expected: str
) -> None:
    seat = tmp_path / "ote.toml"
    seat.write_text(manifest_text())
    source = tmp_path / "input.jsonl"
    source.write_text("\n".join(lines) + "\n")
    flag = "--from" if command == "record" else "--batch"
    db = f"sqlite://{tmp_path / 'engram.db'}"
    code, out, err = _finish(
        _run(command, flag, str(source), "--ote", str(seat), "--database", db, cwd=tmp_path)
    )
    assert code == 2
    line = _one_line_error(err)
    assert line.startswith(f"error: invalid_request: {source}:2:")
    assert line.count("not I-JSON") == 1
    assert line.split("invalid_request: ", 1)[1].startswith(expected.format(path=source))
    if command == "record":
        # Checked before anything is written: the good first line is not recorded either.
        code, out, _ = _finish(
            _run("status", "--json", "--ote", str(seat), "--database", db, cwd=tmp_path)
        )
        assert '"memories": 0' in out
