"""``engram context fetch`` and ``engram chat`` against the real provider on loopback.

The provider runs under uvicorn on 127.0.0.1 with its clock at the wall clock's time, because the
CLI, like any runtime, judges expiry by the wall clock. ``engram chat`` runs once as a real
subprocess, configured only through the environment the conformance harness sets
(ENGRAM_PROVIDER_URL, ENGRAM_TOKEN, OPENAI_BASE_URL), against a recording OpenAI-compatible server.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from runtime_harness import LoopbackServer, RealProvider, RecordingLLM

from engram.cli import cli, run_cli
from engram.context import list_pending_corrections
from engram.core.canonical import canonicalize, parse_strict
from engram.runtime import EngramClient, verify_export


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


@pytest.fixture
def served() -> Iterator[tuple[RealProvider, str]]:
    """The provider on a loopback socket, its clock at the wall clock's time; and its URL."""
    with (
        RealProvider.start(now=datetime.now(UTC)) as provider,
        LoopbackServer(provider.app) as server,
    ):
        yield provider, server.url


def fetch(url: str, token: str, *extra: str) -> list[str]:
    return ["context", "fetch", "--provider", url, "--token", token, *extra]


def export_prompt(provider: RealProvider, url: str) -> str:
    """What the provider's export says to inject, read with the SDK."""
    config = provider.config(provider_url=url)
    with EngramClient(config) as engram:
        return engram.fetch().system_prompt()


@pytest.mark.req("engram.runtime.cli-fetch", "engram.context.r1.fetch-at-start")
def test_context_fetch_prints_the_verified_system_prompt(
    served: tuple[RealProvider, str], capsys: pytest.CaptureFixture[str]
) -> None:
    provider, url = served
    assert run_cli(cli, fetch(url, provider.demo.token)) == 0
    out = capsys.readouterr().out
    assert out.startswith("User: Ada Example (Europe/London).\n")
    assert out.rstrip("\n") == export_prompt(provider, url)


@pytest.mark.req("engram.runtime.cli-fetch", "engram.context.r3.scoped-requests")
def test_context_fetch_json_is_the_whole_verified_export(
    served: tuple[RealProvider, str], capsys: pytest.CaptureFixture[str]
) -> None:
    provider, url = served
    assert run_cli(cli, fetch(url, provider.demo.token, "--scope", "professional", "--json")) == 0
    export = _parsed(capsys.readouterr().out)
    assert export["scope"] == "professional"
    with EngramClient(provider.config(provider_url=url)) as engram:
        keys = engram.keys()
    # The printed JSON still verifies: nothing was dropped or altered on the way out.
    view = verify_export(canonicalize(export), keys, now=datetime.now(UTC))
    assert {b.category for b in view.beliefs}.isdisjoint({"health", "financial"})


@pytest.mark.req("engram.runtime.cli-fetch", "engram.context.r1.reject-expired")
def test_context_fetch_refuses_an_expired_export_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    thirteen_hours_ago = datetime.now(UTC) - timedelta(hours=13)
    with (
        RealProvider.start(now=thirteen_hours_ago) as provider,
        LoopbackServer(provider.app) as server,
    ):
        code = run_cli(cli, fetch(server.url, provider.demo.token))
    captured = capsys.readouterr()
    assert code == 1
    assert captured.out == ""
    assert captured.err.startswith("error: export_expired: export expired at ")
    assert captured.err.count("\n") == 1


@pytest.mark.req("engram.runtime.cli-fetch")
def test_context_fetch_reads_the_environment_and_reports_a_bad_token(
    served: tuple[RealProvider, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, url = served
    monkeypatch.setenv("ENGRAM_PROVIDER_URL", url)
    monkeypatch.setenv("ENGRAM_TOKEN", "eng_wrong")
    assert run_cli(cli, ["context", "fetch"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: unauthorized: GET /v1/context answered HTTP 401")
    assert "eng_wrong" not in err


@pytest.mark.req(
    "engram.runtime.chat-injects",
    "engram.runtime.chat-correct",
    "engram.context.r1.inject",
    "engram.context.r2.propose-correction",
)
def test_engram_chat_end_to_end_injects_the_verified_context(
    served: tuple[RealProvider, str],
) -> None:
    provider, url = served
    job = provider.belief_id("professional")
    env = {
        **os.environ,
        "ENGRAM_PROVIDER_URL": url,
        "ENGRAM_TOKEN": provider.demo.token,
        "ENGRAM_RUNTIME_ID": "chat-e2e",
    }
    with RecordingLLM(reply="Sure") as llm:
        env["OPENAI_BASE_URL"] = llm.base_url
        typed = f"Hello!\n/correct {job} Works as a data scientist.\nWhat is my job?\n"
        done = subprocess.run(
            [sys.executable, "-c", "from engram.cli import main; main()", "chat"],
            input=typed,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    prompt = export_prompt(provider, url)
    assert llm.system_prompts() == [prompt, prompt]
    assert [m["content"] for m in llm.requests[1]["messages"][1:]] == [
        "Hello!",
        "Sure (1)",
        "What is my job?",
    ]
    assert "Works as a data engineer" in prompt  # the correction is not applied locally
    assert done.stdout.splitlines() == [
        "Sure (1)",
        f"correction {done.stdout.split()[3]} for {job}: pending_user_confirmation "
        "(the context changes once the user confirms it)",
        "Sure (2)",
    ]
    pending = list_pending_corrections(provider.store, provider.demo.subject.id)
    assert [(c.belief_id, c.runtime_id) for c in pending] == [(job, "chat-e2e")]


@pytest.mark.req("engram.runtime.chat-injects", "engram.context.r1.reject-expired")
def test_engram_chat_refuses_to_start_without_a_verified_export(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    thirteen_hours_ago = datetime.now(UTC) - timedelta(hours=13)
    with (
        RealProvider.start(now=thirteen_hours_ago) as provider,
        LoopbackServer(provider.app) as server,
        RecordingLLM() as llm,
    ):
        monkeypatch.setattr(sys, "stdin", io.StringIO("Hello?\n"))
        code = run_cli(
            cli,
            [
                "chat",
                "--provider",
                server.url,
                "--token",
                provider.demo.token,
                "--llm-base-url",
                llm.base_url,
            ],
        )
    assert code == 1
    err = capsys.readouterr().err
    assert "refusing to start: export_expired: export expired at" in err
    assert llm.requests == []


@pytest.mark.req("engram.runtime.cli-fetch")
def test_chat_with_a_refused_token_is_one_line_before_any_llm_call(
    served: tuple[RealProvider, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Issue 32: every command that takes a token says in one line that it was refused.
    _, url = served
    monkeypatch.setenv("ENGRAM_TOKEN", "eng_wrong")
    args = ["chat", "--provider", url, "--llm-base-url", "http://127.0.0.1:9/v1"]
    assert run_cli(cli, args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "unauthorized" in err
    assert "HTTP 401" in err
    assert "eng_wrong" not in err
