"""``engram serve`` as a user meets it (docs/spec/cli.md "engram serve"): a bad port is refused
before anything is printed or created; the socket is bound before the banner; a busy port is one
line and leaves nothing behind; ``--demo`` reuses one demo subject and one token, kept in a 0600
file whose path (never the token) is printed.

Before: ``--port 99999`` printed "serving ...:99999" and listened elsewhere; a second
``serve --demo`` on a busy port printed a banner, issued another 30-day all-permission token,
then died with uvicorn's ``[Errno 98]``; every ``--demo`` start added a token.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from process_kit import interrupt

ENGRAM = [sys.executable, "-c", "from engram.cli import main; main()"]


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "ENGRAM_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    env.pop("ENGRAM_DATABASE_URL", None)
    env.pop("ENGRAM_PUBLIC_URL", None)
    return env


def _engram(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ENGRAM, *args], capture_output=True, text=True, env=_env(home), timeout=60, check=False
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve_demo(home: Path, port: int) -> tuple[list[str], str]:
    """Start ``serve --demo``, fetch the export with the printed curl's token file, stop it."""
    process = subprocess.Popen(
        [*ENGRAM, "serve", "--demo", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(home),
    )
    assert process.stdout is not None
    banner: list[str] = []
    try:
        for line in process.stdout:
            banner.append(line.rstrip("\n"))
            if line.startswith("serving "):
                break
        token_lines = [line for line in banner if line.startswith("token:")]
        assert token_lines, "\n".join(banner)
        path = Path(token_lines[0].split()[2])
        token = path.read_text(encoding="ascii").strip()
        # Bound before the banner: this first request is queued, never refused.
        export = httpx.get(
            f"http://127.0.0.1:{port}/v1/context",
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert export.status_code == 200, export.text
        assert export.json()["subject"]["display_name"] == "Ada Example"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        return banner, token
    finally:
        interrupt(process)


def _counts(home: Path) -> tuple[int, int]:
    with sqlite3.connect(home / "engram.db") as db:
        subjects = db.execute("SELECT count(*) FROM context_subjects").fetchone()[0]
        tokens = db.execute("SELECT count(*) FROM context_tokens").fetchone()[0]
    return int(subjects), int(tokens)


@pytest.mark.req("engram.cli.serve-binds-first")
@pytest.mark.parametrize("port", ["0", "99999", "-1", "http"])
def test_a_bad_port_is_refused_before_anything_is_printed_or_created(
    tmp_path: Path, port: str
) -> None:
    home = tmp_path / "home"
    done = _engram(home, "serve", "--demo", "--port", port)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("error: usage: Invalid value for '--port'")
    assert done.stderr.count("\n") == 1
    assert not home.exists()


@pytest.mark.req("engram.cli.serve-binds-first")
def test_a_port_in_use_is_one_line_and_nothing_is_created(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _engram(home, "serve", "--demo", "--port", str(port))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"error: port {port} is in use\n"
    assert not home.exists()  # no database, no demo token, no ENGRAM_HOME


@pytest.mark.req("engram.cli.serve-binds-first", "engram.cli.demo-reused")
@pytest.mark.slow
def test_serve_demo_reuses_the_demo_subject_and_token_and_never_prints_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first, token = _serve_demo(home, _free_port())
    again, same = _serve_demo(home, _free_port())

    assert same == token
    assert _counts(home) == (1, 1)
    for banner in (first, again):
        assert all(token not in line for line in banner)
        assert any(f"(cat {home / 'engram.demo-token'})" in line for line in banner)


@pytest.mark.req("engram.cli.demo-reused")
def test_engram_demo_reuses_what_serve_demo_made(tmp_path: Path) -> None:
    home = tmp_path / "home"
    one = _engram(home, "demo", "--json")
    two = _engram(home, "demo")
    three = _engram(home, "demo", "--json")
    assert one.returncode == two.returncode == three.returncode == 0
    assert one.stdout == three.stdout
    assert '"token": "eng_' in one.stdout
    assert "eng_" not in two.stdout
    assert _counts(home) == (1, 1)


@pytest.mark.req("engram.cli.demo-reused")
def test_a_demo_token_file_others_can_read_is_replaced_and_its_token_revoked(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    assert _engram(home, "demo").returncode == 0
    path = home / "engram.demo-token"
    leaked = path.read_text(encoding="ascii").strip()
    path.chmod(0o644)

    assert _engram(home, "demo").returncode == 0

    fresh = path.read_text(encoding="ascii").strip()
    assert fresh != leaked
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with sqlite3.connect(home / "engram.db") as db:
        states = dict(db.execute("SELECT token_id, revoked_at IS NOT NULL FROM context_tokens"))
    assert sorted(states.values()) == [0, 1]


@pytest.mark.req("engram.cli.demo-reused")
def test_the_demo_token_is_renewed_when_it_no_longer_works(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _engram(home, "demo").returncode == 0
    path = home / "engram.demo-token"
    with sqlite3.connect(home / "engram.db") as db:
        db.execute("UPDATE context_tokens SET revoked_at = created_at")
    assert _engram(home, "demo").returncode == 0
    assert _counts(home) == (1, 2)
    token = path.read_text(encoding="ascii").strip()
    fetch = _engram(home, "token", "list", "--subject", _subject(home))
    assert fetch.stdout.count("revoked") == 1
    assert token.startswith("eng_")


def _subject(home: Path) -> str:
    with sqlite3.connect(home / "engram.db") as db:
        return str(db.execute("SELECT id FROM context_subjects").fetchone()[0])
