"""§16.7.1: the host-side route event envelope, propagation bounds, dedupe and correlation."""

from __future__ import annotations

import json
from typing import Any

import pytest

from acx_json_kit import graph
from engram.graph import (
    ConvergenceInbox,
    PropagationLimit,
    RouteEvent,
    RouteEventError,
    RouteLedger,
    graph_digest,
    lint_graph,
)
from engram.graph.internals import KnowledgeRef

DIGEST = graph_digest(graph())


def _ledger(**limits: int) -> RouteLedger:
    document = graph()
    document["limits"].update(limits)
    return RouteLedger(document, graph_digest(document))


@pytest.mark.req("engram.graph.event-envelope")
def test_the_envelope_round_trips_exactly() -> None:
    ledger = RouteLedger(graph(), DIGEST)
    event = ledger.originate("lead-directs", [KnowledgeRef("brief", "rev-7")], event_id="e1",
                             correlation_id="c1")  # fmt: skip
    wire = event.to_wire()
    assert wire == {
        "eventId": "e1",
        "correlationId": "c1",
        "graphDigest": DIGEST,
        "routeId": "lead-directs",
        "hopCount": 0,
        "knowledge": [{"id": "brief", "revision": "rev-7"}],
    }
    assert RouteEvent.from_wire(json.loads(json.dumps(wire))) == event  # noqa: TID251


@pytest.mark.req("engram.graph.event-envelope")
@pytest.mark.parametrize(
    "change",
    [
        lambda w: w["knowledge"][0].update(content="Build the login page"),
        lambda w: w.update(knowledge=[]),
        lambda w: w.update(hopCount=-1),
        lambda w: w.update(hopCount=True),
        lambda w: w.update(graphDigest="latest"),
        lambda w: w.pop("correlationId"),
        lambda w: w.update(permissions=["deploy"]),
        lambda w: w.update(eventId=""),
    ],
)
def test_malformed_envelopes_are_refused(change: Any) -> None:
    wire = (
        RouteLedger(graph(), DIGEST)
        .originate("lead-directs", [KnowledgeRef("brief", "1")])
        .to_wire()
    )
    change(wire)
    with pytest.raises(RouteEventError):
        RouteEvent.from_wire(wire)


@pytest.mark.req("engram.graph.event-hops", "engram.graph.route-fanout")
def test_forwarding_stops_before_the_hop_bound() -> None:
    ledger = _ledger(maxPropagationHops=2)
    first = ledger.originate("lead-directs", [KnowledgeRef("brief", "1")])
    assert first.hop_count == 0
    assert first.causation_id is None
    second = ledger.forward(first, "builders-report", [KnowledgeRef("status", "2")])
    third = ledger.forward(second, "lead-directs", [KnowledgeRef("brief", "3")])
    assert (second.hop_count, third.hop_count) == (1, 2)
    assert third.correlation_id == first.correlation_id
    assert third.causation_id == second.event_id
    with pytest.raises(PropagationLimit):
        ledger.forward(third, "builders-report", [KnowledgeRef("status", "4")])
    assert ledger.targets(first) == ("builders", "researchers")
    with pytest.raises(RouteEventError, match="does not carry"):
        ledger.forward(first, "builders-report", [KnowledgeRef("decision", "x")])
    wide = graph()
    wide["limits"]["maxFanout"] = 1  # a host handed an unlinted graph still applies the bound
    assert not lint_graph(wide).ok
    narrow = RouteLedger(wide, graph_digest(wide))
    with pytest.raises(PropagationLimit, match="maxFanout"):
        narrow.targets(narrow.originate("lead-directs", [KnowledgeRef("brief", "1")]))


@pytest.mark.req("engram.graph.event-dedupe")
def test_repeated_delivery_is_dropped_within_a_correlation() -> None:
    ledger = RouteLedger(graph(), DIGEST)
    event = ledger.originate("lead-directs", [KnowledgeRef("brief", "1")], event_id="e")
    assert ledger.accept(event) is True
    assert ledger.accept(RouteEvent.from_wire(event.to_wire())) is False
    other = ledger.originate("lead-directs", [KnowledgeRef("brief", "1")], event_id="e",
                             correlation_id="another")  # fmt: skip
    assert ledger.accept(other) is True
    foreign = RouteEvent.from_wire({**event.to_wire(), "graphDigest": "sha256:" + "0" * 64})
    with pytest.raises(RouteEventError, match="another graph"):
        ledger.accept(foreign)


@pytest.mark.req("engram.graph.event-correlation", "engram.graph.convergence-bounded")
def test_convergence_inputs_never_merge_across_correlations() -> None:
    ledger = RouteLedger(graph(), DIGEST)
    inbox = ConvergenceInbox(graph(), "steering")
    status_a = ledger.originate(
        "builders-report", [KnowledgeRef("status", "a")], correlation_id="A"
    )
    evidence_b = ledger.originate("research-advises", [KnowledgeRef("evidence", "b")],
                                  correlation_id="B")  # fmt: skip
    assert inbox.add("build-loop", status_a) is False
    assert inbox.add("research-loop", evidence_b) is False
    assert not inbox.complete("A")
    assert not inbox.complete("B")
    evidence_a = ledger.originate("research-advises", [KnowledgeRef("evidence", "a2")],
                                  correlation_id="A")  # fmt: skip
    assert inbox.add("research-loop", evidence_a) is True
    assert {k: v.revision for k, v in inbox.inputs("A").items()} == {
        ("build-loop", "status"): "a",
        ("research-loop", "evidence"): "a2",
    }
    assert [inbox.begin_round("A"), inbox.begin_round("A")] == [1, 2]
    with pytest.raises(PropagationLimit, match="maxRounds"):
        inbox.begin_round("A")
