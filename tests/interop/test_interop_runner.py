"""engram's conformance runner against providers it did not write (issue 12, "Tests").

For every independent peer x {clean, each fault}: the badge is Full for a conformant peer and
never above the ceiling the fault allows, and exactly the rows that test the fault fail. The
peers offer no engram admin API, so tombstones are provoked the way an operator would: a
``--delete-hook`` that is a plain ``curl`` with the ``{belief_id}`` placeholder.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator

import pytest
from peers import FAULTS, PROFILES, Peer

from engram.conformance import ProviderRunOptions, load_ledger, run_provider
from engram.conformance.internals import BADGES

C = "engram.context."
FAULT_ROWS: dict[str, frozenset[str]] = {
    "clean": frozenset(),
    "auto-apply": frozenset({C + "p2.correction-not-applied"}),
    "sensitive-in-professional": frozenset({C + "p3.scope-professional"}),
    "expired": frozenset({C + "checklist"}),
    "bad-signature": frozenset({C + "p3.signature-verifies"}),
    "missing-tombstones": frozenset({C + "p2.diff-tombstones"}),
    "scope-ignored": frozenset({C + "p3.scope-professional"}),
    "wrong-scope-label": frozenset({C + "p3.scope-professional"}),
}
"""Each fault -> the rows that test it, which must fail (and no other row may)."""
assert FAULT_ROWS.keys() == {"clean", *FAULTS}

RANK = {"none": 0, **{name: tier for tier, name in BADGES.items()}}


def ceiling(failing: frozenset[str], tiers: dict[str, int]) -> str:
    """The highest badge a provider whose ``failing`` rows fail could earn."""
    lowest = min((tiers[r] for r in failing), default=4)
    return "none" if lowest == 1 else BADGES.get(lowest - 1, "Full")


def delete_hook(peer: Peer) -> tuple[str, ...]:
    return (
        "curl",
        "-fsS",
        "-X",
        "DELETE",
        "-H",
        f"Authorization: Bearer {peer.admin_token}",
        f"{peer.base_url}/admin/beliefs/{{belief_id}}",
    )


@pytest.fixture
def fresh(peers: dict[str, Peer]) -> Iterator[dict[str, Peer]]:
    yield peers
    for peer in peers.values():
        peer.reset()


@pytest.mark.req(
    "engram.conformance.runner.field-names-free",
    "engram.conformance.runner.interop-matrix",
    "engram.conformance.runner.delete-hook-placeholder",
    "engram.conformance.runner.injection-or-beliefs",
    "engram.conformance.runner.tombstone-shapes",
)
async def test_the_runner_badges_every_peer_truthfully(fresh: dict[str, Peer]) -> None:
    ledger = load_ledger()
    tiers = {r.id: r.tier for r in ledger.select(party="provider") if r.tier is not None}
    cells: list[tuple[str, str, bool, str]] = []
    for name in PROFILES:
        peer = fresh[name]
        for fault, rows in FAULT_ROWS.items():
            peer.reset(frozenset() if fault == "clean" else frozenset({fault}))
            options = ProviderRunOptions(peer.base_url, peer.token, delete_hook=delete_hook(peer))
            report = await run_provider(options, ledger)
            failing = {r.id: r.detail for r in report.rows if r.result != "executed-pass"}
            allowed = ceiling(rows, tiers)
            right = set(failing) == rows and RANK[report.badge] <= RANK[allowed]
            right = right and (fault != "clean" or report.badge == "Full")
            seen = f"badge {report.badge} (ceiling {allowed}); not passing: {failing}"
            cells.append((name, fault, right, seen))
    total_right = sum(c[2] for c in cells)
    lines = [f"runner (providers x faults): {total_right}/{len(cells)} right"]
    for name in PROFILES:
        row = [c for c in cells if c[0] == name]
        lines.append(f"  {name:<11} {sum(c[2] for c in row)}/{len(row)}")
    lines += [f"  WRONG {n} x {f}: {s}" for n, f, ok, s in cells if not ok]
    print("\n" + "\n".join(lines))
    assert total_right == len(cells), "\n".join(lines)


@pytest.mark.req("engram.conformance.runner.hook-output-captured")
def test_json_output_pipes_into_jq_with_a_hook_that_prints(fresh: dict[str, Peer]) -> None:
    peer = fresh["triples"]
    peer.reset()
    engram = shlex.join([sys.executable, "-c", "from engram.cli import main; main()"])
    command = (
        f"{engram} conformance provider {shlex.quote(peer.base_url)} --token {peer.token} "
        f"--delete-hook {shlex.quote(shlex.join(delete_hook(peer)))} --json | jq -r .badge"
    )
    run = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, "Full\n", "")
    # The hook did print (curl shows the peer's answer); none of it reached the JSON.
    assert peer.live() != peer.beliefs


@pytest.mark.req("engram.conformance.runner.hook-output-captured")
async def test_a_failing_hook_is_blocked_with_its_output_shown(fresh: dict[str, Peer]) -> None:
    peer = fresh["keyvalue"]
    peer.reset()
    hook = ("sh", "-c", 'echo "cannot delete $0" >&2; exit 3', "{belief_id}")
    options = ProviderRunOptions(peer.base_url, peer.token, delete_hook=hook)
    report = await run_provider(options, load_ledger())
    row = next(r for r in report.rows if r.id == C + "p2.diff-tombstones")
    assert row.result == "blocked"
    assert row.detail is not None
    assert "exited with status 3" in row.detail
    assert "stderr: cannot delete kv:5" in row.detail


@pytest.mark.req("engram.conformance.runner.probe-labelled")
async def test_probe_corrections_are_labelled_and_reported_pending(fresh: dict[str, Peer]) -> None:
    peer = fresh["statements"]
    peer.reset()
    options = ProviderRunOptions(peer.base_url, peer.token, delete_hook=delete_hook(peer))
    report = await run_provider(options, load_ledger())
    proposals = [c["proposed"] for c in peer.corrections]
    assert proposals
    assert all(p.startswith("engram conformance probe ecp-") for p in proposals)
    assert all("not a real correction" in p for p in proposals)
    assert any("stay pending on the host" in n for n in report.notes)


@pytest.mark.req("engram.conformance.runner.tombstone-shapes")
async def test_a_diff_in_no_documented_shape_fails_with_the_diff_shown(
    fresh: dict[str, Peer],
) -> None:
    peer = fresh["records"]
    peer.reset(frozenset({"unknown-diff-shape"}))
    options = ProviderRunOptions(peer.base_url, peer.token, delete_hook=delete_hook(peer))
    report = await run_provider(options, load_ledger())
    row = next(r for r in report.rows if r.id == C + "p2.diff-tombstones")
    assert row.result == "executed-fail"
    assert row.detail is not None
    assert "diff shape not understood (the diff has none of the members changes" in row.detail
    assert '"delta":{"set":' in row.detail
    assert report.badge == "Reader"
