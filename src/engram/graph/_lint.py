"""Structural validity of an ACX Agent Graph: the schema, then every rule of §16 it cannot say.

Spec: lboel/acx@85f1358 SPEC.md §16.1-§16.7 and §12 item 16 ("require bounded propagation and
fan-out, structured route triggers, valid reverse response routes, unambiguous acyclic mandatory
direction per knowledge module, pinned published CAL references, bounded convergence of at least
two distinct loops, secret-scanned public metadata, and metadata-only knowledge declarations"),
§17.3-§17.4 (lineage, pinned dependencies); docs/spec/acx-graphs.md §"Lint" lists each rule.

As for workflows, lint runs in phases so one mistake is named once: schema, then duplicate ids
and dangling references, then the invariants. ``publish=True`` adds the discovery profile, the
pinned workflow references and the fail-closed secret scan. Schema violations that are really
§16 rules (``content`` on a knowledge module, a ``permissions`` or ``command`` member anywhere)
are reported under those rules' ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeAlias

from jsonschema.exceptions import ValidationError

from engram.core.canonical import JsonObject
from engram.workflow import Issue, LintReport
from engram.workflow.internals import (
    duplicates,
    is_private_key_name,
    lineage_issues,
    member_path,
    profile_issues,
    schema_issues,
    unexpected_members,
)

P = "engram.graph"

Accepted: TypeAlias = dict[str, Any]
"""A graph with no schema issue. Any on purpose: the rules below run only once
agent-graph.schema.json has shaped every member they read (lint_graph returns early otherwise),
and restating the schema as isinstance checks would only add noise."""

_GRANTS = frozenset(
    {
        "permission", "permissions", "grant", "grants", "tool", "tools", "access", "scopes",
        "command", "commands", "script", "scripts", "action", "actions", "run", "exec",
        "execute", "dispatch", "task", "tasks", "nodes", "edges", "approval", "approvals",
    }
)  # fmt: skip
"""Member names that would make the graph execute or grant something (§16: it MUST NOT)."""


def lint_graph(
    document: JsonObject, *, publish: bool = False, publisher_id: str | None = None
) -> LintReport:
    """Every broken §16 rule of ``document`` (errors) and what a person should know (warnings)."""
    issues = schema_issues(
        document,
        package="engram.graph",
        schema="agent-graph.schema.json",
        rule=f"{P}.schema",
        classify=_classify,
    )
    if issues:
        return LintReport.of(issues)
    integrity = document.get("integrity")
    listed = integrity.get("publisherId") if isinstance(integrity, dict) else None
    signer = publisher_id or (listed if isinstance(listed, str) else None)
    issues = lineage_issues(document, prefix=P, publisher_id=signer)
    identity = _unique_ids(document) + list(_references(document))
    issues += identity
    if not identity:
        issues += list(_cardinality(document))
        issues += list(_routes(document))
        issues += list(_direction(document))
        issues += list(_loops(document))
        issues += list(_convergence(document))
        issues += list(_participation(document))
    if publish:
        issues += publication_issues(document)
    return LintReport.of(issues)


def publication_issues(document: JsonObject) -> list[Issue]:
    """§16.1 discovery profile, §16.5/§17.4 pinned workflows, and the fail-closed secret scan."""
    issues = profile_issues(
        document, prefix=P, what="Agent Graph", command="engram graph sign", pinned=_is_pinned
    )
    loops = document.get("loops", [])
    for index, loop in enumerate(loops if isinstance(loops, list) else []):
        if not isinstance(loop, dict):
            continue
        ref = loop.get("workflowRef")
        if loop.get("kind") != "acx-workflow" or not isinstance(ref, dict):
            continue
        missing = [m for m in ("publisherId", "version", "digest") if m not in ref]
        if missing:
            issues.append(
                Issue(
                    f"{P}.workflow-pinned",
                    member_path("$.loops", index, "workflowRef"),
                    f"a published graph pins its workflow: add {', '.join(missing)} "
                    "(an unpinned, moving reference is not publishable)",
                )
            )
    return issues


def _is_pinned(path: str) -> bool:
    """Pinned workflow and lineage digests are identifiers the secret scan skips (§16.1)."""
    return (path.startswith("$.loops[") and path.endswith("].workflowRef.digest")) or (
        path.startswith("$.lineage.parents[") and path.endswith("].digest")
    )


def _classify(error: ValidationError) -> str | None:
    extra = unexpected_members(error)
    if any(name.lower() in _GRANTS for name in extra):
        return f"{P}.non-executing"
    if any(is_private_key_name(name) for name in extra):
        return f"{P}.metadata-only"
    return None


_COLLECTIONS = (
    ("actors", "actor"),
    ("knowledge", "knowledge module"),
    ("routes", "route"),
    ("loops", "loop"),
    ("convergence", "convergence point"),
)


def _unique_ids(doc: Accepted) -> list[Issue]:
    out: list[Issue] = []
    for member, what in _COLLECTIONS:
        values = [item["id"] for item in doc.get(member, [])]
        for value in duplicates(values):
            index = len(values) - 1 - values[::-1].index(value)
            path = member_path("$", member, index, "id")
            out.append(Issue(f"{P}.unique-ids", path, f"{what} id {value!r} twice"))
    return out


def _references(doc: Accepted) -> Iterator[Issue]:
    """Every graph-local id reference resolves (§16.1)."""
    actors = {a["id"] for a in doc["actors"]}
    knowledge = {k["id"] for k in doc["knowledge"]}
    routes = {r["id"] for r in doc["routes"]}
    loops = {loop["id"] for loop in doc.get("loops", [])}

    def check(ids: list[str], known: set[str], what: str, *path: str | int) -> Iterator[Issue]:
        for index, value in enumerate(ids):
            if value not in known:
                where = member_path("$", *path, index)
                yield Issue(f"{P}.references", where, f"no {what} {value!r}")

    for i, module in enumerate(doc["knowledge"]):
        yield from check(module["stewards"], actors, "actor", "knowledge", i, "stewards")
        yield from check(module.get("audience", []), actors, "actor", "knowledge", i, "audience")
    for i, route in enumerate(doc["routes"]):
        yield from check([route["from"]], actors, "actor", "routes", i, "from")
        yield from check(route["to"], actors, "actor", "routes", i, "to")
        yield from check(route["carries"], knowledge, "knowledge module", "routes", i, "carries")
        yield from check(
            route.get("returns", []), knowledge, "knowledge module", "routes", i, "returns"
        )
        if "expects" in route:
            yield from check([route["expects"]["via"]], routes, "route", "routes", i, "expects")
    for i, loop in enumerate(doc.get("loops", [])):
        for j, binding in enumerate(loop.get("actorBindings", [])):
            yield from check([binding["actor"]], actors, "actor", "loops", i, "actorBindings", j)
        for member in ("imports", "exports"):
            yield from check(
                loop.get(member, []), knowledge, "knowledge module", "loops", i, member
            )
    for i, point in enumerate(doc.get("convergence", [])):
        for j, source in enumerate(point["inputs"]):
            yield from check([source["loop"]], loops, "loop", "convergence", i, "inputs", j)
            yield from check(
                source["knowledge"], knowledge, "knowledge module",
                "convergence", i, "inputs", j, "knowledge",
            )  # fmt: skip
        yield from check([point["steward"]], actors, "actor", "convergence", i, "steward")
        yield from check(
            point.get("contributors", []), actors, "actor", "convergence", i, "contributors"
        )
        yield from check(
            point["outputs"], knowledge, "knowledge module", "convergence", i, "outputs"
        )


def _cardinality(doc: Accepted) -> Iterator[Issue]:
    for index, actor in enumerate(doc["actors"]):
        bounds = actor.get("cardinality", {})
        if "min" in bounds and "max" in bounds and bounds["min"] > bounds["max"]:
            path = member_path("$.actors", index, "cardinality")
            yield Issue(
                f"{P}.cardinality", path, f"min {bounds['min']} exceeds max {bounds['max']}"
            )


def _routes(doc: Accepted) -> Iterator[Issue]:
    """§16.4: no self-route, fan-out within the bound, explicit and correct return routes."""
    fanout = doc["limits"]["maxFanout"]
    by_id = {r["id"]: r for r in doc["routes"]}
    for index, route in enumerate(doc["routes"]):
        path = member_path("$.routes", index)
        if route["from"] in route["to"]:
            yield Issue(
                f"{P}.route-self", member_path(path, "to"), "a route never targets its own from"
            )
        if len(route["to"]) > fanout:
            yield Issue(
                f"{P}.route-fanout",
                member_path(path, "to"),
                f"{len(route['to'])} targets exceed limits.maxFanout {fanout}",
            )
        if "expects" not in route:
            continue
        back = by_id[route["expects"]["via"]]
        if back["from"] not in route["to"] or route["from"] not in back["to"]:
            yield Issue(
                f"{P}.route-returns",
                member_path(path, "expects", "via"),
                f"{back['id']!r} does not go from a target of {route['id']!r} back to its source",
            )
        for module in route.get("returns", []):
            if module not in back["carries"]:
                yield Issue(
                    f"{P}.route-returns",
                    member_path(path, "returns"),
                    f"return route {back['id']!r} does not carry returned {module!r}",
                )


def _direction(doc: Accepted) -> Iterator[Issue]:
    """§16.4: per knowledge module one mandatory director per target, and no command cycle."""
    owners: dict[tuple[str, str], str] = {}
    edges: dict[str, dict[str, set[str]]] = {}
    for index, route in enumerate(doc["routes"]):
        if route["intent"] != "direct" or route["obligation"] != "must":
            continue
        for module in route["carries"]:
            # A self-route is reported as route-self; it is not also a command cycle.
            for target in (t for t in route["to"] if t != route["from"]):
                owner = owners.setdefault((target, module), route["from"])
                if owner != route["from"]:
                    yield Issue(
                        f"{P}.direction-owner",
                        member_path("$.routes", index),
                        f"{target!r} gets mandatory direction on {module!r} from both "
                        f"{owner!r} and {route['from']!r}",
                    )
                edges.setdefault(module, {}).setdefault(route["from"], set()).add(target)
    for module, graph in edges.items():
        cycle = _find_cycle(graph)
        if cycle:
            yield Issue(
                f"{P}.direction-acyclic",
                "$.routes",
                f"mandatory direction on {module!r} runs in a cycle: {' -> '.join(cycle)}",
            )


def _find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One directed cycle as a closed walk of node names, or an empty list."""
    colour: dict[str, int] = {}
    for root in sorted(graph):
        if colour.get(root):
            continue
        path = [root]
        stack = [iter(sorted(graph.get(root, ())))]
        colour[root] = 1
        while stack:
            child = next(stack[-1], None)
            if child is None:
                colour[path.pop()] = 2
                stack.pop()
            elif colour.get(child) == 1:
                return [*path[path.index(child) :], child]
            elif not colour.get(child):
                colour[child] = 1
                path.append(child)
                stack.append(iter(sorted(graph.get(child, ()))))
    return []


