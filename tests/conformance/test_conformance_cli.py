"""``engram conformance provider|verify`` end to end over a real loopback socket."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from engram.cli import cli
from engram.cli import run_cli as _run_cli
from engram.conformance import load_ledger
from engram.context import issue_token
from engram.context.internals import seed_demo
from engram.core.canonical import parse_strict
from engram.core.clock import FixedClock, SystemClock
from engram.core.keys import save_private_key
from engram.provider import ProviderConfig, create_app
from engram.store import open_store
from engram.store.keys import KeyStore


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


@dataclass
class Served:
    url: str
    token: str
    key_file: Path
    expired: str


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    store = open_store(f"sqlite:///{tmp_path / 'engram.db'}")
    clock = SystemClock()
    app = create_app(ProviderConfig(public_url=url), store, clock)
    demo = seed_demo(store, clock)
    two_days_ago = FixedClock(clock.now() - timedelta(days=2))
    expired = issue_token(store, two_days_ago, demo.subject.id, ["read"], timedelta(hours=1))
    _, key = KeyStore(store).ensure_active(clock.now())
    key_file = tmp_path / "bundle-key.pem"
    save_private_key(key_file, key)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield Served(url, demo.token, key_file, expired)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def run_cli(group: object, args: list[str]) -> int:
    """The CLI's exit status: a verdict of "no" leaves through SystemExit(1)."""
    try:
        return _run_cli(cli, args)
    except SystemExit as e:
        return int(str(e.code))


@pytest.mark.req(
    "engram.conformance.runner.claimed-tier-exit", "engram.conformance.bundle.key-published"
)
def test_the_cli_certifies_a_served_provider_and_verifies_its_bundle(
    served: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = tmp_path / "bundle.json"
    args = ["conformance", "provider", served.url, "--token", served.token]
    signing = ["--bundle", str(bundle), "--sign-key", str(served.key_file), "--build-id", "abc123"]
    assert run_cli(cli, [*args, "--admin-token", served.token, *signing]) == 0
    out = capsys.readouterr().out
    assert "claimed tier 3 (Full) holds; recommended badge: Full" in out
    assert _parsed(bundle.read_bytes())["claim"]["certified"] is True

    assert run_cli(cli, ["conformance", "verify", str(bundle), "--discovery", served.url]) == 0
    assert capsys.readouterr().out.startswith("certified: certified at Full (tier 3)")
    assert run_cli(cli, ["conformance", "verify", str(bundle)]) == 1
    assert capsys.readouterr().out.startswith("no-discovery: no discovery document was read")

    # Without a way to delete, Full cannot be claimed: exit 1, badge Reader.
    assert run_cli(cli, [*args, "--json"]) == 1
    report = _parsed(capsys.readouterr().out)
    assert (report["claimHolds"], report["badge"]) == (False, "Reader")
    assert run_cli(cli, [*args, "--tier", "1"]) == 0


@pytest.mark.req("engram.conformance.runner.token-refused")
@pytest.mark.parametrize("which", ["wrong", "expired"])
def test_a_refused_token_is_one_line_not_a_table_of_failures(
    served: Served, which: str, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "eng_not-a-token-this-provider-issued" if which == "wrong" else served.expired
    code = "unauthorized" if which == "wrong" else "token_expired"
    assert run_cli(cli, ["conformance", "provider", served.url, "--token", token]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(
        f"error: token_refused: the provider at {served.url} refused the --token (HTTP 401 {code}"
    )
    assert captured.err.endswith("nothing was judged\n")
    assert captured.err.count("\n") == 1
    assert token not in captured.err


@pytest.mark.req("engram.conformance.runner.token-refused")
def test_a_refused_admin_token_is_one_line_too(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 32: a wrong --admin-token printed the tables and "tier 3 does NOT hold", blaming
    # the provider for the operator's token.
    wrong = "eng_not-an-admin-token-this-provider-issued"
    args = ["conformance", "provider", served.url, "--token", served.token]
    assert run_cli(cli, [*args, "--admin-token", wrong]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(
        f"error: token_refused: the provider at {served.url} refused the --admin-token (HTTP 401"
    )
    assert "has the admin permission: nothing was judged\n" in captured.err
    assert captured.err.count("\n") == 1
    assert wrong not in captured.err


@pytest.mark.req("engram.conformance.runner.tables-unbroken")
def test_piped_tables_never_break_a_requirement_id(
    served: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(cli, ["conformance", "provider", served.url, "--token", served.token]) == 1
    out = capsys.readouterr().out
    ids = set(re.findall(r"engram\.context\.[a-z0-9.-]+", out))
    ledger = {r.id for r in load_ledger().select(party="provider")}
    assert len(ids) >= 15
    assert ids <= ledger  # every id printed is whole: no fragment of a wrapped one
    rows = [line for line in out.splitlines() if "engram.context." in line]
    assert len(rows) == len(ids)  # one line per requirement, none continued on the next
