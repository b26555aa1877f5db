"""The PostgreSQL fixtures never skip silently, and never skip at all under CI=true."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# -n 0: one test needs no workers (pyproject's addopts asks for one per core).
PYTEST_OPTIONS = ("-q", "-rs", "-n", "0", "-p", "no:cacheprovider")
ONE_POSTGRES_TEST = (
    "tests/store/test_store_contract.py::test_dialect_spells_types_for_its_backend[postgresql]"
)


def run_pytest_against(url: str, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_WORKER")}
    env["ENGRAM_TEST_POSTGRES_URL"] = url
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", *PYTEST_OPTIONS, ONE_POSTGRES_TEST],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.req("engram.store.postgres-never-silent")
def test_an_unreachable_server_is_a_visible_skip_outside_ci() -> None:
    run = run_pytest_against("postgresql://postgres@127.0.0.1:1/postgres", ci=None)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 skipped" in run.stdout
    assert "PostgreSQL not reachable at postgresql://postgres@127.0.0.1:1/postgres" in run.stdout


@pytest.mark.req("engram.store.postgres-never-silent")
def test_an_unreachable_server_fails_the_run_under_ci() -> None:
    run = run_pytest_against("postgresql://postgres:pw@127.0.0.1:1/postgres", ci="true")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "CI=true: the PostgreSQL tests must run in CI" in run.stdout
    assert ":pw@" not in run.stdout