def _loops(doc: Accepted) -> Iterator[Issue]:
    """§16.5: within a loop binding a participant alias belongs to at most one actor."""
    for index, loop in enumerate(doc.get("loops", [])):
        aliases = [a for b in loop.get("actorBindings", []) for a in b["participants"]]
        for alias in duplicates(aliases):
            yield Issue(
                f"{P}.participant-one-actor",
                member_path("$.loops", index, "actorBindings"),
                f"participant {alias!r} is bound to more than one actor",
            )


def _convergence(doc: Accepted) -> Iterator[Issue]:
    """§16.6: two distinct loops, exported inputs that reach the steward, synthesized outputs."""
    loops = {loop["id"]: loop for loop in doc.get("loops", [])}
    stewards = {k["id"]: set(k["stewards"]) for k in doc["knowledge"]}
    for index, point in enumerate(doc.get("convergence", [])):
        path = member_path("$.convergence", index)
        steward = point["steward"]
        if len({source["loop"] for source in point["inputs"]}) < 2:
            yield Issue(
                f"{P}.convergence-loops",
                member_path(path, "inputs"),
                "inputs come from fewer than two distinct loops",
            )
        inputs: set[str] = set()
        for j, source in enumerate(point["inputs"]):
            exported = set(loops[source["loop"]].get("exports", []))
            for module in source["knowledge"]:
                inputs.add(module)
                where = member_path(path, "inputs", j, "knowledge")
                if module not in exported:
                    yield Issue(
                        f"{P}.convergence-exported",
                        where,
                        f"loop {source['loop']!r} does not export {module!r}",
                    )
                if not any(steward in r["to"] and module in r["carries"] for r in doc["routes"]):
                    yield Issue(
                        f"{P}.convergence-reachable",
                        where,
                        f"no route carries {module!r} to the convergence steward {steward!r}",
                    )
        for module in point["outputs"]:
            where = member_path(path, "outputs")
            if module in inputs:
                yield Issue(
                    f"{P}.convergence-outputs", where, f"output {module!r} is an unchanged input"
                )
            elif steward not in stewards[module]:
                yield Issue(
                    f"{P}.convergence-outputs",
                    where,
                    f"the steward {steward!r} does not steward output {module!r}",
                )


