"""Every §16 rule lint enforces, each broken on its own and named by its requirement id."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acx_json_kit import graph
from engram.graph import lint_graph, load_graph

Mutation = Callable[[dict[str, Any]], object]


def _route(doc: dict[str, Any], route_id: str) -> dict[str, Any]:
    (route,) = [r for r in doc["routes"] if r["id"] == route_id]
    assert isinstance(route, dict)
    return route


def _new_route(route_id: str, source: str, targets: list[str], carries: list[str],
               intent: str = "direct", obligation: str = "must") -> dict[str, Any]:  # fmt: skip
    return {
        "id": route_id,
        "from": source,
        "to": targets,
        "intent": intent,
        "obligation": obligation,
        "purpose": "A route added by a test case.",
        "carries": carries,
        "triggers": [{"type": "manual"}],
    }


CASES: list[tuple[str, Mutation, str]] = [
    (
        "embedded content",
        lambda d: d["knowledge"][0].update(content="Build the login page."),
        "engram.graph.metadata-only",
    ),
    (
        "embedded transcript",
        lambda d: d["knowledge"][1].update(transcript=["hi"]),
        "engram.graph.metadata-only",
    ),
    (
        "permission grant",
        lambda d: d["actors"][0].update(permissions=["deploy"]),
        "engram.graph.non-executing",
    ),
    (
        "executable payload",
        lambda d: d["routes"][0].update(command="curl evil"),
        "engram.graph.non-executing",
    ),
    ("unknown member", lambda d: d["routes"][0].update(colour="red"), "engram.graph.schema"),
    ("empty cardinality", lambda d: d["actors"][0].update(cardinality={}), "engram.graph.schema"),
    (
        "inverted cardinality",
        lambda d: d["actors"][1].update(cardinality={"min": 3, "max": 2}),
        "engram.graph.cardinality",
    ),
    (
        "periodic freshness unbounded",
        lambda d: d["knowledge"][0].update(freshness={"mode": "periodic", "description": "Daily."}),
        "engram.graph.schema",
    ),
    (
        "expression trigger",
        lambda d: _route(d, "builders-report").update(triggers=["when done"]),
        "engram.graph.schema",
    ),
    (
        "event not dotted",
        lambda d: _route(d, "builders-report").update(
            triggers=[{"type": "event", "events": ["done"]}]
        ),
        "engram.graph.schema",
    ),
    ("zero hops", lambda d: d["limits"].update(maxPropagationHops=0), "engram.graph.schema"),
    (
        "returns without expects",
        lambda d: _route(d, "lead-directs").pop("expects"),
        "engram.graph.schema",
    ),
    (
        "workflowRef on informal loop",
        lambda d: d["loops"][1].update(workflowRef={"id": "x"}),
        "engram.graph.schema",
    ),
    (
        "acx-workflow without workflowRef",
        lambda d: d["loops"][0].pop("workflowRef"),
        "engram.graph.schema",
    ),
    ("one convergence input", lambda d: d["convergence"][0]["inputs"].pop(), "engram.graph.schema"),
    (
        "duplicate actor",
        lambda d: d["actors"].append(copy.deepcopy(d["actors"][0])),
        "engram.graph.unique-ids",
    ),
    (
        "duplicate route",
        lambda d: d["routes"].append(copy.deepcopy(d["routes"][2])),
        "engram.graph.unique-ids",
    ),
    (
        "unknown steward",
        lambda d: d["knowledge"][0].update(stewards=["ghost"]),
        "engram.graph.references",
    ),
    (
        "unknown target",
        lambda d: _route(d, "research-advises").update(to=["ghost"]),
        "engram.graph.references",
    ),
    (
        "unknown carried module",
        lambda d: _route(d, "research-advises").update(carries=["ghost"]),
        "engram.graph.references",
    ),
    (
        "unknown return route",
        lambda d: _route(d, "lead-directs")["expects"].update(via="ghost"),
        "engram.graph.references",
    ),
    (
        "unknown convergence loop",
        lambda d: d["convergence"][0]["inputs"][0].update(loop="ghost"),
        "engram.graph.references",
    ),
    (
        "self route",
        lambda d: _route(d, "lead-directs")["to"].append("lead"),
        "engram.graph.route-self",
    ),
    ("fan-out", lambda d: d["limits"].update(maxFanout=1), "engram.graph.route-fanout"),
    (
        "return route backwards",
        lambda d: _route(d, "lead-directs")["expects"].update(via="lead-directs"),
        "engram.graph.route-returns",
    ),
    (
        "return route drops a module",
        lambda d: _route(d, "lead-directs").update(returns=["status", "evidence"]),
        "engram.graph.route-returns",
    ),
    (
        "two mandatory directors",
        lambda d: d["routes"].append(_new_route("r2", "researchers", ["builders"], ["brief"])),
        "engram.graph.direction-owner",
    ),
    (
        "mandatory command cycle",
        lambda d: d["routes"].append(_new_route("r2", "builders", ["lead"], ["brief"])),
        "engram.graph.direction-acyclic",
    ),
    (
        "alias bound twice",
        lambda d: d["loops"][0]["actorBindings"].append(
            {"actor": "lead", "participants": ["builder"]}
        ),
        "engram.graph.participant-one-actor",
    ),
    (
        "single-loop convergence",
        lambda d: (
            d["convergence"][0]["inputs"][1].update(loop="build-loop"),
            d["loops"][0]["exports"].append("evidence"),
        ),
        "engram.graph.convergence-loops",
    ),
    (
        "input not exported",
        lambda d: d["loops"][1].update(exports=["decision"]),
        "engram.graph.convergence-exported",
    ),
    (
        "input never reaches steward",
        lambda d: (
            d["convergence"][0].update(steward="researchers"),
            d["knowledge"][3].update(stewards=["researchers"]),
        ),
        "engram.graph.convergence-reachable",
    ),
    (
        "output is an input",
        lambda d: d["convergence"][0]["outputs"].append("status"),
        "engram.graph.convergence-outputs",
    ),
    (
        "steward does not steward output",
        lambda d: d["knowledge"][3].update(stewards=["builders"]),
        "engram.graph.convergence-outputs",
    ),
    (
        "isolated actor",
        lambda d: d["actors"].append(
            {"id": "bystander", "kind": "human", "description": "Nobody."}
        ),
        "engram.graph.no-isolated-actor",
    ),
    (
        "unused knowledge",
        lambda d: d["knowledge"].append(
            {"id": "lore", "kind": "tacit", "description": "Unused.", "stewards": ["lead"]}
        ),
        "engram.graph.no-unused-knowledge",
    ),
    (
        "self lineage",
        lambda d: d.update(
            lineage={
                "parents": [
                    {
                        "artifactType": "agent-graph",
                        "publisherId": "io.github.a",
                        "id": "x",
                        "digest": "sha256:" + "1" * 64,
                        "relation": "fork",
                    }
                ]
                * 2
            }
        ),
        "engram.graph.lineage",
    ),
]


@pytest.mark.req(
    "engram.graph.schema",
    "engram.graph.metadata-only",
    "engram.graph.non-executing",
    "engram.graph.cardinality",
    "engram.graph.freshness-bounded",
    "engram.graph.route-triggers",
    "engram.graph.limits",
    "engram.graph.loop-binding",
    "engram.graph.unique-ids",
    "engram.graph.references",
    "engram.graph.route-self",
    "engram.graph.route-fanout",
    "engram.graph.route-returns",
    "engram.graph.direction-owner",
    "engram.graph.direction-acyclic",
    "engram.graph.participant-one-actor",
    "engram.graph.convergence-loops",
    "engram.graph.convergence-exported",
    "engram.graph.convergence-reachable",
    "engram.graph.convergence-outputs",
    "engram.graph.convergence-bounded",
    "engram.graph.no-isolated-actor",
    "engram.graph.no-unused-knowledge",
    "engram.graph.lineage",
)
@pytest.mark.parametrize(("case", "mutate", "rule"), CASES, ids=[c[0] for c in CASES])
def test_each_broken_rule_is_named_alone(case: str, mutate: Mutation, rule: str) -> None:
    document = graph()
    assert not lint_graph(document, publish=True).errors
    mutate(document)
    report = lint_graph(document)
    assert report.rules == {rule}, [str(i) for i in report.issues]


@pytest.mark.req("engram.graph.convergence-bounded")
def test_convergence_bounds_are_positive() -> None:
    for member in ("maxWaitMs", "maxRounds"):
        document = graph()
        document["convergence"][0]["limits"][member] = 0
        assert lint_graph(document).rules == {"engram.graph.schema"}


@pytest.mark.req("engram.graph.direction-acyclic")
def test_reporting_cycles_are_healthy() -> None:
    document = graph()
    # lead -> builders (direct, must) and builders -> lead (report, must) is a cycle on purpose.
    document["routes"].append(
        _new_route("builders-escalate", "builders", ["lead"], ["brief"], intent="escalate")
    )
    assert lint_graph(document).ok
    document["routes"][-1]["intent"] = "direct"
    assert lint_graph(document).rules == {"engram.graph.direction-acyclic"}
    assert "builders -> lead -> builders" in str(lint_graph(document).errors[0])


@pytest.mark.req(
    "engram.graph.workflow-pinned", "engram.graph.publish-metadata", "engram.graph.publish-signed"
)
@pytest.mark.parametrize("member", ["publisherId", "version", "digest"])
def test_published_graphs_pin_their_workflows(member: str) -> None:
    document = graph()
    del document["loops"][0]["workflowRef"][member]
    assert lint_graph(document).ok
    assert lint_graph(document, publish=True).rules == {"engram.graph.workflow-pinned"}
    unsigned = lint_graph(graph(), publish=True)
    assert [w.rule for w in unsigned.warnings] == ["engram.graph.publish-signed"]
    document = graph()
    del document["license"]
    assert lint_graph(document, publish=True).rules == {"engram.graph.publish-metadata"}


@pytest.mark.req("engram.graph.publish-secret-scan")
@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["actors"][0].update(
            description="Signs with -----BEGIN OPENSSH PRIVATE KEY-----"
        ),
        lambda d: d["routes"][0].update(medium="xoxb-1234567890-abcdefghij"),
        lambda d: d["knowledge"][0].update(
            locator={"type": "manual", "description": "password: correct-horse-battery"}
        ),
        lambda d: d["actors"][1].update(selector={"description": "sha256:" + "9e" * 32}),
        lambda d: d.update(extensions={"com.example.ops": {"nested": {"apiToken": "t"}}}),
        lambda d: d["convergence"][0].update(failureMode="Page /Users/bob/oncall.txt"),
    ],
)
def test_secret_like_public_metadata_is_refused(mutate: Mutation) -> None:
    document = graph()
    mutate(document)
    assert lint_graph(document).ok
    assert lint_graph(document, publish=True).rules == {"engram.graph.publish-secret-scan"}


@pytest.mark.req("engram.graph.publish-secret-scan", "engram.graph.extensions-ignored")
def test_pinned_digests_and_unknown_extensions_pass() -> None:
    document = graph()
    document["extensions"] = {"com.example.viewer": {"layout": "radial", "x": None}}
    assert not lint_graph(document, publish=True).errors
    document["extensions"] = {"not-reverse-dns": {}}
    assert lint_graph(document).rules == {"engram.graph.schema"}


@pytest.mark.req("engram.graph.strict-json")
def test_only_strict_i_json_objects_are_read() -> None:
    for text in (b'{"a": 1, "a": 1}', b'{"x": Infinity}', b'"graph"', b"\xff"):
        with pytest.raises(Exception, match=r"I-JSON|JSON object"):
            load_graph(text)


# ---- hypothesis -------------------------------------------------------------------------------


@st.composite
def graphs(draw: st.DrawFn) -> dict[str, Any]:
    """A lead, n teams in a reporting ring, two loops converging at the lead."""
    n = draw(st.integers(2, 6))
    teams = [f"team-{i}" for i in range(n)]
    actors = [{"id": "lead", "kind": "human", "description": "Decides."}] + [
        {"id": t, "kind": draw(st.sampled_from(["agent", "group", "mixed"])), "description": t}
        for t in teams
    ]
    knowledge = [
        {"id": "brief", "kind": "requirement", "description": "Brief.", "stewards": ["lead"]}
    ]
    knowledge += [
        {"id": f"{t}-status", "kind": "status", "description": "S.", "stewards": [t]} for t in teams
    ]
    knowledge.append(
        {"id": "decision", "kind": "decision", "description": "D.", "stewards": ["lead"]}
    )
    routes = [
        {**_new_route("lead-directs", "lead", teams, ["brief"]), "returns": ["team-0-status"],
         "expects": {"via": "team-0-reports"}},
    ]  # fmt: skip
    routes += [
        _new_route(f"{t}-reports", t, ["lead"], [f"{t}-status"], intent="report") for t in teams
    ]
    routes += [
        _new_route(f"{t}-informs", t, [teams[(i + 1) % n]], [f"{t}-status"], intent="inform",
                   obligation="may")
        for i, t in enumerate(teams)
        if draw(st.booleans())
    ]  # fmt: skip
    loops = [
        {"id": f"loop-{i}", "kind": "informal", "description": "L.",
         "exports": [f"team-{i}-status"],
         "actorBindings": [{"actor": f"team-{i}", "participants": [f"p{i}"]}]}
        for i in range(2)
    ]  # fmt: skip
    convergence = [
        {
            "id": "meet",
            "description": "Loops meet.",
            "inputs": [{"loop": f"loop-{i}", "knowledge": [f"team-{i}-status"]} for i in range(2)],
            "steward": "lead",
            "policy": {
                "mode": draw(st.sampled_from(["consensus", "vote", "latest"])),
                "description": "P.",
            },
            "outputs": ["decision"],
            "trigger": "When both report.",
            "limits": {
                "maxWaitMs": draw(st.integers(1, 10**6)),
                "maxRounds": draw(st.integers(1, 5)),
            },
        }
    ]
    return {
        "schemaVersion": "acx.agent-graph/1",
        "id": "generated",
        "limits": {
            "maxPropagationHops": draw(st.integers(1, 9)),
            "maxFanout": n + draw(st.integers(0, 3)),
        },
        "actors": actors,
        "knowledge": knowledge,
        "routes": routes,
        "loops": loops,
        "convergence": convergence,
    }


def _break_target(doc: dict[str, Any], i: int) -> str:
    doc["routes"][i % len(doc["routes"])]["to"][0] = "zz-ghost"
    return "engram.graph.references"


def _break_steward(doc: dict[str, Any], i: int) -> str:
    doc["knowledge"][i % len(doc["knowledge"])]["stewards"] = ["zz-ghost"]
    return "engram.graph.references"


def _break_fanout(doc: dict[str, Any], i: int) -> str:
    doc["limits"]["maxFanout"] = len(doc["routes"][0]["to"]) - 1
    return "engram.graph.route-fanout"


def _break_direction(doc: dict[str, Any], i: int) -> str:
    teams = doc["routes"][0]["to"]
    doc["routes"].append(_new_route("zz-back", teams[i % len(teams)], ["lead"], ["brief"]))
    return "engram.graph.direction-acyclic"


def _break_owner(doc: dict[str, Any], i: int) -> str:
    teams = doc["routes"][0]["to"]
    source, target = teams[i % len(teams)], teams[(i + 1) % len(teams)]
    doc["routes"].append(_new_route("zz-second", source, [target], ["brief"]))
    return "engram.graph.direction-owner"


def _break_return(doc: dict[str, Any], i: int) -> str:
    doc["routes"][0]["returns"].append("decision")
    return "engram.graph.route-returns"


def _break_convergence(doc: dict[str, Any], i: int) -> str:
    doc["convergence"][0]["outputs"].append("team-1-status")
    return "engram.graph.convergence-outputs"


BREAKS = [_break_target, _break_steward, _break_fanout, _break_direction, _break_owner,
          _break_return, _break_convergence]  # fmt: skip


@pytest.mark.req(
    "engram.graph.references",
    "engram.graph.route-fanout",
    "engram.graph.direction-acyclic",
    "engram.graph.direction-owner",
    "engram.graph.route-returns",
    "engram.graph.convergence-outputs",
)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=graphs(), which=st.sampled_from(BREAKS), index=st.integers(0, 20))
def test_generated_graphs_name_exactly_the_broken_rule(
    document: dict[str, Any], which: Callable[[dict[str, Any], int], str], index: int
) -> None:
    assert lint_graph(document).ok, [str(i) for i in lint_graph(document).issues]
    expected = which(document, index)
    report = lint_graph(document)
    assert report.rules == {expected}, [str(i) for i in report.issues]
