"""Portable validity of an ACX Workflow: the schema, then every rule it cannot express.

Spec: lboel/acx@85f1358 SPEC.md §14.1-§14.4 and §12 item 15 ("Validate ACX Workflows independently
of staffing; require unique identifiers, closed structured conditions, valid completion
contracts, a path from every reachable node to a terminal event, and ``limits.maxSteps`` for every
cyclic graph"), §17.3 (lineage); docs/spec/acx-workflows.md §"Lint" lists each rule with its id.

Lint runs in phases so that one mistake is reported once, under the rule it breaks: a schema
violation stops there (nothing else can be read reliably); duplicate ids and dangling references
stop before the graph rules (reachability over a dangling edge would only echo the same
mistake); the graph rules come last. ``publish=True`` adds the §14.1 discovery profile and the
secret scan. Nothing here looks at cartridges: staffing is ``ready``'s verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from jsonschema.exceptions import ValidationError

from engram.core.canonical import JsonObject
from engram.workflow._conditions import condition_issues
from engram.workflow._document import schema_issues, unexpected_members
from engram.workflow._issues import Accepted, Issue, LintReport, duplicates, member_path
from engram.workflow._profile import lineage_issues, profile_issues
from engram.workflow._secrets import is_private_key_name, private_keys

P = "engram.workflow"
TERMINAL_EVENTS = frozenset({"end", "stop"})


def lint_workflow(
    document: JsonObject, *, publish: bool = False, publisher_id: str | None = None
) -> LintReport:
    """Every broken rule of ``document`` (errors) and what a person should know (warnings).

    ``publisher_id`` (the signer's, when signing) sharpens the lineage self-reference check;
    otherwise the verified-or-not ``integrity.publisherId`` is used when present.
    """
    issues = schema_issues(
        document,
        package="engram.workflow",
        schema="cal.schema.json",
        rule=f"{P}.schema",
        classify=_classify,
    )
    if issues:
        return LintReport.of(issues)
    identity = _unique_ids(document)
    references = list(_references(document))
    issues = identity + references
    if not identity:
        issues += list(_conditions(document))
    issues += list(_rac_metadata(document))
    issues += list(_completion(document))
    integrity = document.get("integrity")
    listed = integrity.get("publisherId") if isinstance(integrity, dict) else None
    signer = publisher_id or (listed if isinstance(listed, str) else None)
    issues += lineage_issues(document, prefix=P, publisher_id=signer)
    if not identity and not references:
        issues += list(_graph(document))
    if publish:
        issues += publication_issues(document)
    return LintReport.of(issues)


def _classify(error: ValidationError) -> str | None:
    """Content inside a RAC item breaks §14.4, not merely the schema."""
    path = list(error.absolute_path)
    if path[:1] == ["rac"] and any(is_private_key_name(k) for k in unexpected_members(error)):
        return f"{P}.rac-description-only"
    return None


def publication_issues(document: JsonObject) -> list[Issue]:
    """§14.1: the discovery profile, absolute URIs and the fail-closed secret scan."""
    return profile_issues(
        document, prefix=P, what="workflow", command="engram workflow sign", pinned=_is_pinned
    )


def _is_pinned(path: str) -> bool:
    """Pinned ROM digests and lineage digests are identifiers the secret scan skips."""
    return (path.startswith("$.participants[") and path.endswith("].romDigest")) or (
        path.startswith("$.lineage.parents[") and path.endswith("].digest")
    )


def _unique_ids(doc: Accepted) -> list[Issue]:
    rule = f"{P}.unique-ids"
    out: list[Issue] = []
    for member, key, what in (
        ("participants", "alias", "participant alias"),
        ("nodes", "id", "node id"),
        ("rac", "id", "RAC id"),
        ("variables", "name", "variable name"),
    ):
        values = [item[key] for item in doc.get(member, [])]
        for value in duplicates(values):
            index = len(values) - 1 - values[::-1].index(value)
            out.append(Issue(rule, member_path("$", member, index, key), f"{what} {value!r} twice"))
    return out


def _references(doc: Accepted) -> Iterator[Issue]:
    rule = f"{P}.references"
    aliases = {p["alias"] for p in doc["participants"]}
    rac_ids = {r["id"] for r in doc.get("rac", [])}
    node_ids = {n["id"] for n in doc["nodes"]}
    if doc["start"] not in node_ids:
        yield Issue(rule, "$.start", f"start names no node: {doc['start']!r}")
    for index, node in enumerate(doc["nodes"]):
        if node["type"] != "task":
            continue
        if node["agent"] not in aliases:
            path = member_path("$.nodes", index, "agent")
            yield Issue(rule, path, f"task {node['id']!r} names no participant: {node['agent']!r}")
        for j, rac in enumerate(node.get("requires", {}).get("rac", [])):
            if rac not in rac_ids:
                path = member_path("$.nodes", index, "requires", "rac", j)
                yield Issue(rule, path, f"task {node['id']!r} requires undeclared RAC {rac!r}")
    for index, edge in enumerate(doc["edges"]):
        for end in ("from", "to"):
            if edge[end] not in node_ids:
                path = member_path("$.edges", index, end)
                yield Issue(rule, path, f"edge {end} names no node: {edge[end]!r}")


def _conditions(doc: Accepted) -> Iterator[Issue]:
    variables = {v["name"]: v["type"] for v in doc.get("variables", [])}
    rac_ids = {r["id"] for r in doc.get("rac", [])}
    for index, edge in enumerate(doc["edges"]):
        if "when" in edge:
            path = member_path("$.edges", index, "when")
            yield from condition_issues(edge["when"], path, variables=variables, rac_ids=rac_ids)


def _rac_metadata(doc: Accepted) -> Iterator[Issue]:
    """§14.4: a RAC item is a description; its OKF descriptor is metadata, never content."""
    rule = f"{P}.rac-description-only"
    for index, item in enumerate(doc.get("rac", [])):
        if not item["description"].strip():
            yield Issue(rule, member_path("$.rac", index, "description"), "a blank description")
        okf = item.get("okf")
        if okf is not None:
            for path in private_keys(okf, member_path("$.rac", index, "okf")):
                yield Issue(rule, path, "an OKF descriptor is metadata only: no content member")


def _completion(doc: Accepted) -> Iterator[Issue]:
    """§14.3: exactly one typed completion contract per task, and not an empty one."""
    rule = f"{P}.completion-contract"
    for index, node in enumerate(doc["nodes"]):
        if node["type"] != "task":
            continue
        contract = node["completion"]
        path = member_path("$.nodes", index, "completion")
        texts: list[str] = []
        for member in ("scripts", "commands"):
            texts.extend(contract.get(member, []))
        texts.extend(contract[m] for m in ("passIntent", "kind", "produces") if m in contract)
        if any(not t.strip() for t in texts):
            yield Issue(rule, path, f"task {node['id']!r} has a blank completion contract entry")


def _graph(doc: Accepted) -> Iterator[Issue]:
    """§14.3 graph and termination semantics over a workflow whose references all resolve."""
    nodes = {n["id"]: n for n in doc["nodes"]}
    index_of = {n["id"]: i for i, n in enumerate(doc["nodes"])}
    terminal = {
        i for i, n in nodes.items() if n["type"] == "event" and n["event"] in TERMINAL_EVENTS
    }
    outgoing: dict[str, list[tuple[int, Accepted]]] = {i: [] for i in nodes}
    for index, edge in enumerate(doc["edges"]):
        outgoing[edge["from"]].append((index, edge))
    start_issues = list(_start_event(doc, nodes))
    yield from start_issues
    yield from _edges(doc, nodes, outgoing, terminal)
    # Edges out of a terminal are reported above; they do not count as paths or cycles.
    successors = {i: [] if i in terminal else [e["to"] for _, e in outgoing[i]] for i in nodes}
    if _has_cycle(successors) and not doc.get("limits", {}).get("maxSteps"):
        yield Issue(
            f"{P}.cycle-bound", "$.limits.maxSteps", "a cyclic workflow needs limits.maxSteps"
        )
    reachable = _closure([doc["start"]], successors)
    if start_issues:
        return  # with the start in doubt, "reachable from start" means nothing yet
    for node_id in nodes:
        if node_id not in reachable:
            path = member_path("$.nodes", index_of[node_id])
            yield Issue(f"{P}.reachable", path, f"node {node_id!r} is unreachable from start")
    predecessors: dict[str, list[str]] = {i: [] for i in nodes}
    for source, targets in successors.items():
        for target in targets:
            predecessors[target].append(source)
    finishing = _closure(terminal, predecessors)
    if not terminal:
        yield Issue(f"{P}.reaches-terminal", "$.nodes", "no end or stop event: nothing terminates")
    else:
        for node_id in nodes:
            if node_id in reachable and node_id not in finishing:
                path = member_path("$.nodes", index_of[node_id])
                yield Issue(
                    f"{P}.reaches-terminal", path, f"node {node_id!r} has no path to an end or stop"
                )


def _start_event(doc: Accepted, nodes: dict[str, Accepted]) -> Iterator[Issue]:
    starts = [i for i, n in nodes.items() if n["type"] == "event" and n["event"] == "start"]
    rule = f"{P}.start-event"
    if len(starts) > 1:
        yield Issue(rule, "$.nodes", f"more than one start event: {', '.join(starts)}")
    elif starts and starts[0] != doc["start"]:
        yield Issue(
            rule, "$.start", f"start is {doc['start']!r} but the start event is {starts[0]!r}"
        )


def _edges(
    doc: Accepted,
    nodes: dict[str, Accepted],
    outgoing: dict[str, list[tuple[int, Accepted]]],
    terminal: set[str],
) -> Iterator[Issue]:
    seen: set[tuple[str, str]] = set()
    for index, edge in enumerate(doc["edges"]):
        pair = (edge["from"], edge["to"])
        if pair in seen:
            yield Issue(f"{P}.duplicate-edges", member_path("$.edges", index), f"edge {pair} twice")
        seen.add(pair)
    for node_id, all_edges in outgoing.items():
        # A repeated edge is reported above; it is not a second branch.
        first: dict[str, tuple[int, Accepted]] = {}
        for index, edge in all_edges:
            first.setdefault(edge["to"], (index, edge))
        edges = list(first.values())
        node = nodes[node_id]
        if node_id in terminal and edges:
            path = member_path("$.edges", edges[0][0])
            yield Issue(
                f"{P}.terminal-no-outgoing",
                path,
                f"terminal event {node_id!r} has an outgoing edge",
            )
            continue
        if node["type"] != "gateway" and len(edges) > 1:
            for index, edge in edges:
                if _unconditional(edge):
                    path = member_path("$.edges", index)
                    yield Issue(
                        f"{P}.branch-conditions",
                        path,
                        f"{node_id!r} branches without a gateway: every branch needs a condition",
                    )


def _unconditional(edge: Accepted) -> bool:
    when = edge.get("when")
    return when is None or when == {"always": True}


def _closure(seeds: Iterable[str], step: dict[str, list[str]]) -> set[str]:
    seen = set(seeds)
    stack = list(seen)
    while stack:
        for nxt in step.get(stack.pop(), []):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _has_cycle(successors: dict[str, list[str]]) -> bool:
    # Iterative three-colour DFS: a workflow of thousands of nodes must not hit the recursion limit.
    colour = dict.fromkeys(successors, 0)
    for root in successors:
        if colour[root]:
            continue
        stack = [(root, iter(successors[root]))]
        colour[root] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                if colour[child] == 1:
                    return True
                if colour[child] == 0:
                    colour[child] = 1
                    stack.append((child, iter(successors[child])))
                    break
            else:
                colour[node] = 2
                stack.pop()
    return False


__all__ = ["TERMINAL_EVENTS", "lint_workflow", "publication_issues"]
