"""The memory CLI as a user drives it: manifest discovery, batches, attestation, status, distill."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from memory_kit import ANCHOR, manifest_text

from engram.cli import cli
from engram.core.canonical import parse_strict
from engram.core.jsonio import dumps_text
from engram.errors import Forbidden, InvalidRequest, ManifestError
from engram.memory.internals import ATTESTATION_NAMESPACE


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


class Seat:
    """A seat directory with .engram/ote.toml and its own database URL."""

    def __init__(self, root: Path, database: str, extra: str = "") -> None:
        self.root = root
        (root / ".engram").mkdir(parents=True, exist_ok=True)
        (root / ".engram" / "ote.toml").write_text(manifest_text(extra))
        self.env = {"ENGRAM_DATABASE_URL": database, "ENGRAM_OTE": "", "THALAMUS_URL": ""}

    def run(self, *args: str, ok: bool = True, cwd: Path | None = None) -> Result:
        runner = CliRunner()
        old = Path.cwd()
        os.chdir(cwd or self.root)
        try:
            result = runner.invoke(cli, list(args), env=self.env)
        finally:
            os.chdir(old)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    def json(self, *args: str) -> Any:
        return parse_strict(self.run(*args, "--json").stdout)


@pytest.fixture
def seat(tmp_path: Path, any_database_url: str) -> Seat:
    return Seat(tmp_path / "repo", any_database_url)


@pytest.mark.req("engram.memory.cli-manifest-discovery")
def test_the_manifest_is_found_upwards_or_named_by_ote_or_engram_ote(
    seat: Seat,
    tmp_path: Path,
) -> None:
    deep = seat.root / "src" / "pkg"
    deep.mkdir(parents=True)
    found = seat.run("status", cwd=deep)
    assert "seat: seat:engram-implementer" in found.output
    other = tmp_path / "other.toml"
    other.write_text(manifest_text().replace("seat:engram-implementer", "seat:x-implementer"))
    assert "seat:x-implementer" in seat.run("status", "--ote", str(other)).output
    seat.env["ENGRAM_OTE"] = str(other)
    assert "seat:x-implementer" in seat.run("status", cwd=tmp_path).output
    seat.env["ENGRAM_OTE"] = ""
    # Nothing found: the default seat under ENGRAM_HOME (engram serve's), unless that is off.
    default = seat.run("status", "--json", cwd=tmp_path)
    assert _parsed(default.stdout)["seat"] == {
        "origin": "default",
        "path": str(Path(os.environ["ENGRAM_HOME"]) / "default-ote.toml"),
    }
    seat.env["ENGRAM_NO_SEAT"] = "1"
    missing = seat.run("status", cwd=tmp_path, ok=False)
    assert isinstance(missing.exception, ManifestError)
    assert "no seat manifest" in missing.exception.message


@pytest.mark.req("engram.memory.cli-manifest-discovery", "engram.memory.status-report")
def test_status_says_which_manifest_is_in_use_and_how_it_was_found(
    seat: Seat, tmp_path: Path
) -> None:
    deep = seat.root / "src"
    deep.mkdir()
    found = (seat.root / ".engram" / "ote.toml").resolve()
    assert _parsed(seat.run("status", "--json", cwd=deep).stdout)["seat"] == {
        "origin": ".engram/ote.toml",
        "path": str(found),
    }
    other = tmp_path / "other.toml"
    other.write_text(manifest_text())
    named = seat.json("status", "--ote", str(other))["seat"]
    assert named == {"origin": "--ote", "path": str(other.resolve())}
    seat.env["ENGRAM_OTE"] = str(other)
    assert f"(manifest {other.resolve()}, from ENGRAM_OTE)" in seat.run("status").output


@pytest.mark.req("engram.memory.cli-record-batch", "engram.memory.cli-recall-batch")
def test_record_from_jsonl_in_one_transaction_and_recall_batch_prints_one_line_per_query(
    seat: Seat,
    tmp_path: Path,
) -> None:
    lines = [
        {"text": f"service {i} restarts nightly", "kind": "fact", "ring": "M2", "thread": "ops"}
        for i in range(30)
    ]
    source = tmp_path / "memories.jsonl"
    source.write_text("\n".join(dumps_text(x) for x in lines) + "\n")
    done = seat.run("record", "--from", str(source))
    assert "recorded 30 new of 30 memories" in done.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        dumps_text({"text": "fine", "kind": "fact"})
        + "\n"
        + dumps_text({"text": "nope", "kind": "gossip"})
        + "\n"
    )
    refused = seat.run("record", "--from", str(bad), ok=False)
    assert isinstance(refused.exception, InvalidRequest)
    assert seat.json("status")["vector_coverage"]["memories"] == 30

    queries = tmp_path / "queries.jsonl"
    queries.write_text('"service 7 restarts"\n{"query": "nightly", "k": 2}\n')
    out = seat.run("recall", "--batch", str(queries)).stdout.splitlines()
    assert len(out) == 2
    first, second = (_parsed(line) for line in out)
    assert first["hits"][0]["memory"]["text"] == "service 7 restarts nightly"
    assert len(second["hits"]) == 2


@pytest.mark.req("engram.memory.attestation-ssh", "engram.memory.status-report")
def test_outcome_with_an_ssh_signature_then_complete_then_status(
    tmp_path: Path,
    any_database_url: str,
) -> None:
    seat = Seat(tmp_path / "repo", any_database_url, ANCHOR)
    key = tmp_path / "alice"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
        check=True,
        capture_output=True,
    )
    blocked = seat.json("status")
    assert blocked["graduation"] == "blocked (no attested evidence)"
    (seat.root / ".engram" / "attestors").write_text(
        f"alice@example.org {(tmp_path / 'alice.pub').read_text()}"
    )
    memory = seat.json("record", "deploys need a green canary", "--kind", "invariant")
    mid = memory["memory"]["id"]
    for i in range(22):
        message = seat.run(
            "outcome", mid, "sealed_test_pass", "--decision-id", f"s{i}", "--print-message"
        ).stdout_bytes
        (tmp_path / "msg").write_bytes(message)
        (tmp_path / "msg.sig").unlink(missing_ok=True)
        subprocess.run(
            [
                "ssh-keygen",
                "-Y",
                "sign",
                "-n",
                ATTESTATION_NAMESPACE,
                "-f",
                str(key),
                str(tmp_path / "msg"),
            ],
            check=True,
            capture_output=True,
        )
        seat.run(
            "outcome",
            mid,
            "sealed_test_pass",
            "--decision-id",
            f"s{i}",
            "--attestation",
            str(tmp_path / "msg.sig"),
        )
    seat.run("outcome", mid, "rubric_accept", "--decision-id", "r1")
    unsigned = seat.run("outcome", mid, "human_accept", "--decision-id", "h1", ok=False)
    assert isinstance(unsigned.exception, Forbidden)
    assert "needs an attestation" in unsigned.exception.message
    preview = seat.json("complete", "--dry-run")
    assert preview["verdicts"][0]["status_after"] == "graduated"
    assert "graduated" in seat.run("complete", mid).output
    report = seat.json("status")
    assert report["graduation"] == "open"
    attestation = report["attestation"]
    assert attestation["anchor"] == str(seat.root / ".engram" / "attestors")
    assert len(attestation["sha256"]) == 64
    assert attestation["key_fingerprints"][0].startswith("SHA256:")
    assert report["oracle_split"] == {"rubric": 1, "sealed_test": 22}
    assert report["grandfathered_until_apply"] == 0
    m4 = next(r for r in report["rings"] if r["ring"] == "M4")
    assert (m4["memories"], m4["graduated"]) == (1, 1)
    assert report["vector_coverage"] == {
        "memories": 1,
        "local-hash-128": 1,
        "dense": {},
    }
    human = seat.run("status").output
    assert "graduation: open" in human
    assert "grandfathered_until_apply: 0" in human


@pytest.mark.req("engram.memory.status-report")
def test_grandfathered_graduations_are_counted_until_complete_applies_the_rule(
    seat: Seat,
    tmp_path: Path,
) -> None:
    memory = seat.json("record", "an old graduation", "--kind", "fact")
    mid = memory["memory"]["id"]
    from engram.store import open_store

    store = open_store(seat.env["ENGRAM_DATABASE_URL"])
    with store.transaction() as tx:  # as a pre-S5 store left it: graduated without evidence
        tx.execute("UPDATE memory_items SET status = 'graduated' WHERE id = ?", (mid,))
    store.close()
    assert seat.json("status")["grandfathered_until_apply"] == 1
    seat.run("complete")
    assert seat.json("status")["grandfathered_until_apply"] == 0


@pytest.mark.req("engram.memory.cli-migrate")
def test_migrate_rings_from_the_cli_is_idempotent(seat: Seat) -> None:
    assert "nothing to move" in seat.run("migrate", "--rings").output
    assert isinstance(seat.run("migrate", ok=False).exception, InvalidRequest)


@pytest.mark.req("engram.memory.distill-extractive")
def test_distill_turns_episodes_into_a_known_process(seat: Seat, tmp_path: Path) -> None:
    episodes = []
    for i, extra in enumerate(["on Monday", "again on Thursday"]):
        path = tmp_path / f"episode{i}.txt"
        path.write_text(
            f"The nightly build failed {extra}. We looked at the logs for an hour. "
            "Root cause: the pip cache held a stale numpy wheel. "
            "Fix: clear the pip cache and pin numpy in requirements. "
            "Then the build passed."
        )
        episodes.append(str(path))
    first = seat.json("distill", *episodes)
    again = seat.json("distill", *episodes)
    memory = first["memory"]
    assert memory["kind"] == "known_process"
    assert "stale numpy wheel" in memory["text"]
    assert "pin numpy" in memory["text"]
    assert memory["provenance"]["distiller"] == "extractive-v1"
    assert len(memory["provenance"]["episodes"]) == 2
    assert again["memory"]["id"] == memory["id"]  # deterministic
    invariant = seat.json("distill", "--kind", "invariant", *episodes)
    assert invariant["memory"]["text"].startswith("Invariant: ")


@pytest.mark.req("engram.memory.cli-record-batch")
def test_record_from_draws_a_progress_bar_on_stderr_and_keeps_stdout_clean(
    seat: Seat, tmp_path: Path
) -> None:
    source = tmp_path / "many.jsonl"
    source.write_text(
        "".join(dumps_text({"text": f"runbook step {i}", "kind": "fact"}) + "\n" for i in range(50))
    )
    seat.env["TTY_COMPATIBLE"] = "1"  # what a terminal is: rich draws the bar
    done = seat.run("record", "--from", str(source))
    assert "recording" in done.stderr
    assert "100%" in done.stderr
    assert done.stdout == "recorded 50 new of 50 memories (dense: disabled)\n"


@pytest.mark.req("engram.memory.cli-complete-summary")
def test_complete_summarises_and_lists_every_verdict_only_with_verbose(seat: Seat) -> None:
    for i in range(25):
        seat.run("record", f"runbook fact number {i}", "--kind", "fact", "--ring", "M2")
    summary = seat.run("complete").output.splitlines()
    assert summary[0].startswith("graduation: ")
    assert summary[1] == (
        "25 memories: 0 changed; now 0 graduated, 25 candidates, 0 held imports "
        "(--verbose lists every verdict)"
    )
    assert len(summary) == 2  # nothing changed: no memory lines
    verbose = seat.run("complete", "--verbose").output.splitlines()
    assert len([line for line in verbose if line.startswith("  mem:")]) == 25
