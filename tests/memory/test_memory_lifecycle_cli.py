"""``engram forget | restore | erase``, ``memory history`` and ``subject delete`` as a user runs
them, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_memory_cli import Seat

from engram.core.canonical import parse_strict
from engram.errors import EngramError, ResourceNotFound


def _id(seat: Seat, text: str, *subject: str) -> str:
    out: Any = parse_strict(
        seat.run("record", text, "--kind", "decision", *subject, "--json").stdout
    )
    return str(out["memory"]["id"])


def _recalled(seat: Seat, query: str, *subject: str) -> list[str]:
    out: Any = parse_strict(seat.run("recall", query, *subject, "--json").stdout)
    return [str(h["memory"]["id"]) for h in out["hits"]]


@pytest.fixture
def seat(tmp_path: Path, any_database_url: str) -> Seat:
    return Seat(tmp_path / "repo", any_database_url)


@pytest.mark.req(
    "engram.memory.forget",
    "engram.memory.restore",
    "engram.memory.erase",
    "engram.memory.erase.repeat",
    "engram.memory.history",
)
def test_forget_restore_erase_and_history_from_the_command_line(seat: Seat) -> None:
    first = _id(seat, "The staging database password rotates on the 1st.")
    other = _id(seat, "Staging deploys need the VPN.")

    assert seat.run("forget", first, "--reason", "stale").stdout == f"forgot {first}\n"
    assert seat.run("forget", first).stdout == f"{first} was already forgotten\n"
    assert first not in _recalled(seat, "staging database password")
    assert seat.run("restore", first).stdout == f"restored {first}\n"
    assert _recalled(seat, "staging database password")[0] == first
    refused = seat.run("erase", first, other, ok=False)  # no --yes, no answer at the prompt
    assert refused.exit_code == 1
    assert "erase 2 memory(ies) for good?" in refused.output
    assert _recalled(seat, "staging database password")[0] == first
    assert seat.run("erase", first, "--yes").stdout == f"erased {first}\n"
    assert seat.run("erase", first, "--yes").stdout == f"{first} was already erased\n"
    assert seat.run("forget", first).stdout == f"{first} was erased: nothing to forget\n"
    lines = seat.run("memory", "history", first).stdout.splitlines()
    assert lines[0] == f"{first}: erased"
    assert [line.split()[1] for line in lines[1:]] == ["forgotten", "restored", "erased"]
    assert "stale" not in "\n".join(lines)  # the reason went with the words
    unknown = seat.run("forget", "mem:" + "0" * 64, ok=False)
    assert isinstance(unknown.exception, ResourceNotFound)


@pytest.mark.req("engram.memory.owner.isolation", "engram.memory.subject-delete")
def test_subjects_on_the_command_line_and_subject_delete_erases_their_memories(
    seat: Seat,
) -> None:
    alice = seat.run("subject", "create", "--name", "Alice").stdout.strip()
    bob = seat.run("subject", "create", "--name", "Bob").stdout.strip()
    mine = _id(seat, "Alice's gate code is 4471.", "--subject", alice)
    _id(seat, "Bob's gate code is 9012.", "--subject", bob)

    assert _recalled(seat, "gate code", "--subject", alice) == [mine]
    assert mine not in _recalled(seat, "gate code", "--subject", bob)
    assert mine not in _recalled(seat, "gate code")  # the seat does not read subjects' rings
    missing = seat.run("recall", "gate code", "--subject", "nobody", ok=False)
    assert isinstance(missing.exception, EngramError)
    assert missing.exception.code == "user_not_found"
    assert seat.run("subject", "delete", "--subject", alice, "--yes").stdout == (
        f"erased {alice} (1 memories and stored items)\n"
    )
    gone = seat.run("memory", "history", mine, "--subject", bob, ok=False)
    assert isinstance(gone.exception, ResourceNotFound)
    assert len(_recalled(seat, "gate code", "--subject", bob)) == 1


@pytest.mark.req("engram.memory.supersede", "engram.memory.as-of")
def test_supersede_and_as_of_from_the_command_line(seat: Seat) -> None:
    old = _id(seat, "The on-call phone is the Nokia in drawer 3.")
    before: Any = parse_strict(
        seat.run("record", "Unrelated note.", "--kind", "decision", "--json").stdout
    )
    instant = str(before["memory"]["created_at"])
    done = seat.run(
        "record",
        "The on-call phone is now the Pixel on the desk.",
        "--kind",
        "decision",
        "--supersedes",
        old,
    )
    assert f"superseding {old}" in done.stdout
    now = _recalled(seat, "on-call phone")
    assert old not in now
    assert old in _recalled(seat, "on-call phone", "--as-of", instant)
    bad = seat.run("recall", "phone", "--as-of", "last tuesday", ok=False)
    assert isinstance(bad.exception, EngramError)
    assert bad.exception.message.startswith("--as-of: expected an RFC 3339 instant")
