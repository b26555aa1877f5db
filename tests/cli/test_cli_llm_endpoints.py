"""Which endpoint each remote model call goes to (docs/llm-and-embeddings.md "Precedence").

Two OpenAI-compatible peers (``openai_peer`` in tests/conftest.py), "manifest" and "thalamus",
record what reaches them;
the real ``engram`` command runs in a subprocess with a seat manifest that switches the remote
stages on. The manifest's endpoint beats ``$THALAMUS_URL``, stage by stage; ``$THALAMUS_URL``
serves a stage the manifest leaves without one; with neither, the command refuses to start and
names both; ``--llm-endpoint`` beats ``$THALAMUS_URL`` for distillation; ``$OPENAI_BASE_URL``
(``engram chat``'s) is never used by the memory engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ENGRAM = [sys.executable, "-c", "from engram.cli import main; main()"]
DIMS = 8


Peer = Any  # conftest.OpenAIPeer: .url (the /v1 base), .paths (what reached it)


@pytest.fixture
def servers(openai_peer: Callable[..., Peer]) -> tuple[Peer, Peer]:
    """Two recording peers: the one the manifest names, and the one $THALAMUS_URL names."""
    return openai_peer(dims=DIMS), openai_peer(dims=DIMS)


def _manifest(tmp_path: Path, retrieval: str) -> Path:
    text = subprocess.run(
        [*ENGRAM, "default-ote"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    head, _, _ = text.partition("[retrieval]")
    path = tmp_path / "ote.toml"
    path.write_text(head + retrieval, encoding="utf-8")
    return path


def _remote(embedding_endpoint: str | None, reranker_endpoint: str | None) -> str:
    lines = [
        "[retrieval]",
        'embedding_provider = "remote-openai"',
        'embedding_model = "m-embed"',
        f"embedding_dims = {DIMS}",
        "fail_open = false",
    ]
    if embedding_endpoint:
        lines.append(f'embedding_endpoint = "{embedding_endpoint}"')
    lines += ["", "[retrieval.reranker]", "enabled = true", 'model = "m-rerank"']
    if reranker_endpoint:
        lines.append(f'endpoint = "{reranker_endpoint.removesuffix("/v1")}"')
    return "\n".join(lines) + "\n"


def _engram(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "THALAMUS"))}
    base.pop("OPENAI_BASE_URL", None)
    return subprocess.run(
        [*ENGRAM, *args, "--db", str(tmp_path / "engram.db")],
        capture_output=True,
        text=True,
        env={**base, "ENGRAM_HOME": str(tmp_path / "home"), **env},
        timeout=60,
        check=False,
    )


def _record_and_recall(tmp_path: Path, manifest: Path, env: dict[str, str]) -> None:
    ote = ["--ote", str(manifest)]
    done = _engram(tmp_path, env, "record", "Run migrations first", "--kind", "procedure", *ote)
    assert done.returncode == 0, done.stderr
    done = _engram(tmp_path, env, "recall", "migrations", "--json", *ote)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["stages"]["rerank"] == "ok"


@pytest.mark.req("engram.cli.llm-endpoints")
def test_the_manifest_endpoints_beat_thalamus_url(
    tmp_path: Path, servers: tuple[Peer, Peer]
) -> None:
    manifest, thalamus = servers
    ote = _manifest(tmp_path, _remote(manifest.url, manifest.url))
    _record_and_recall(tmp_path, ote, {"THALAMUS_URL": thalamus.url})
    assert manifest.paths == ["/v1/embeddings", "/v1/embeddings", "/v1/rerank"]
    assert thalamus.paths == []


@pytest.mark.req("engram.cli.llm-endpoints")
def test_thalamus_url_serves_each_stage_the_manifest_leaves_open(
    tmp_path: Path, servers: tuple[Peer, Peer]
) -> None:
    manifest, thalamus = servers
    ote = _manifest(tmp_path, _remote(None, manifest.url))
    _record_and_recall(tmp_path, ote, {"THALAMUS_URL": thalamus.url})
    assert thalamus.paths == ["/v1/embeddings", "/v1/embeddings"]
    assert manifest.paths == ["/v1/rerank"]


@pytest.mark.req("engram.cli.llm-endpoints")
def test_openai_base_url_is_not_an_endpoint_for_the_memory_engine(
    tmp_path: Path, servers: tuple[Peer, Peer]
) -> None:
    manifest, _ = servers
    ote = _manifest(tmp_path, _remote(None, manifest.url))
    done = _engram(tmp_path, {"OPENAI_BASE_URL": manifest.url + "/v1"}, "status", "--ote", str(ote))
    assert done.returncode == 2
    assert done.stderr == (
        f"error: invalid_manifest: {ote}: retrieval.embedding_provider: 'remote-openai' needs "
        "retrieval.embedding_endpoint or THALAMUS_URL (no default)\n"
    )
    assert manifest.paths == []


@pytest.mark.req("engram.cli.llm-endpoints")
def test_distillation_takes_llm_endpoint_before_thalamus_url(
    tmp_path: Path, servers: tuple[Peer, Peer]
) -> None:
    flag, thalamus = servers
    ote = _manifest(tmp_path, "")
    episode = tmp_path / "episode.txt"
    episode.write_text("The deploy failed because migrations had not run.", encoding="utf-8")
    common = ["distill", str(episode), "--llm-model", "m-chat", "--ote", str(ote), "--json"]
    env = {"THALAMUS_URL": thalamus.url}

    chosen = _engram(tmp_path, env, *common, "--llm-endpoint", flag.url)
    fallback = _engram(tmp_path, env, *common)
    neither = _engram(tmp_path, {"OPENAI_BASE_URL": flag.url}, *common)

    assert chosen.returncode == fallback.returncode == 0, chosen.stderr + fallback.stderr
    assert json.loads(chosen.stdout)["memory"]["provenance"]["distiller"] == "llm:m-chat"
    assert flag.paths == ["/v1/chat/completions"]
    assert thalamus.paths == ["/v1/chat/completions"]
    assert neither.returncode == 2
    assert neither.stderr == (
        "error: invalid_request: --llm-model needs --llm-endpoint or THALAMUS_URL (no default)\n"
    )
