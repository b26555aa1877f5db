"""Every §14 rule lint enforces, each broken on its own and named by its requirement id.

The table breaks one rule of a valid workflow per case and expects exactly that rule; the
hypothesis test generates valid workflows of many shapes, breaks one reference or bound, and
expects exactly the broken rule again (so one mistake is never reported as three).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acx_json_kit import workflow
from engram.workflow import lint_workflow, load_workflow

Mutation = Callable[[dict[str, Any]], object]


def _set(path: list[str | int], value: Any) -> Mutation:
    def apply(doc: dict[str, Any]) -> None:
        target: Any = doc
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return apply


def _drop(path: list[str | int]) -> Mutation:
    def apply(doc: dict[str, Any]) -> None:
        target: Any = doc
        for part in path[:-1]:
            target = target[part]
        del target[path[-1]]

    return apply


def _append(member: str, value: Any) -> Mutation:
    return lambda doc: doc[member].append(copy.deepcopy(value))


CASES: list[tuple[str, Mutation, str]] = [
    ("unknown member", _set(["nodes", 0, "script"], "rm -rf /"), "engram.workflow.schema"),
    (
        "expression string",
        _set(["edges", 2, "when"], "review.outcome == 'ok'"),
        "engram.workflow.schema",
    ),
    (
        "two shapes",
        _set(["edges", 2, "when"], {"always": True, "racAvailable": "code-wiki"}),
        "engram.workflow.schema",
    ),
    (
        "duplicate alias",
        _append("participants", {"alias": "builder", "bind": "slot", "slot": {"role": "x"}}),
        "engram.workflow.unique-ids",
    ),
    (
        "duplicate variable",
        _append("variables", {"name": "review", "type": "string"}),
        "engram.workflow.unique-ids",
    ),
    ("unknown agent", _set(["nodes", 0, "agent"], "ghost"), "engram.workflow.references"),
    ("unknown start", _set(["start"], "nowhere"), "engram.workflow.references"),
    ("unknown rac", _set(["nodes", 0, "requires", "rac"], ["infra"]), "engram.workflow.references"),
    ("dangling edge", _set(["edges", 0, "to"], "nowhere"), "engram.workflow.references"),
    (
        "undeclared var",
        _set(["edges", 2, "when", "var"], "verdict.outcome"),
        "engram.workflow.condition-references",
    ),
    (
        "undeclared rac in condition",
        _set(["edges", 3, "when"], {"racAvailable": "infra"}),
        "engram.workflow.condition-references",
    ),
    (
        "member of a scalar",
        _set(["edges", 2, "when"], {"var": "attempts.count", "op": "gt", "value": 1}),
        "engram.workflow.condition-types",
    ),
    ("in without array", _set(["edges", 2, "when", "op"], "in"), "engram.workflow.condition-types"),
    (
        "ordering on a boolean",
        _set(["edges", 2, "when"], {"var": "review.ok", "op": "lt", "value": True}),
        "engram.workflow.condition-types",
    ),
    (
        "wrong scalar type",
        _set(["edges", 2, "when"], {"var": "attempts", "op": "eq", "value": "3"}),
        "engram.workflow.condition-types",
    ),
    ("no completion", _drop(["nodes", 0, "completion"]), "engram.workflow.schema"),
    (
        "blank completion",
        _set(["nodes", 0, "completion", "passIntent"], "  "),
        "engram.workflow.completion-contract",
    ),
    (
        "second start event",
        lambda d: (
            d["nodes"].extend(
                [
                    {"id": "s1", "type": "event", "event": "start"},
                    {"id": "s2", "type": "event", "event": "start"},
                ]
            )
            or d["edges"].extend(
                [
                    {"from": "s1", "to": "build", "when": {"always": True}},
                    {"from": "s2", "to": "build", "when": {"always": True}},
                ]
            )
        ),
        "engram.workflow.start-event",
    ),
    (
        "unreachable node",
        _append("nodes", {"id": "orphan", "type": "event", "event": "stop"}),
        "engram.workflow.reachable",
    ),
    (
        "dead end",
        lambda d: (
            d["nodes"].append({"id": "limbo", "type": "event", "event": "handoff"})
            or d["edges"].append(
                {
                    "from": "build",
                    "to": "limbo",
                    "when": {"var": "attempts", "op": "gt", "value": 3},
                }
            )
            or d["edges"][0].update(when={"var": "attempts", "op": "le", "value": 3})
        ),
        "engram.workflow.reaches-terminal",
    ),
    (
        "no terminal",
        lambda d: (d["nodes"].pop(), d["edges"].pop(2)),
        "engram.workflow.reaches-terminal",
    ),
    (
        "edge out of a terminal",
        _append("edges", {"from": "done", "to": "review"}),
        "engram.workflow.terminal-no-outgoing",
    ),
    (
        "unconditional branches",
        _append("edges", {"from": "build", "to": "gate"}),
        "engram.workflow.branch-conditions",
    ),
    (
        "duplicate edge",
        _append("edges", {"from": "review", "to": "gate"}),
        "engram.workflow.duplicate-edges",
    ),
    (
        "cycle without maxSteps",
        _set(["limits"], {"maxDurationMs": 1000}),
        "engram.workflow.cycle-bound",
    ),
    (
        "content in RAC",
        _set(["rac", 0, "content"], "the wiki itself"),
        "engram.workflow.rac-description-only",
    ),
    (
        "content in OKF",
        _set(["rac", 0, "okf"], {"type": "concept", "body": "# secrets"}),
        "engram.workflow.rac-description-only",
    ),
    ("non reverse-DNS extension", _set(["extensions"], {"mine": {}}), "engram.workflow.schema"),
]


@pytest.mark.req(
    "engram.workflow.schema",
    "engram.workflow.conditions-closed",
    "engram.workflow.unique-ids",
    "engram.workflow.references",
    "engram.workflow.condition-references",
    "engram.workflow.condition-types",
    "engram.workflow.completion-contract",
    "engram.workflow.start-event",
    "engram.workflow.reachable",
    "engram.workflow.reaches-terminal",
    "engram.workflow.terminal-no-outgoing",
    "engram.workflow.branch-conditions",
    "engram.workflow.duplicate-edges",
    "engram.workflow.cycle-bound",
    "engram.workflow.rac-description-only",
    "engram.workflow.extensions-ignored",
)
@pytest.mark.parametrize(("case", "mutate", "rule"), CASES, ids=[c[0] for c in CASES])
def test_each_broken_rule_is_named_alone(case: str, mutate: Mutation, rule: str) -> None:
    document = workflow()
    assert lint_workflow(document).ok
    mutate(document)
    report = lint_workflow(document)
    assert report.rules == {rule}, [str(i) for i in report.issues]


@pytest.mark.req("engram.workflow.conditions-closed")
def test_every_condition_shape_is_accepted_and_nested_ones_are_checked() -> None:
    document = workflow()
    document["edges"][3]["when"] = {
        "any": [
            {"not": {"var": "review.outcome", "op": "eq", "value": "ok"}},
            {
                "all": [
                    {"racAvailable": "code-wiki"},
                    {"var": "attempts", "op": "in", "value": [1, 2]},
                ]
            },
        ]
    }
    assert lint_workflow(document).ok
    document["edges"][3]["when"]["any"][1]["all"][0] = {"racAvailable": "infra"}
    report = lint_workflow(document)
    assert report.rules == {"engram.workflow.condition-references"}
    assert report.errors[0].path == "$.edges[3].when.any[1].all[0].racAvailable"


@pytest.mark.req("engram.workflow.extensions-ignored")
def test_unknown_extension_namespaces_are_ignored() -> None:
    document = workflow()
    document["extensions"] = {"com.example.planner": {"anything": [1, None, {"deep": True}]}}
    assert not lint_workflow(document, publish=True).errors


@pytest.mark.req("engram.workflow.publish-metadata", "engram.workflow.publish-signed")
@pytest.mark.parametrize(
    ("member", "value"),
    [
        ("version", None),
        ("name", None),
        ("description", None),
        ("license", None),
        ("license", "Apache 2"),
        ("license", "MIT AND"),
        ("authors", None),
        ("tags", None),
        ("homepage", "example.com/no-scheme"),
    ],
)
def test_the_publication_profile(member: str, value: str | None) -> None:
    document = workflow()
    assert lint_workflow(document).ok
    assert lint_workflow(document, publish=True).ok
    signed = lint_workflow(document, publish=True)
    assert [w.rule for w in signed.warnings] == ["engram.workflow.publish-signed"]
    if value is None:
        del document[member]
    else:
        document[member] = value
    assert lint_workflow(document).ok, "portable validity does not need the profile"
    assert lint_workflow(document, publish=True).rules == {"engram.workflow.publish-metadata"}


@pytest.mark.req("engram.workflow.publish-metadata")
def test_spdx_accepts_license_refs_and_expressions() -> None:
    for expression in (
        "LicenseRef-acx-proprietary",
        "MIT OR Apache-2.0",
        "GPL-2.0-only WITH Classpath-exception-2.0",
    ):
        document = workflow()
        document["license"] = expression
        assert lint_workflow(document, publish=True).ok, expression


@pytest.mark.req("engram.workflow.publish-secret-scan")
@pytest.mark.parametrize(
    ("path", "value"),
    [
        (["description"], "Deploys with token ghp_" + "a1B2" * 10 + " in the environment."),
        (["rac", 0, "description"], "-----BEGIN PRIVATE KEY----- of the deploy bot"),
        (
            ["rac", 0, "check"],
            {"type": "url", "hint": "https://deploy:hunter2hunter2@ci.example.com/"},
        ),
        (["nodes", 0, "action"], "api_key = 9f8e7d6c5b4a39281706"),
        (["nodes", 0, "action"], "Build from /home/alice/projects/secret"),
        (["nodes", 0, "action"], "Use Zx9kQ2vLp8RtY4wNb7Hc3Jd6Mf1Gs5Ak0Ue"),
        (["description"], "Pinned elsewhere: sha256:" + "0f" * 32 + " is a long hex value."),
        (["extensions"], {"com.example.ops": {"clientSecret": "x"}}),
    ],
)
def test_the_secret_scan_fails_closed(path: list[str | int], value: Any) -> None:
    document = workflow()
    _set(path, value)(document)
    assert lint_workflow(document).ok
    report = lint_workflow(document, publish=True)
    assert report.rules == {"engram.workflow.publish-secret-scan"}, [str(i) for i in report.issues]
    # The finding names where and which rule, never the value.
    assert all("hunter2" not in i.message and "ghp_" not in i.message for i in report.issues)


@pytest.mark.req("engram.workflow.publish-secret-scan")
def test_pinned_rom_digests_are_identifiers_not_secrets() -> None:
    document = workflow()
    document["participants"][1] = {
        "alias": "reviewer",
        "bind": "hash",
        "romDigest": "sha256:" + "7c" * 32,
    }
    assert lint_workflow(document, publish=True).ok


@pytest.mark.req("engram.workflow.lineage")
def test_lineage_refuses_duplicates_and_itself() -> None:
    parent = {
        "artifactType": "workflow",
        "publisherId": "io.github.other",
        "id": "review-loop",
        "version": "1.0.0",
        "digest": "sha256:" + "12" * 32,
        "relation": "fork",
    }
    document = workflow()
    document["lineage"] = {"parents": [parent]}
    assert lint_workflow(document, publish=True).ok
    document["lineage"]["parents"].append(dict(parent, relation="remix"))
    assert lint_workflow(document).rules == {"engram.workflow.lineage"}
    document["lineage"]["parents"] = [dict(parent, publisherId="io.github.me", version="1.2.0")]
    assert lint_workflow(document).ok
    assert lint_workflow(document, publisher_id="io.github.me").rules == {"engram.workflow.lineage"}


@pytest.mark.req("engram.workflow.strict-json")
@pytest.mark.parametrize(
    "text",
    [
        b'{"id": 1, "id": 2}',
        b'{"n": NaN}',
        b'{"n": 123456789012345678901}',
        b'{"s": "\\ud800"}',
        b"[1]",
    ],
)
def test_only_strict_i_json_objects_are_read(text: bytes) -> None:
    with pytest.raises(Exception, match=r"I-JSON|JSON object"):
        load_workflow(text)


@pytest.mark.req("engram.workflow.strict-json")
def test_oversized_documents_are_refused_unread() -> None:
    with pytest.raises(Exception, match="limit"):
        load_workflow(b" " * (4 * 1024 * 1024 + 1))


# ---- hypothesis: generated valid workflows, one reference or bound broken -------------------

_IDS = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)


@st.composite
def workflows(draw: st.DrawFn) -> dict[str, Any]:
    """A chain of tasks, optionally looping back through an exclusive gateway."""
    count = draw(st.integers(1, 6))
    names = draw(st.lists(_IDS, min_size=count + 3, max_size=count + 3, unique=True))
    tasks, alias_names, gate, end = names[:count], names[count : count + 1], names[-2], names[-1]
    aliases = alias_names + draw(
        st.lists(_IDS.filter(lambda n: n not in names), max_size=2, unique=True)
    )
    loop = draw(st.booleans())
    nodes: list[dict[str, Any]] = [
        {
            "id": t,
            "type": "task",
            "agent": draw(st.sampled_from(aliases)),
            "requires": {"rac": ["ctx"]},
            "completion": {"type": "artifact", "produces": f"{t}-out"},
        }
        for t in tasks
    ]
    edges: list[dict[str, Any]] = [{"from": a, "to": b} for a, b in itertools.pairwise(tasks)]
    if loop:
        nodes.append({"id": gate, "type": "gateway", "gateway": "exclusive"})
        edges.append({"from": tasks[-1], "to": gate})
        edges.append(
            {"from": gate, "to": end, "when": {"var": "state.done", "op": "eq", "value": True}}
        )
        edges.append({"from": gate, "to": tasks[0], "when": {"always": True}})
    else:
        edges.append({"from": tasks[-1], "to": end})
    nodes.append({"id": end, "type": "event", "event": draw(st.sampled_from(["end", "stop"]))})
    document: dict[str, Any] = {
        "schemaVersion": "acx.cal/1",
        "id": "generated",
        "participants": [{"alias": a, "bind": "slot", "slot": {"role": a}} for a in aliases],
        "rac": [{"id": "ctx", "kind": "custom", "description": "Some context."}],
        "variables": [{"name": "state", "type": "object"}],
        "start": tasks[0],
        "nodes": nodes,
        "edges": edges,
    }
    if loop:
        document["limits"] = {"maxSteps": draw(st.integers(1, 100))}
    return document


def _break_agent(doc: dict[str, Any], index: int) -> str:
    tasks = [n for n in doc["nodes"] if n["type"] == "task"]
    tasks[index % len(tasks)]["agent"] = "zz-ghost"
    return "engram.workflow.references"


def _break_edge(doc: dict[str, Any], index: int) -> str:
    doc["edges"][index % len(doc["edges"])]["to"] = "zz-nowhere"
    return "engram.workflow.references"


def _break_rac(doc: dict[str, Any], index: int) -> str:
    tasks = [n for n in doc["nodes"] if n["type"] == "task"]
    tasks[index % len(tasks)]["requires"]["rac"] = ["zz-missing"]
    return "engram.workflow.references"


def _break_bound(doc: dict[str, Any], index: int) -> str:
    if "limits" in doc:
        del doc["limits"]
        return "engram.workflow.cycle-bound"
    tasks = [n["id"] for n in doc["nodes"] if n["type"] == "task"]
    doc["edges"].append({"from": doc["nodes"][-1]["id"], "to": tasks[index % len(tasks)]})
    return "engram.workflow.terminal-no-outgoing"


def _break_var(doc: dict[str, Any], index: int) -> str:
    conditional = [e for e in doc["edges"] if "var" in e.get("when", {})]
    if not conditional:
        doc["start"] = "zz-nowhere"  # an acyclic draw has no condition: break start instead
        return "engram.workflow.references"
    conditional[0]["when"]["var"] = "zz-undeclared.value"
    return "engram.workflow.condition-references"


BREAKS = [_break_agent, _break_edge, _break_rac, _break_bound, _break_var]


@pytest.mark.req(
    "engram.workflow.references",
    "engram.workflow.cycle-bound",
    "engram.workflow.terminal-no-outgoing",
    "engram.workflow.condition-references",
)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=workflows(), which=st.sampled_from(BREAKS), index=st.integers(0, 20))
def test_generated_workflows_name_exactly_the_broken_rule(
    document: dict[str, Any], which: Callable[[dict[str, Any], int], str], index: int
) -> None:
    assert lint_workflow(document).ok, [str(i) for i in lint_workflow(document).issues]
    expected = which(document, index)
    report = lint_workflow(document)
    assert report.rules == {expected}, [str(i) for i in report.issues]
