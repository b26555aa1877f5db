"""``engram serve`` as a user meets it on day one (issue 32, point 5): a second
``serve --demo`` on a busy port answers before it imports the server (it took 28 s on a loaded
machine, all of it imports), and ``serve --ote FILE`` says the manifest came from ``--ote``,
not from ``ENGRAM_OTE``, a variable the user never set."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from process_kit import interrupt

# The server's heavy dependencies: a port in use must be answered without importing any of
# them, which is what makes the answer immediate.
HEAVY = ("uvicorn", "starlette", "numpy", "engram.provider", "engram.mcp", "engram.memory")
SERVE_AND_REPORT = (
    "import sys\n"
    "from engram.cli import cli, run_cli\n"
    "code = run_cli(cli, sys.argv[1:])\n"
    f"print(code, sorted(name for name in {HEAVY!r} if name in sys.modules))\n"
)


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "ENGRAM_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    for name in ("ENGRAM_DATABASE_URL", "ENGRAM_PUBLIC_URL", "ENGRAM_OTE"):
        env.pop(name, None)
    return env


@pytest.mark.req("engram.cli.serve-port-first")
def test_a_busy_port_is_answered_before_the_server_is_imported(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-c", SERVE_AND_REPORT, "serve", "--demo", "--port", str(port)],
            capture_output=True,
            text=True,
            env=_env(home),
            timeout=60,
            check=False,
        )
    assert (done.stdout, done.stderr) == ("1 []\n", f"error: port {port} is in use\n")
    assert not home.exists()


@pytest.mark.req("engram.cli.serve-ote-origin")
def test_serve_ote_names_the_option_as_the_manifests_source(tmp_path: Path) -> None:
    home = tmp_path / "home"
    manifest = tmp_path / "seat.toml"
    printed = subprocess.run(
        [sys.executable, "-c", "from engram.cli import main; main()", "default-ote"],
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=60,
        check=True,
    )
    manifest.write_text(printed.stdout, encoding="utf-8")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-c", "from engram.cli import main; main()", "serve",
         "--port", str(port), "--ote", str(manifest)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(home),
        cwd=tmp_path,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        banner = [process.stdout.readline() for _ in range(2)]
    finally:
        interrupt(process)
    mcp = banner[1]
    assert mcp.startswith(f"mcp: http://127.0.0.1:{port}/mcp")
    assert f"seat manifest {manifest.resolve()} from --ote;" in mcp
    assert "ENGRAM_OTE" not in mcp
