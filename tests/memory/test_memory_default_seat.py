"""New seats are semantic by default, and their manifest names every retrieval option.

Decisions: docs/spec/memory-manifest.md and docs/spec/memory-retrieval.md "Dense: the bundled
model" (issue 30, "Semantic by default").
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.core.clock import FixedClock
from engram.memory import (
    RecordInput,
    default_manifest_text,
    load_manifest,
    open_engine,
    parse_manifest,
    recall,
    record_many,
    remote_stages,
)
from engram.store import Store


def _retrieval_lines(manifest: str) -> tuple[list[str], list[str]]:
    """The [retrieval] and [retrieval.reranker] lines of a manifest (comments included)."""
    tail = manifest.split("\n[retrieval]\n", 1)[1]
    own, reranker = tail.split("\n[retrieval.reranker]\n", 1)
    return own.strip().splitlines(), reranker.strip().splitlines()


def _key(line: str) -> str:
    match = re.match(r"^(?:# )?(\w+) = ", line)
    assert match, f"not an option line: {line!r}"
    return match.group(1)


@pytest.mark.req("engram.memory.default-seat-semantic")
def test_default_ote_and_init_seats_use_the_bundled_model(tmp_path: Path) -> None:
    printed = CliRunner().invoke(cli, ["default-ote"])
    assert printed.exit_code == 0
    assert parse_manifest(printed.output, "x").retrieval.embedding_provider == "minilm-l6-v2"
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    done = CliRunner().invoke(cli, ["init", "--repo", str(repo)])
    assert done.exit_code == 0, done.output
    spec = load_manifest(repo / ".engram" / "ote.toml")
    assert spec.retrieval.embedding_provider == "minilm-l6-v2"
    assert spec.retrieval.local_dense


@pytest.mark.req("engram.memory.default-seat-semantic")
def test_the_generated_manifest_names_every_retrieval_option_once_with_a_comment() -> None:
    text = default_manifest_text()
    own, reranker = _retrieval_lines(text)
    retrieval = parse_manifest(text, "x").retrieval  # the option sets are the parsed tables'
    for lines, fields in (
        (own, {f.name for f in dataclasses.fields(retrieval)} - {"reranker"}),
        (reranker, {f.name for f in dataclasses.fields(retrieval.reranker)}),
    ):
        keys = [_key(line) for line in lines]
        assert sorted(keys) == sorted(fields)  # every option, each once
        assert all(" # " in line.lstrip("# ") for line in lines)  # each says what it does


@pytest.mark.req("engram.memory.default-seat-semantic")
def test_every_option_the_manifest_shows_commented_out_parses_as_shown() -> None:
    text = default_manifest_text()
    head, tail = text.split("\n[retrieval]\n", 1)
    tail = re.sub(r"^# (\w+ = )", r"\1", tail, flags=re.M)
    tail = tail.replace(
        'embedding_provider = "minilm-l6-v2"', 'embedding_provider = "remote-openai"'
    )
    tail = tail.replace("enabled = false", "enabled = true")
    retrieval = parse_manifest(head + "\n[retrieval]\n" + tail, "x").retrieval
    assert retrieval.embedding_model == "text-embedding-3-small"
    assert retrieval.embedding_endpoint == "http://127.0.0.1:8000"
    assert retrieval.reranker.model == "BAAI/bge-reranker-base"
    assert retrieval.reranker.endpoint == "http://127.0.0.1:8001"
    assert retrieval.reranker.provider == "vllm-rerank"


@pytest.mark.req("engram.memory.default-seat-semantic")
def test_a_default_seat_records_and_recalls_with_the_dense_stage(sqlite_store: Store) -> None:
    spec = parse_manifest(default_manifest_text())
    embedder, reranker = remote_stages(spec, None)  # what the CLI and `engram mcp` build
    assert reranker is None
    engine = open_engine(sqlite_store, spec, FixedClock(), embedder=embedder)
    record_many(
        engine,
        [
            RecordInput("The billing service was rewritten in Rust last spring", "fact", "M2"),
            RecordInput("Our cat sleeps on the warm laptop keyboard", "fact", "M2"),
        ],
    )
    result = recall(engine, "which programming language powers payments?", k=1)
    assert result.stages["dense"] == "ok"
    assert result.hits[0].memory.text.startswith("The billing service")
