"""Ctrl-C exits 130 everywhere (docs/spec/cli.md): a real SIGINT, sent to a real ``engram``
process while it waits (on stdin, on a socket, serving HTTP with one worker or two).

Before, click turned the interrupt into its Abort, which engram reported as "aborted" with exit
1. A prompt answered "no" is an Abort too, but not an interrupt: it still says "aborted", exit 1.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ENGRAM = [sys.executable, "-c", "from engram.cli import main; main()"]


def _default_sigint() -> None:
    # A child inherits an ignored SIGINT from some runners; a terminal's Ctrl-C would reach it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(
    args: list[str], home: Path, ready: str, stream: str = "stdout"
) -> subprocess.Popen[str]:
    env = {**os.environ, "ENGRAM_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    env.pop("ENGRAM_DATABASE_URL", None)
    process = subprocess.Popen(
        [*ENGRAM, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_default_sigint,
    )
    pipe = process.stdout if stream == "stdout" else process.stderr
    assert pipe is not None
    seen = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = pipe.readline()
        if not line:
            break
        seen.append(line)
        if ready in line:
            return process
    process.kill()
    out, err = process.communicate()
    raise AssertionError(f"{args} never printed {ready!r}:\n{''.join(seen)}{out}{err}")


def _interrupt(process: subprocess.Popen[str]) -> tuple[int, str]:
    process.send_signal(signal.SIGINT)
    try:
        _, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return process.returncode, err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                s.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
                if s.recv(12).startswith(b"HTTP/1.1 200"):
                    return
        time.sleep(0.2)
    raise AssertionError(f"nothing answers on port {port}")


@pytest.mark.req("engram.cli.interrupt-130")
@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "2"])
def test_ctrl_c_stops_serve_with_130(tmp_path: Path, workers: str) -> None:
    port = _free_port()
    process = _start(["serve", "--port", str(port), "--workers", workers], tmp_path, "serving ")
    _wait_listening(port)
    code, err = _interrupt(process)
    assert code == 130, err
    assert "Traceback" not in err


@pytest.mark.req("engram.cli.interrupt-130")
def test_ctrl_c_stops_a_command_waiting_on_stdin_with_130(tmp_path: Path) -> None:
    # canonicalize - blocks reading stdin, the way chat and record --from - do.
    process = subprocess.Popen(
        [*ENGRAM, "canonicalize", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    time.sleep(1.5)  # let it reach the read
    code, err = _interrupt(process)
    assert (code, err.strip()) == (130, "")


@pytest.mark.req("engram.cli.interrupt-130")
@pytest.mark.slow
def test_ctrl_c_stops_the_mcp_stdio_server_with_130(tmp_path: Path) -> None:
    ote = tmp_path / "ote.toml"
    seed = subprocess.run([*ENGRAM, "default-ote"], check=True, capture_output=True, text=True)
    ote.write_text(seed.stdout, encoding="utf-8")
    process = subprocess.Popen(
        [
            *ENGRAM,
            "mcp",
            "--ote",
            str(ote),
            "--db",
            str(tmp_path / "m.db"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    time.sleep(4)  # the server is up and reading stdin
    assert process.poll() is None
    code, err = _interrupt(process)
    assert code == 130, err
    assert "Traceback" not in err


@pytest.mark.req("engram.cli.interrupt-130")
def test_a_declined_prompt_is_not_an_interrupt(tmp_path: Path) -> None:
    done = subprocess.run(
        [*ENGRAM, "subject", "delete", "--subject", "s", "--db", str(tmp_path / "x.db")],
        input="n\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.endswith("aborted\n")
