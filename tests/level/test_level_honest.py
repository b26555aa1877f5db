"""A level is issued only from a real run of the cartridge (issue 32, point 2;
docs/spec/acx-levels.md §3 "Solvers"): ``level prove`` needs ``--solver COMMAND``; the built-in
simulated solver plays only behind ``--demo-solver``, and the credential it earns says so in its
signed members (``acx:simulatedSolver``, name, description, narrative), which ``level verify``
reports.

Before: without ``--solver`` the simulated solver played silently, and a one-skill cartridge got
"acxLevel=30, distinguished" whose narrative said "Independently re-executed".
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from level_kit import ROM

from engram.cli import cli, run_cli
from engram.core.keys import PrivateKey, save_private_key

SOLVER = "import json, sys; sys.exit(0 if json.load(sys.stdin)['difficulty'] < 30 else 1)"
DID = "did:web:verifier.example.org"
URL = "https://verifier.example.org/status/1"


def _setup(tmp_path: Path) -> tuple[list[str], list[str]]:
    """The prove arguments (minus the solver) and the verify arguments for one credential."""
    key = PrivateKey.generate()
    save_private_key(tmp_path / "verifier.pem", key)
    (tmp_path / "verifier.pub").write_bytes(key.public_key().to_pem())
    status = tmp_path / "status.json"
    level = ["cartridge", "level"]
    made = [*level, "status-list", "--id", URL, "--issuer", DID,
            "--key", str(tmp_path / "verifier.pem"), "-o", str(status)]  # fmt: skip
    assert run_cli(cli, made) == 0
    prove = [*level, "prove", "--rom-digest", ROM, "--publisher", "io.github.alice",
             "--verifier-key", str(tmp_path / "verifier.pem"), "--verifier-did", DID,
             "--status-list-url", URL, "--ledger", str(tmp_path / "ledger.sqlite"),
             "-o", str(tmp_path / "cred.json")]  # fmt: skip
    verify = [*level, "verify", str(tmp_path / "cred.json"), "--rom-digest", ROM, "--issuer-key",
              str(tmp_path / "verifier.pub"), "--status-list", str(status)]  # fmt: skip
    return prove, verify


@pytest.mark.req("engram.level.real-run-only")
def test_prove_without_a_solver_is_a_usage_error_and_issues_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prove, _ = _setup(tmp_path)
    capsys.readouterr()
    assert run_cli(cli, prove) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: usage: a level is issued only from a real run: give --solver")
    assert "--demo-solver" in err
    assert not (tmp_path / "cred.json").exists()
    assert not (tmp_path / "ledger.sqlite").exists()

    assert run_cli(cli, [*prove, "--solver", "true", "--demo-solver"]) == 2
    assert "not both" in capsys.readouterr().err
    assert not (tmp_path / "cred.json").exists()


@pytest.mark.req("engram.level.simulated-says-so")
def test_the_demo_solver_issues_a_credential_that_says_it_is_a_demo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prove, verify = _setup(tmp_path)
    assert run_cli(cli, [*prove, "--demo-solver"]) == 0
    assert "ISSUED A DEMO LEVEL (simulated solver" in capsys.readouterr().out
    credential = json.loads((tmp_path / "cred.json").read_text())
    achievement = credential["credentialSubject"]["achievement"]
    tier = credential["credentialSubject"]["result"][0]
    assert tier["acx:simulatedSolver"] is True
    assert credential["name"].startswith("DEMO, simulated solver: ACX level")
    assert "nothing from the cartridge ran" in achievement["criteria"]["narrative"]
    assert "re-executed" not in achievement["criteria"]["narrative"].lower()
    assert "re-execution of its ROM" not in achievement["description"]

    assert run_cli(cli, verify) == 0  # it verifies as what it says it is: a demo
    out = capsys.readouterr().out
    assert "DEMO LEVEL: the built-in simulated solver played it" in out
    assert "solver" in out
    assert run_cli(cli, [*verify, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["simulated"] is True

    # The statement is signed: taking it out breaks the proof.
    del tier["acx:simulatedSolver"]
    (tmp_path / "cred.json").write_text(json.dumps(credential))  # noqa: TID251 - a tampered copy
    assert run_cli(cli, verify) == 1
    assert "NOT VERIFIED" in capsys.readouterr().out


@pytest.mark.req("engram.level.real-run-only", "engram.level.simulated-says-so")
def test_a_real_solver_run_issues_a_credential_with_no_demo_mark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prove, verify = _setup(tmp_path)
    # A solver command that solves the tasks easier than 30: the level comes from what it did.
    solver = f"{shlex.quote(sys.executable)} -c {shlex.quote(SOLVER)}"
    assert run_cli(cli, [*prove, "--solver", solver]) == 0
    assert "ISSUED: wrote" in capsys.readouterr().out
    credential = json.loads((tmp_path / "cred.json").read_text())
    assert "acx:simulatedSolver" not in credential["credentialSubject"]["result"][0]
    assert not credential["name"].startswith("DEMO")
    assert run_cli(cli, [*verify, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["simulated"] is False
    assert report["verified"] is True
