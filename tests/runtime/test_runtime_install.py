"""``pip install "engram-memory-stack[runtime]"`` into a fresh virtual environment brings the SDK
and nothing of the server: no starlette, uvicorn, psycopg or mcp (runtime depends on core only).

A real install from this source tree with its declared dependencies, taken by pip from its cache
or the package index, so it is slow (tens of seconds) and marked ``slow``; CI runs it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SERVER_ONLY = ("starlette", "uvicorn", "psycopg", "mcp", "rich", "numpy")

PROBE = f"""
import importlib.util, sys
import engram.runtime
from engram.runtime import EngramClient, RuntimeConfig
config = RuntimeConfig("https://memory.example", "eng_token", runtime_id="probe")
EngramClient(config).close()
present = [name for name in {SERVER_ONLY!r} if importlib.util.find_spec(name) is not None]
print("present:", present)
print("loaded:", sorted(m for m in sys.modules if m.split(".")[0] in {SERVER_ONLY!r}))
"""


@pytest.mark.slow
@pytest.mark.req("engram.runtime.core-only-install")
def test_the_runtime_extra_installs_and_imports_without_server_dependencies(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    install = subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--quiet",
            f"{REPO}[runtime]",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    probe = subprocess.run(
        [python, "-c", PROBE], capture_output=True, text=True, timeout=120, check=False
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.splitlines() == ["present: []", "loaded: []"]

    # The `engram` command of that install runs what it can and names the extra for the rest.
    engram = str(venv / "bin" / "engram")
    canonical = subprocess.run(
        [engram, "canonicalize", "-"],
        input='{"b":1,"a":2}',
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (canonical.returncode, canonical.stdout) == (0, '{"a":2,"b":1}')
    fetch_help = subprocess.run(
        [engram, "context", "fetch", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert fetch_help.returncode == 0
    assert "--provider" in fetch_help.stdout
    serve = subprocess.run(
        [engram, "serve", "--demo"], capture_output=True, text=True, timeout=120, check=False
    )
    assert serve.returncode == 1
    assert serve.stderr.startswith("error: missing_dependency: `engram serve` needs the server")
    assert "pip install 'engram-memory-stack[server]'" in serve.stderr
    assert "Traceback" not in serve.stderr
