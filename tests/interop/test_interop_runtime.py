"""engram's runtime SDK against providers it did not write (issue 12, "Tests").

The matrix: every independent peer (tests/interop/peers.py) x {clean, each fault} x {no scope,
scope=professional}. The runtime must accept exactly the conformant exports and refuse each
fault with the error that names it; ``sync()`` must never raise while the provider is reachable
and its exports are good, whatever shape its diffs take (signed or unsigned, every tombstone
form), and must leave the view as the provider's data says.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from peers import FAULTS, PROFILES, SENSITIVE, Peer

from engram.errors import EngramError, ExportExpired, ScopeMismatch, SignatureInvalid
from engram.runtime import ContextView, EngramClient, RuntimeConfig

SCOPES: tuple[str | None, ...] = (None, "professional")
CASES = [(name, fault) for name in PROFILES for fault in ("clean", *FAULTS)]
SCOPE_FAULTS = {"sensitive-in-professional", "scope-ignored", "wrong-scope-label"}


def expected_refusal(fault: str, scope: str | None) -> type[EngramError] | None:
    """The error a conformant runtime answers a fault's export with (None: accepted)."""
    if fault == "expired":
        return ExportExpired
    if fault == "bad-signature":
        return SignatureInvalid
    if scope == "professional" and fault in SCOPE_FAULTS:
        return ScopeMismatch
    return None


@dataclass
class Cell:
    provider: str
    fault: str
    scope: str | None
    right: bool
    seen: str

    def label(self) -> str:
        return f"{self.provider} x {self.fault} x scope={self.scope or 'none'}: {self.seen}"


def _client(peer: Peer, url: str, scope: str | None) -> EngramClient:
    return EngramClient(RuntimeConfig(url, peer.token, runtime_id="interop-test", scope=scope))


@pytest.fixture
def servers(peers: dict[str, Peer]) -> Iterator[dict[str, tuple[Peer, str]]]:
    yield {name: (peer, peer.base_url) for name, peer in peers.items()}
    for peer in peers.values():
        peer.reset()


def _accepted_view_is_faithful(peer: Peer, view: ContextView, scope: str | None) -> str | None:
    """Why an accepted view does not say what the peer served, or None when it does."""
    admitted = [b for b in peer.live() if scope != "professional" or b.category not in SENSITIVE]
    if {b.id for b in view.beliefs} != {b.id for b in admitted}:
        return f"beliefs {sorted(str(b.id) for b in view.beliefs)} are not the peer's"
    prompt = view.system_prompt()
    missing = [b.object for b in admitted if b.object not in prompt]
    if missing:
        return f"the prompt leaves out {missing}"
    if scope == "professional" and "penicillin" in prompt:
        return "a health belief reached a professional prompt"
    return None


def _render(title: str, cells: list[Cell]) -> str:
    right = sum(c.right for c in cells)
    lines = [f"{title}: {right}/{len(cells)} right"]
    for name in PROFILES:
        row = [c for c in cells if c.provider == name]
        lines.append(f"  {name:<11} {sum(c.right for c in row)}/{len(row)}")
    lines += ["  WRONG " + c.label() for c in cells if not c.right]
    return "\n".join(lines)


@pytest.mark.req(
    "engram.runtime.any-belief", "engram.runtime.scope-checked", "engram.runtime.interop-matrix"
)
def test_the_runtime_accepts_exactly_the_conformant_exports(
    servers: dict[str, tuple[Peer, str]],
) -> None:
    cells: list[Cell] = []
    for name, fault in CASES:
        peer, url = servers[name]
        for scope in SCOPES:
            peer.reset(frozenset() if fault == "clean" else frozenset({fault}))
            expected = expected_refusal(fault, scope)
            with _client(peer, url, scope) as engram:
                try:
                    view = engram.fetch()
                except EngramError as e:
                    right = expected is not None and type(e) is expected
                    cells.append(Cell(name, fault, scope, right, f"{e.code}: {e.message}"))
                    continue
            problem = _accepted_view_is_faithful(peer, view, scope)
            right = expected is None and problem is None
            seen = problem or ("accepted" if expected is None else f"accepted, not {expected.code}")
            cells.append(Cell(name, fault, scope, right, seen))
    report = _render("runtime fetch (providers x faults x scopes)", cells)
    print("\n" + report)
    assert all(c.right for c in cells), report


@pytest.mark.req(
    "engram.runtime.diff-shapes",
    "engram.runtime.diff-fallback",
    "engram.runtime.diff-never-raised",
    "engram.runtime.since-instants",
    "engram.runtime.interop-matrix",
)
def test_sync_never_raises_while_the_provider_is_reachable(
    servers: dict[str, tuple[Peer, str]],
) -> None:
    cells: list[Cell] = []
    for name, fault in CASES:
        peer, url = servers[name]
        profile = PROFILES[name]
        for scope in SCOPES:
            peer.reset(frozenset() if fault == "clean" else frozenset({fault}))
            expected = expected_refusal(fault, scope)
            victim = next(b.id for b in peer.live() if b.category == "preference")
            with _client(peer, url, scope) as engram:
                try:
                    engram.fetch()
                except EngramError as e:
                    # Nothing acceptable was ever served: sync() can only say so, in the same terms.
                    try:
                        engram.sync()
                        seen, right = "sync() returned a view of a refused provider", False
                    except EngramError as again:
                        seen = f"fetch and sync refused: {again.code}"
                        right = type(again) is type(e) is expected
                    cells.append(Cell(name, fault, scope, right, seen))
                    continue
                peer.delete(victim)
                added = peer.add("professional", "speaks", "Portuguese")
                try:
                    view = engram.sync()
                except EngramError as e:
                    cells.append(
                        Cell(name, fault, scope, False, f"sync raised {e.code}: {e.message}")
                    )
                    continue
                fallback = engram.last_diff_fallback
            # A signed diff that drops the deletion cannot be told from one that has nothing to
            # delete; an unsigned diff is never used, so the full export shows the deletion.
            kept = fault == "missing-tombstones" and profile.diff_signed
            problems = []
            if (view.belief(victim) is not None) != kept:
                problems.append(f"deleted belief {victim} {'gone' if kept else 'still held'}")
            if view.belief(added) is None or "Portuguese" not in view.system_prompt():
                problems.append("the added belief is missing")
            if (fallback is None) != profile.diff_signed:
                problems.append(f"diff fallback {fallback!r}")
            if expected is not None:
                problems.append(f"accepted, not {expected.code}")
            seen = "; ".join(problems) or (
                "applied the diff" if fallback is None else f"fell back: {fallback}"
            )
            cells.append(Cell(name, fault, scope, not problems, seen))
    report = _render("SDK sync (providers x faults x scopes)", cells)
    print("\n" + report)
    assert all(c.right for c in cells), report


@pytest.mark.req("engram.runtime.any-belief")
def test_every_peer_belief_shape_renders_into_the_prompt(
    servers: dict[str, tuple[Peer, str]],
) -> None:
    rendered = {}
    for name, (peer, url) in servers.items():
        peer.reset()
        with _client(peer, url, None) as engram:
            view = engram.fetch()
        line = next(b.text for b in view.beliefs if "green tea" in b.text)
        rendered[name] = line
    assert rendered == {
        "triples": "the user prefers green tea",
        "statements": "The user prefers green tea.",
        "records": 'attributes: {"prefers":"green tea"}; tags: ["preference"]',
        "keyvalue": "prefers: green tea",
    }
