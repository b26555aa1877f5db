"""The context CLI: subject, belief, token, correction and demo commands honour --db,
ENGRAM_HOME and ENGRAM_DATABASE_URL, print JSON with --json, and fail in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engram.cli import cli, run_cli
from engram.context import CATEGORIES, authenticate_token, propose_correction
from engram.core.canonical import parse_strict
from engram.core.clock import SystemClock
from engram.store import open_store


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run_cli(cli, list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out, err = _run(capsys, *args, "--json")
    assert code == 0, err
    return parse_strict(out)


@pytest.mark.req("engram.cli.one-database-option")
def test_a_subject_its_beliefs_and_a_token_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_HOME", str(tmp_path))
    monkeypatch.delenv("ENGRAM_DATABASE_URL", raising=False)

    subject = _json(capsys, "subject", "create", "--name", "Ada", "--timezone", "Europe/Paris")
    assert isinstance(subject, dict)
    sid = subject["id"]
    belief = _json(
        capsys, "belief", "add", "--subject", sid, "--category", "health", "--statement", "Fit."
    )
    assert isinstance(belief, dict)
    listed = _json(capsys, "belief", "list", "--subject", sid)
    token = _json(
        capsys, "token", "create", "--subject", sid, "--permissions", "read", "--ttl", "1h"
    )
    assert isinstance(token, dict)
    deleted = _json(capsys, "belief", "delete", "--subject", sid, "--belief", belief["id"])

    assert (tmp_path / "engram.db").exists()
    assert listed == [belief]
    assert token["permissions"] == ["read"]
    store = open_store(f"sqlite://{tmp_path / 'engram.db'}")
    try:
        grant = authenticate_token(store, SystemClock(), str(token["token"]))
    finally:
        store.close()
    assert grant.subject_id == sid
    assert deleted == {
        "id": belief["id"],
        "deleted": True,
        "deleted_at": deleted["deleted_at"],
        "version": 2,
    }


@pytest.mark.req("engram.cli.one-database-option")
def test_corrections_are_listed_and_decided_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite://{tmp_path / 'other.db'}"
    monkeypatch.setenv("ENGRAM_DATABASE_URL", url)
    _, sid, _ = _run(capsys, "subject", "create", "--name", "Ada")
    sid = sid.strip()
    _, bid, _ = _run(
        capsys, "belief", "add", "--subject", sid, "--category", "goal", "--statement", "Swim."
    )
    store = open_store(url)
    try:
        proposal = propose_correction(store, SystemClock(), sid, bid.strip(), "Run.", "rt")
    finally:
        store.close()

    pending = _json(
        capsys, "correction", "list", "--subject", sid, "--status", "pending_user_confirmation"
    )
    confirmed = _json(capsys, "correction", "confirm", "--subject", sid, proposal.id)
    again, _, err = _run(capsys, "correction", "reject", "--subject", sid, proposal.id)
    beliefs = _json(capsys, "belief", "list", "--subject", sid)

    assert [c["id"] for c in pending] == [proposal.id]
    assert confirmed["status"] == "confirmed"
    assert again == 1
    assert err.startswith("error: conflict:")
    assert [b["statement"] for b in beliefs] == ["Run."]


@pytest.mark.req("engram.cli.demo-reused")
def test_demo_creates_a_subject_with_sensitive_beliefs_and_a_full_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "demo.db")

    demo = _json(capsys, "demo", "--db", db, "--url", "https://p.example")
    code, text, _ = _run(capsys, "demo", "--db", db)

    assert isinstance(demo, dict)
    assert demo["url"] == "https://p.example"
    assert demo["beliefs"] == len(CATEGORIES)  # one in every category
    assert str(demo["token"]).startswith("eng_")
    token_file = tmp_path / "demo.demo-token"
    assert demo["token_file"] == str(token_file)
    assert token_file.read_text(encoding="ascii").strip() == demo["token"]
    assert demo["curl"] == (
        f'curl -s "https://p.example/v1/context" -H "Authorization: Bearer $(cat {token_file})"'
    )
    assert code == 0
    assert f"token:     in {token_file} (mode 0600" in text
    assert str(demo["token"]) not in text
    store = open_store(f"sqlite://{db}")
    try:
        grant = authenticate_token(store, SystemClock(), str(demo["token"]))
    finally:
        store.close()
    assert {p.value for p in grant.permissions} == {
        "read",
        "correct",
        "confirm",
        "memory",
        "metrics",
        "admin",
    }


@pytest.mark.req("engram.cli.errors-one-line")
def test_bad_input_fails_in_one_line_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "bad.db")

    code, _, err = _run(
        capsys, "subject", "create", "--name", "Ada", "--timezone", "Nowhere/X", "--db", db
    )
    ttl_code, _, ttl_err = _run(
        capsys, "token", "create", "--subject", "s", "--ttl", "soon", "--db", db
    )
    missing, _, missing_err = _run(capsys, "belief", "list", "--subject", "nobody", "--db", db)

    assert (code, err.count("\n")) == (2, 1)
    assert err.startswith("error: invalid_request: unknown IANA time zone")
    assert ttl_code == 2
    assert "not a duration" in ttl_err
    assert missing == 1
    assert missing_err.startswith("error: user_not_found:")