def _participation(doc: Accepted) -> Iterator[Issue]:
    """§16.1: no isolated actor and no knowledge module that nothing routes, binds or produces."""
    actors: set[str] = set()
    knowledge: set[str] = set()
    for module in doc["knowledge"]:
        actors |= set(module["stewards"]) | set(module.get("audience", []))
    for route in doc["routes"]:
        actors |= {route["from"], *route["to"]}
        knowledge |= set(route["carries"]) | set(route.get("returns", []))
    for loop in doc.get("loops", []):
        actors |= {b["actor"] for b in loop.get("actorBindings", [])}
        knowledge |= set(loop.get("imports", [])) | set(loop.get("exports", []))
    for point in doc.get("convergence", []):
        actors |= {point["steward"], *point.get("contributors", [])}
        knowledge |= {k for s in point["inputs"] for k in s["knowledge"]} | set(point["outputs"])
    for index, actor in enumerate(doc["actors"]):
        if actor["id"] not in actors:
            yield Issue(
                f"{P}.no-isolated-actor",
                member_path("$.actors", index),
                f"actor {actor['id']!r} takes part in no stewardship, audience, route, loop or "
                "convergence",
            )
    for index, module in enumerate(doc["knowledge"]):
        if module["id"] not in knowledge:
            yield Issue(
                f"{P}.no-unused-knowledge",
                member_path("$.knowledge", index),
                f"knowledge {module['id']!r} is never routed, bound to a loop or produced",
            )


__all__ = ["lint_graph", "publication_issues"]
