"""Validly signed documents that are not the one asked for, from providers engram did not
write (issue 12, "Runtime SDK"): another subject, a rolled-back export, a diff from another
base, an expired key, a substituted key list under pinning. And the peers' own independence.
"""

from __future__ import annotations

import ast
import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import rfc8785
from peer_crypto import jcs_by_hand, jcs_package
from peers import PROFILES, Peer

from engram.errors import KeyExpired, KeyNotPinned, RollbackRefused, SubjectMismatch
from engram.runtime import EngramClient, RuntimeConfig

HERE = Path(__file__).parent


@pytest.fixture
def fresh(peers: dict[str, Peer]) -> Iterator[dict[str, Peer]]:
    yield peers
    for peer in peers.values():
        peer.reset()


def _client(peer: Peer, **options: object) -> EngramClient:
    return EngramClient(RuntimeConfig(peer.base_url, peer.token, **options))  # type: ignore[arg-type]


@pytest.mark.req("engram.runtime.subject-checked")
@pytest.mark.parametrize("name", sorted(PROFILES))
def test_an_export_about_another_subject_is_refused(fresh: dict[str, Peer], name: str) -> None:
    peer = fresh[name]
    with _client(peer) as engram:
        held = engram.fetch()
        peer.reset(frozenset({"other-subject"}))
        with pytest.raises(SubjectMismatch, match="someone-else"):
            engram.fetch()
        assert engram.current is not None
        assert engram.current.subject_id == held.subject_id
    with (
        _client(peer, subject_id=f"subject-{name}-expected") as pinned,
        pytest.raises(SubjectMismatch),
    ):
        pinned.fetch()


@pytest.mark.req("engram.runtime.rollback-refused")
@pytest.mark.parametrize("name", sorted(PROFILES))
def test_an_older_export_that_says_something_else_is_refused(
    fresh: dict[str, Peer], name: str
) -> None:
    peer = fresh[name]
    with _client(peer) as engram:
        engram.fetch()
        peer.reset(frozenset({"rollback"}))
        with pytest.raises(RollbackRefused, match="roll the context back"):
            engram.fetch()
        view = engram.current
    assert view is not None
    assert "(as it was)" not in view.system_prompt()


@pytest.mark.req("engram.runtime.diff-base-checked")
@pytest.mark.parametrize("name", ["triples", "keyvalue"])
def test_a_diff_from_another_base_is_not_applied(fresh: dict[str, Peer], name: str) -> None:
    peer = fresh[name]
    with _client(peer) as engram:
        engram.fetch()
        peer.reset(frozenset({"diff-base"}))
        view = engram.sync()
        reason = engram.last_diff_fallback
    assert reason is not None
    assert "after this view's cursor" in reason
    assert len(view.beliefs) == 5


@pytest.mark.req("engram.runtime.diff-fallback", "engram.runtime.diff-shapes")
@pytest.mark.parametrize("name", sorted(PROFILES))
def test_a_diff_in_no_documented_shape_is_replaced_by_the_verified_export(
    fresh: dict[str, Peer], name: str
) -> None:
    peer = fresh[name]
    with _client(peer) as engram:
        engram.fetch()
        peer.reset(frozenset({"unknown-diff-shape"}))
        victim = peer.live()[0].id
        peer.delete(victim)
        view = engram.sync()
        reason = engram.last_diff_fallback
    assert reason is not None
    assert "not signed" in reason if not PROFILES[name].diff_signed else "not understood" in reason
    assert view.belief(victim) is None


@pytest.mark.req("engram.runtime.key-expiry")
@pytest.mark.parametrize("name", sorted(PROFILES))
def test_a_key_that_expired_before_the_export_does_not_verify_it(
    fresh: dict[str, Peer], name: str
) -> None:
    peer = fresh[name]
    peer.reset(frozenset({"expired-key"}))
    with _client(peer) as engram, pytest.raises(KeyExpired, match="whose key expired"):
        engram.fetch()


def _key_list_digest(peer: Peer) -> str:
    return hashlib.sha256(rfc8785.dumps(__import__("json").loads(peer.key_list()))).hexdigest()


@pytest.mark.req("engram.runtime.key-pinning")
@pytest.mark.parametrize("name", sorted(PROFILES))
def test_a_pinned_runtime_refuses_a_substituted_key_list(fresh: dict[str, Peer], name: str) -> None:
    peer = fresh[name]
    profile = PROFILES[name]
    digest = _key_list_digest(peer)
    with _client(peer, pinned_kids=frozenset({profile.kid})) as by_kid:
        by_kid.fetch()
        peer.reset(frozenset({"substituted-key"}))
        with pytest.raises(KeyNotPinned, match="does not pin"):
            by_kid.fetch()
    peer.reset()
    with _client(peer, pinned_key_list_sha256=digest) as by_digest:
        by_digest.fetch()
        peer.reset(frozenset({"substituted-key"}))
        with pytest.raises(KeyNotPinned, match="substituted key list"):
            by_digest.fetch()
    # Unpinned, a new key under a new kid is the provider's to publish: refetched, accepted.
    with _client(peer) as unpinned:
        assert unpinned.fetch().kid == profile.kid + "-substitute"


@pytest.mark.req("engram.runtime.cli-fetch", "engram.runtime.any-belief")
def test_context_fetch_prints_a_prompt_built_from_a_peer_without_injection(
    fresh: dict[str, Peer],
) -> None:
    peer = fresh["triples"]
    run = subprocess.run(
        [sys.executable, "-c", "from engram.cli import main; main()", "context", "fetch",
         "--provider", peer.base_url, "--token", peer.token, "--scope", "professional"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[:2] == [
        "User: Peer User (Europe/Lisbon).",
        "Known about the user (scope professional):",
    ]
    assert "- [preference] the user prefers green tea" in run.stdout
    assert "penicillin" not in run.stdout


@pytest.mark.req("engram.runtime.interop-matrix")
def test_the_peers_import_nothing_of_engram() -> None:
    for path in sorted(HERE.glob("peer*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert not {m for m in imported if m == "engram" or m.startswith("engram.")}, path.name


@pytest.mark.req("engram.runtime.interop-matrix")
@pytest.mark.parametrize("name", sorted(PROFILES))
def test_the_hand_written_canonicaliser_agrees_with_the_package(
    fresh: dict[str, Peer], name: str
) -> None:
    import json

    peer = fresh[name]
    for document in (
        peer.export("full"),
        peer.diff("2020-01-01T00:00:00Z", "full"),
        peer.key_list(),
    ):
        value = json.loads(document)
        assert jcs_by_hand(value) == jcs_package(value)
