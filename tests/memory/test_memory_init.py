"""``engram init``: ring ids from the repository, and two repositories under one HOME.

Recreates the spec's deploy/test-s5-ote-template.sh check with real ``git init`` repositories:
the shape of .engram/ote.toml, and that two repositories sharing one HOME (one database) do
not see each other's M2 memories. Also pins the disclosed behaviour: a clone (fork) shares M2.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engram.cli import cli
from engram.core.canonical import parse_strict
from engram.memory import init_repository, load_manifest


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    )
    return done.stdout.strip()


def new_repo(path: Path, *, commit: bool = True) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    if commit:
        (path / "README").write_text(path.name)
        git(path, "add", "README")
        git(path, "commit", "-q", "-m", "root")
    return path


@pytest.mark.req("engram.memory.init-ring-ids")
def test_init_writes_builtin_m0_m1_m3_m2_from_the_root_commit_and_m4_from_the_domain(
    tmp_path: Path,
) -> None:
    repo = new_repo(tmp_path / "Acme Core")
    root = git(repo, "rev-list", "--max-parents=0", "HEAD")
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo), "--json"])
    assert result.exit_code == 0, result.output
    spec = load_manifest(repo / ".engram" / "ote.toml")
    rings = {m.ring: m.ring_id for m in spec.mounts}
    assert rings == {
        "M0": "canon:shared",
        "M1": "archetype:general",
        "M2": f"repo:{root[:16]}",
        "M3": "team:shared",
        "M4": "seat:acme-core-implementer",
    }
    assert spec.seat.seat_id == "seat:acme-core-implementer"
    assert _parsed(result.output)["generated"] is False


@pytest.mark.req("engram.memory.init-ring-ids")
def test_init_takes_the_lexically_first_root_when_history_has_several(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "two-roots")
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "--orphan", "other")
    (repo / "OTHER").write_text("x")
    git(repo, "add", "OTHER")
    git(repo, "commit", "-q", "-m", "second root")
    second = git(repo, "rev-parse", "HEAD")
    git(repo, "merge", "-q", "--allow-unrelated-histories", "-m", "join", "main")
    result = init_repository(repo, "two")
    assert result.m2_ring_id == f"repo:{min(first, second)[:16]}"


@pytest.mark.req("engram.memory.init-no-commit")
def test_a_repository_without_commits_gets_a_generated_id_printed_and_kept(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "empty", commit=False)
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo), "--domain", "empty"])
    assert result.exit_code == 0, result.output
    spec = load_manifest(repo / ".engram" / "ote.toml")
    m2 = next(m.ring_id for m in spec.mounts if m.ring == "M2")
    assert m2.startswith("repo:")
    assert len(m2) == len("repo:") + 16
    int(m2[5:], 16)
    assert f"generated M2 id {m2}" in result.output
    # A later commit does not change the kept id: init never rewrites the file.
    (repo / "f").write_text("x")
    git(repo, "add", "f")
    git(repo, "commit", "-q", "-m", "first")
    again = init_repository(repo)
    assert again.written is False
    assert again.m2_ring_id == m2


@pytest.mark.req("engram.memory.init-never-rewrites")
def test_init_never_rewrites_an_existing_manifest(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "kept")
    target = repo / ".engram" / "ote.toml"
    init_repository(repo, "first")
    edited = target.read_text().replace(
        "keyspace_budget_tokens = 2000", "keyspace_budget_tokens = 999"
    )
    target.write_text(edited)
    result = CliRunner().invoke(cli, ["init", "--repo", str(repo), "--domain", "second"])
    assert result.exit_code == 0
    assert "left unchanged" in result.output
    assert target.read_text() == edited


def _engram(home: Path, repo: Path, *args: str) -> str:
    result = CliRunner().invoke(
        cli,
        list(args),
        env={
            "ENGRAM_HOME": str(home),
            "ENGRAM_DATABASE_URL": "",
            "ENGRAM_OTE": str(repo / ".engram" / "ote.toml"),
        },
    )
    assert result.exit_code == 0, result.output
    return result.output


def _recall_texts(home: Path, repo: Path, query: str) -> set[str]:
    out = _parsed(_engram(home, repo, "recall", query, "--json", "--k", "20"))
    return {hit["memory"]["text"] for hit in out["hits"]}


@pytest.mark.req("engram.memory.init-isolation")
def test_two_repositories_under_one_home_do_not_share_m2_or_m4(tmp_path: Path) -> None:
    home = tmp_path / "home"
    alpha, beta = new_repo(tmp_path / "alpha"), new_repo(tmp_path / "beta")
    for repo in (alpha, beta):
        _engram(home, repo, "init", "--repo", str(repo))
    _engram(
        home,
        alpha,
        "record",
        "alpha deploys with blue green switch",
        "--kind",
        "procedure",
        "--ring",
        "M2",
    )
    _engram(home, alpha, "record", "alpha seat note about deploys", "--kind", "fact")
    _engram(
        home,
        beta,
        "record",
        "beta deploys by rolling restart",
        "--kind",
        "procedure",
        "--ring",
        "M2",
    )
    _engram(
        home,
        beta,
        "record",
        "team rule: deploys need a ticket",
        "--kind",
        "decision",
        "--ring",
        "M3",
    )
    assert (home / "engram.db").is_file()  # one database for both
    seen_by_alpha = _recall_texts(home, alpha, "deploys")
    seen_by_beta = _recall_texts(home, beta, "deploys")
    assert "alpha deploys with blue green switch" in seen_by_alpha
    assert "beta deploys by rolling restart" not in seen_by_alpha
    assert "alpha seat note about deploys" not in seen_by_beta
    assert "alpha deploys with blue green switch" not in seen_by_beta
    # M3 keeps the built-in id, so the team ring is shared on purpose.
    assert "team rule: deploys need a ticket" in seen_by_alpha


@pytest.mark.req("engram.memory.fork-shares-m2")
def test_disclosed_a_clone_shares_m2_and_the_same_domain_shares_m4(tmp_path: Path) -> None:
    home = tmp_path / "home"
    original = new_repo(tmp_path / "original")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", str(original), str(clone)], check=True, capture_output=True
    )
    _engram(home, original, "init", "--repo", str(original), "--domain", "same")
    _engram(home, clone, "init", "--repo", str(clone), "--domain", "same")
    _engram(
        home,
        original,
        "record",
        "original repo memory about caching",
        "--kind",
        "fact",
        "--ring",
        "M2",
    )
    _engram(home, original, "record", "seat memory about caching", "--kind", "fact")
    seen = _recall_texts(home, clone, "caching")
    assert seen == {"original repo memory about caching", "seat memory about caching"}
