"""Issuance: sealing, the solver seam, self-issuance, cooldown and the ledger (SPEC §10.2-3)."""

from __future__ import annotations

import hashlib
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from level_kit import LIST_URL, NOW, PUBLISHER, ROM, SUBJECT, issue

from engram.core.keys import PrivateKey
from engram.level import (
    Benchmark,
    CommandSolver,
    Ledger,
    LevelRefused,
    ReferenceSolver,
    Task,
    Verifier,
    demo_benchmark,
    load_benchmark,
    prove_level,
)
from engram.level.internals import seal_benchmark


@pytest.mark.req("engram.level.held-out-sealed")
def test_only_the_held_out_digest_is_published_and_the_sealed_file_opens_only_with_its_key() -> (
    None
):
    benchmark = demo_benchmark()
    public: dict[str, Any] = benchmark.public_view()
    held = {t.id for t in benchmark.held_out}
    assert not held & {t["id"] for t in public["publicSlice"]}
    key = bytes(range(32))
    sealed = seal_benchmark(benchmark, key)
    assert not any(task_id.encode() in sealed for task_id in held)
    assert load_benchmark(sealed, key=key).held_out == benchmark.held_out
    with pytest.raises(LevelRefused):
        load_benchmark(sealed, key=bytes(32))
    with pytest.raises(LevelRefused):
        load_benchmark(sealed)


@pytest.mark.req("engram.level.held-out-sealed")
def test_held_out_tasks_must_postdate_the_cutoff() -> None:
    tasks = tuple(Task(f"t{i}", 20, "x", published_at="2026-01-01T00:00:00Z") for i in range(10))
    Benchmark("b", "1", "b", tasks, seal="s", cutoff="2025-12-01T00:00:00Z")
    with pytest.raises(LevelRefused, match="cutoff"):
        Benchmark("b", "1", "b", tasks, seal="s", cutoff="2026-06-01T00:00:00Z")


@pytest.mark.req("engram.level.draw-reproducible")
def test_the_draw_is_keyed_by_the_rom_digest_and_reproducible() -> None:
    benchmark = demo_benchmark()
    assert benchmark.draw(ROM, 30) == demo_benchmark().draw(ROM, 30)
    assert benchmark.draw(ROM, 30) != benchmark.draw("sha256:" + "00" * 32, 30)
    assert {t.id for t in benchmark.draw(ROM, 96)} == {t.id for t in benchmark.held_out}


SOLVER = """
import json, os, sys
task = json.load(sys.stdin)
assert sorted(os.listdir(".")) == [".stderr", ".stdout"]
assert "SECRET_TOKEN" not in os.environ
if task["id"] == "slow":
    import time; time.sleep(30)
open("out.txt", "w").write("answer " + task["id"])
print("solved", task["id"], os.environ["ACX_ROM_DIGEST"])
"""


@pytest.mark.req("engram.level.solver-seam")
def test_the_command_solver_runs_each_task_in_a_clean_sandbox_with_a_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "do-not-leak")
    script = tmp_path / "solver.py"
    script.write_text(SOLVER)
    solver = CommandSolver([sys.executable, str(script)], timeout_sec=3)
    good = Task("t1", 20, "x", artifacts={"out.txt": hashlib.sha256(b"answer t1").hexdigest()})
    wrong = Task(
        "t2", 20, "x", artifacts={"out.txt": hashlib.sha256(b"something else").hexdigest()}
    )
    attempt = solver.solve(ROM, good)
    assert attempt.passed, attempt.trajectory
    assert b"solved t1 " + ROM.encode() in attempt.trajectory
    assert not solver.solve(ROM, wrong).passed
    slow = solver.solve(ROM, Task("slow", 20, "x"))
    assert not slow.passed
    assert b'"timedOut":true' in slow.trajectory


@pytest.mark.req("engram.level.self-issuance")
def test_self_issuance_is_refused_before_anything_runs(tmp_path: Path) -> None:
    publisher = PrivateKey.generate()
    ledger = Ledger(tmp_path / "l.sqlite")
    for verifier, keyids in [
        (Verifier("did:web:verifier.example.org", publisher), [publisher.public_key().key_id]),
        (Verifier("did:web:levels.alice.github.io", PrivateKey.generate()), []),
        (Verifier(SUBJECT, PrivateKey.generate()), []),
    ]:
        with pytest.raises(LevelRefused, match="self-issuance"):
            prove_level(
                rom_digest=ROM,
                publisher_id=PUBLISHER,
                subject_id=SUBJECT,
                publisher_keyids=keyids,
                benchmark=demo_benchmark(),
                solver=ReferenceSolver(33),
                verifier=verifier,
                ledger=ledger,
                now=NOW,
                status_list_url=LIST_URL,
            )
    assert ledger.attempts() == []


@pytest.mark.req("engram.level.cooldown-ledger")
def test_failed_attempts_are_kept_and_start_the_cooldown_too(tmp_path: Path) -> None:
    verifier = Verifier("did:web:verifier.example.org", PrivateKey.generate())
    ledger = Ledger(tmp_path / "l.sqlite")

    def attempt(competence: float, draw: int, hours: float) -> bool:
        result = prove_level(
            rom_digest=ROM,
            publisher_id=PUBLISHER,
            subject_id=SUBJECT,
            publisher_keyids=[],
            benchmark=demo_benchmark(),
            solver=ReferenceSolver(competence),
            verifier=verifier,
            ledger=ledger,
            now=NOW + timedelta(hours=hours),
            status_list_url=LIST_URL,
            draw_count=draw,
        )
        return result.issued

    assert attempt(14, 50, 0) is False
    with pytest.raises(LevelRefused, match="cooldown"):
        attempt(33, 90, 1)  # resubmission until lucky: refused
    assert attempt(33, 90, 25) is True
    rows = ledger.attempts(ROM)
    assert [(r.issued, r.games) for r in rows] == [(False, 50), (True, 90)]
    assert rows[0].reason.startswith("gating failed")
    assert rows[1].credential_id is not None
    assert ledger.status_index_of(rows[1].credential_id) is not None


@pytest.mark.req("engram.level.credential-shape")
def test_an_issued_credential_links_one_signed_trajectory_per_game(tmp_path: Path) -> None:
    issued = issue(tmp_path)
    result = issued.credential["credentialSubject"]["result"][0]
    assert len(issued.credential["evidence"]) == result["acx:gamesPlayed"] == 90
    assert all(e["acx:digestMultibase"].startswith("u") for e in issued.credential["evidence"])
    assert result["acx:cartridgeRomDigest"] == ROM
