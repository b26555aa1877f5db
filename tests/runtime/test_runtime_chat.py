"""``engram chat`` after an LLM error, ``/beliefs``, and tokens that stay out of argv.

Before: the first LLM error ended the session (exit 1, the conversation gone), ``/correct``
needed belief ids chat never showed, and ``OPENAI_API_KEY`` was named neither in ``--help``
nor in the README. The LLM is ``openai_peer`` (tests/conftest.py), an OpenAI-compatible server
written without engram's code that fails its first ``fail_first`` requests with HTTP 503.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from runtime_harness import LoopbackServer, RealProvider

from engram.cli import cli, run_cli

ENGRAM = [sys.executable, "-c", "from engram.cli import main; main()"]


Peer = Any  # conftest.OpenAIPeer: .url (the /v1 base), .requests (path, body) in order


def _messages(peer: Peer) -> list[Any]:
    return [body["messages"] for _, body in peer.requests]


@pytest.fixture
def served() -> Iterator[tuple[RealProvider, str]]:
    with (
        RealProvider.start(now=datetime.now(UTC)) as provider,
        LoopbackServer(provider.app) as server,
    ):
        yield provider, server.url


def _token_file(provider: RealProvider, tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(provider.demo.token + "\n", encoding="ascii")
    return path


def _chat(
    url: str, token_file: Path, llm_url: str, typed: str, *extra: str, **env: str
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "OPENAI_"))}
    return subprocess.run(
        [*ENGRAM, "chat", "--provider", url, "--token-file", str(token_file), *extra],
        input=typed,
        capture_output=True,
        text=True,
        env={**clean, "OPENAI_BASE_URL": llm_url, **env},
        timeout=60,
        check=False,
    )


@pytest.mark.req("engram.cli.chat-llm-retry", "engram.cli.token-from-env-or-file")
def test_an_llm_error_loses_the_turn_not_the_session(
    served: tuple[RealProvider, str], tmp_path: Path, openai_peer: Callable[..., Peer]
) -> None:
    provider, url = served
    llm = openai_peer(fail_first=1)
    typed = "What is my job?\nWhat is my job?\nAnd then?\n"
    done = _chat(url, _token_file(provider, tmp_path), llm.url, typed)

    assert done.returncode == 1  # no terminal: a script still learns that a turn failed
    assert done.stdout.splitlines() == ["re: What is my job?", "re: And then?"]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors[0].startswith("error: the LLM at ")
    assert "HTTP 503" in errors[0]
    assert errors[0].endswith("(this turn was not answered)")
    assert errors[-1] == "error: 1 turn(s) went unanswered (see above)"
    # The retry asks exactly what the failed turn asked; the failure left no trace behind.
    calls = _messages(llm)
    assert calls[0] == calls[1]
    assert [m["role"] for m in calls[2]] == ["system", "user", "assistant", "user"]


@pytest.mark.req("engram.cli.chat-llm-retry")
def test_a_session_whose_llm_answers_ends_well(
    served: tuple[RealProvider, str], tmp_path: Path, openai_peer: Callable[..., Peer]
) -> None:
    provider, url = served
    done = _chat(url, _token_file(provider, tmp_path), openai_peer().url, "Hello\n")
    assert (done.returncode, done.stdout) == (0, "re: Hello\n")


@pytest.mark.req("engram.cli.llm-endpoints")
def test_chat_takes_llm_base_url_before_openai_base_url_and_never_thalamus_url(
    served: tuple[RealProvider, str], tmp_path: Path, openai_peer: Callable[..., Peer]
) -> None:
    provider, url = served
    token_file = _token_file(provider, tmp_path)
    flag, env_llm, thalamus = openai_peer(), openai_peer(), openai_peer()
    runs = [
        _chat(url, token_file, env_llm.url, "Hi\n", *extra, THALAMUS_URL=thalamus.url)
        for extra in (["--llm-base-url", flag.url], [])
    ]
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert (len(flag.requests), len(env_llm.requests), len(thalamus.requests)) == (1, 1, 0)


@pytest.mark.req("engram.cli.chat-beliefs")
def test_beliefs_lists_the_ids_that_correct_takes(
    served: tuple[RealProvider, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    openai_peer: Callable[..., Peer],
) -> None:
    provider, url = served
    llm = openai_peer()
    job = provider.belief_id("professional")
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"/beliefs\n/correct {job} Data scientist\n"))
    monkeypatch.setenv("ENGRAM_TOKEN", provider.demo.token)
    code = run_cli(cli, ["chat", "--provider", url, "--llm-base-url", llm.url])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    listed = out[: len(provider.demo.beliefs)]
    assert sorted(line.split()[0] for line in listed) == sorted(b.id for b in provider.demo.beliefs)
    assert f"{job}  [professional] Works as a data engineer at a logistics company." in listed
    assert out[-1].startswith("correction ")
    assert f" for {job}: pending_user_confirmation" in out[-1]
    assert llm.requests == []


@pytest.mark.req("engram.cli.chat-llm-retry")
def test_chat_help_names_the_api_key_variable() -> None:
    done = subprocess.run(
        [*ENGRAM, "chat", "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0
    assert "$OPENAI_API_KEY" in done.stdout
    assert "--token-file" in done.stdout
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert "OPENAI_API_KEY" in readme
