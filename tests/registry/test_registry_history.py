"""The pull-request gate over real git history (lboel/acx@85f1358 SPEC.md §17.1 immutability,
§17.7 the PR gate; the reference's ``check-registry-immutability.mjs``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from registry_kit import NOW, PUBLISHER, Registry, dump, git, make_registry, signed_workflow

from engram.registry import check_registry
from engram.registry.internals import history_problems


def repository(tmp_path: Path) -> tuple[Path, Registry, str]:
    """A registry repository with one accepted commit; returns (repo, registry, base sha)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    registry = make_registry(repo, with_reference=False)
    registry.index()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "accepted")
    return repo, registry, git(repo, "rev-parse", "HEAD")


def problems(registry: Registry, base: str | None) -> dict[str, str]:
    return {p.path: p.rule for p in history_problems(registry.root, since=base)}


@pytest.mark.req("engram.registry.immutable-history")
def test_additions_pass_and_modification_deletion_rename_are_refused(tmp_path: Path) -> None:
    repo, registry, base = repository(tmp_path)
    dump(
        registry.root / f"cals/{PUBLISHER}/review-loop/1.3.0.cal.json",
        signed_workflow(registry.key, version="1.3.0"),
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a new version")
    assert problems(registry, base) == {}

    flow = registry.workflow.relative_to(registry.root).as_posix()
    # Other valid, signed bytes at the accepted path: current-byte checks alone cannot see this.
    dump(
        registry.workflow,
        signed_workflow(registry.key, description="The same coordinate, quietly re-signed."),
    )
    assert problems(registry, base)[flow] in (
        "registry.immutable-history",
        "registry.history-replacement",
    )
    git(repo, "checkout", "--", ".")

    card = registry.cartridge.relative_to(registry.root).as_posix()
    (registry.root / card.replace("1.0.0", "1.0.1")).parent.mkdir(parents=True)
    git(repo, "mv", f"registry/{card}", f"registry/{card}".replace("1.0.0", "1.0.1"))
    found = problems(registry, base)
    assert found[card] == "registry.immutable-history"  # a rename is a deletion plus an addition

    git(repo, "reset", "-q", "--hard")
    registry.graph.unlink()
    assert (
        problems(registry, base)[registry.graph.relative_to(registry.root).as_posix()]
        == "registry.immutable-history"
    )


@pytest.mark.req("engram.registry.history-replacement")
def test_a_path_deleted_and_re_added_with_other_bytes_is_refused(tmp_path: Path) -> None:
    repo, registry, _ = repository(tmp_path)
    flow = registry.workflow.relative_to(registry.root).as_posix()
    registry.workflow.unlink()
    git(repo, "commit", "-q", "-am", "an admin deletes an accepted release")
    middle = git(repo, "rev-parse", "HEAD")
    dump(
        registry.workflow,
        signed_workflow(registry.key, description="Different content at the old coordinate."),
    )
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "re-add other bytes later")
    # Compared with the commit just before, this is only an addition: the write-once ledger sees it.
    found = history_problems(registry.root, since=middle)
    assert [(p.path, p.rule) for p in found] == [
        (flow, "registry.history-replacement"),
        (flow, "registry.history-replacement"),
    ]
    # Audited without a base, the deletion itself is refused too.
    assert {p.rule for p in history_problems(registry.root)} == {
        "registry.immutable-history",
        "registry.history-replacement",
    }


@pytest.mark.req("engram.registry.immutable-history")
def test_a_base_that_is_not_an_ancestor_means_history_was_rewritten(tmp_path: Path) -> None:
    repo, registry, base = repository(tmp_path)
    git(repo, "commit", "-q", "--amend", "-m", "rewritten")
    (found,) = history_problems(registry.root, since=base)
    assert "not an ancestor" in found.message


@pytest.mark.req("engram.registry.pr-gate", "engram.registry.no-secrets")
def test_the_gate_reruns_everything_and_refuses_a_stale_index_and_secrets(tmp_path: Path) -> None:
    _repo, registry, base = repository(tmp_path)
    assert check_registry(registry.root, now=NOW, since=base).ok
    dump(
        registry.root / f"cals/{PUBLISHER}/review-loop/1.3.0.cal.json",
        signed_workflow(registry.key, version="1.3.0"),
    )
    report = check_registry(registry.root, now=NOW, since=base)
    assert [p.rule for p in report.problems] == ["registry.pr-gate"]  # index.json not regenerated
    registry.index()
    (registry.root / "cals" / "publisher.key.pem").write_text(
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
    )
    report = check_registry(registry.root, now=NOW, since=base)
    assert {p.rule for p in report.problems} >= {"registry.no-secrets"}
    assert report.build.index["workflowCount"] == 2


@pytest.mark.req("engram.registry.pr-gate", "engram.registry.cli")
def test_the_gate_from_the_command_line(tmp_path: Path) -> None:
    _repo, registry, base = repository(tmp_path)
    run = [
        sys.executable,
        "-c",
        "from engram.cli import main; main()",
        "registry",
        "check",
        str(registry.root),
        "--since",
        base,
    ]
    assert subprocess.run(run, capture_output=True, text=True, check=False).returncode == 0
    dump(
        registry.workflow,
        signed_workflow(registry.key, description="The same coordinate, quietly re-signed."),
    )
    done = subprocess.run(run, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "registry.immutable-history" in done.stdout
    (registry.root / "index.json").unlink()
    done = subprocess.run(
        [*run[:4], "index", str(registry.root), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    # The re-signed workflow verifies on its own, but the graph's pin names the accepted
    # digest, so the build refuses and writes no index.
    assert done.returncode == 1
    assert json.loads(done.stdout)["ok"] is False
    assert not (registry.root / "index.json").exists()
