"""Showing an Agent Graph to a person: the discovery card, a text tree, a Graphviz picture.

Spec: lboel/acx@85f1358 SPEC.md §16.9 ("``inspect`` renders the discovery card") and the docs'
Agent Graph page (actors, knowledge stewardship, routes with their returns, loops bound to
workflows, convergence); docs/spec/acx-graphs.md §"Inspect".

:func:`graph_card` is the safe discovery card (ids, names, counts, route intents, connected loops,
digest, verdict; no prose beyond names and descriptions). :func:`graph_outline` is the same graph
as a tree a terminal can print: actors with the knowledge they steward and the routes they send,
loops with their pinned workflow and seat bindings, convergence with inputs and outputs.
:func:`graph_dot` draws it for Graphviz: actors as boxes listing the knowledge they steward,
routes as arrows labelled with intent, obligation and what they carry (mandatory direction bold,
returns dashed), each loop as a box naming its pinned workflow, joined to the seats it binds,
and each convergence point as a diamond fed by its loops and feeding its steward.
:func:`render_svg` runs Graphviz ``dot`` (Debian ``graphviz``) to turn that into SVG.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from html import escape
from typing import Any, TypeAlias

from engram.core.canonical import JsonObject
from engram.errors import MissingDependency, RemoteError
from engram.workflow import Verification

Accepted: TypeAlias = dict[str, Any]
"""A graph that lint_graph has accepted. Any on purpose: agent-graph.schema.json has shaped every
member these views read, and restating the schema as isinstance checks would only add noise."""

_KIND_COLOUR = {
    "agent": "#dbeafe",
    "human": "#fef3c7",
    "group": "#dcfce7",
    "service": "#ede9fe",
    "mixed": "#fce7f3",
}
_DOT_TIMEOUT_S = 30


@dataclass
class Outline:
    """One line of the text tree and the lines under it."""

    label: str
    children: list[Outline] = field(default_factory=list)

    def add(self, label: str) -> Outline:
        child = Outline(label)
        self.children.append(child)
        return child

    def lines(self) -> list[str]:
        """The tree drawn with box-drawing characters, one string per line."""
        out = [self.label]
        for index, child in enumerate(self.children):
            last = index == len(self.children) - 1
            sub = child.lines()
            out.append(("└── " if last else "├── ") + sub[0])
            out.extend(("    " if last else "│   ") + line for line in sub[1:])
        return out


def graph_card(document: Accepted, verification: Verification) -> JsonObject:
    """The discovery card of §16.9 ``inspect``."""
    return {
        "id": document.get("id"),
        "version": document.get("version"),
        "name": document.get("name") or document.get("id"),
        "description": document.get("description"),
        "license": document.get("license"),
        "tags": document.get("tags", []),
        "digest": verification.digest,
        "verdict": verification.verdict,
        "publisherId": verification.publisher_id,
        "actors": [
            {"id": a["id"], "name": a.get("name"), "kind": a["kind"]}
            for a in document.get("actors", [])
        ],
        "knowledge": [
            {"id": k["id"], "name": k.get("name"), "kind": k["kind"], "stewards": k["stewards"]}
            for k in document.get("knowledge", [])
        ],
        "intents": sorted({r["intent"] for r in document.get("routes", [])}),
        "routes": [
            {
                "id": r["id"],
                "from": r["from"],
                "to": r["to"],
                "intent": r["intent"],
                "obligation": r["obligation"],
                "carries": r["carries"],
                "returns": r.get("returns", []),
            }
            for r in document.get("routes", [])
        ],
        "loops": [
            {"id": loop["id"], "kind": loop["kind"], "workflowRef": loop.get("workflowRef")}
            for loop in document.get("loops", [])
        ],
        "convergence": [
            {
                "id": c["id"],
                "steward": c["steward"],
                "inputs": c["inputs"],
                "outputs": c["outputs"],
                "limits": c["limits"],
            }
            for c in document.get("convergence", [])
        ],
        "limits": document.get("limits"),
    }


def graph_outline(document: Accepted, verification: Verification) -> Outline:
    """The graph as a tree of short lines (the terminal view of ``engram graph inspect``)."""
    names = _names(document)
    title = f"{document.get('id')} {document.get('version') or '(unversioned)'}"
    if document.get("name"):
        title += f" — {document['name']}"
    root = Outline(title)
    signer = f" by {verification.publisher_id}" if verification.publisher_id else ""
    root.add(f"{verification.verdict}{signer} · {verification.digest}")
    actors = root.add(f"Actors ({len(document.get('actors', []))})")
    for actor in document.get("actors", []):
        node = actors.add(f"{names[actor['id']]} [{actor['id']}] {actor['kind']}{_seats(actor)}")
        stewarded = [k["id"] for k in document.get("knowledge", []) if actor["id"] in k["stewards"]]
        if stewarded:
            node.add("stewards " + ", ".join(stewarded))
        for route in document.get("routes", []):
            if route["from"] == actor["id"]:
                node.add(_route_line(route, names))
    loops = document.get("loops", [])
    if loops:
        section = root.add(f"Loops ({len(loops)})")
        for loop in loops:
            node = section.add(f"{loop['id']} ({loop['kind']}){_workflow(loop.get('workflowRef'))}")
            for binding in loop.get("actorBindings", []):
                node.add(f"{names[binding['actor']]} ⇐ {', '.join(binding['participants'])}")
            flows = []
            if loop.get("imports"):
                flows.append("imports " + ", ".join(loop["imports"]))
            if loop.get("exports"):
                flows.append("exports " + ", ".join(loop["exports"]))
            node.add("; ".join(flows))
    points = document.get("convergence", [])
    if points:
        section = root.add(f"Convergence ({len(points)})")
        for point in points:
            node = section.add(
                f"{point['id']} ({point['policy']['mode']}), steward {names[point['steward']]}"
            )
            for source in point["inputs"]:
                node.add(f"from {source['loop']}: {', '.join(source['knowledge'])}")
            bounds = point["limits"]
            node.add(
                f"⇒ {', '.join(point['outputs'])} (≤ {bounds['maxRounds']} round(s), "
                f"≤ {_duration(bounds['maxWaitMs'])} wait)"
            )
    limits = document.get("limits", {})
    root.add(
        f"Limits: ≤ {limits.get('maxPropagationHops')} propagation hop(s), "
        f"≤ {limits.get('maxFanout')} target(s) per route"
    )
    return root


def _names(document: Accepted) -> dict[str, str]:
    return {a["id"]: a.get("name") or a["id"] for a in document.get("actors", [])}


def _seats(actor: dict[str, Any]) -> str:
    bounds = actor.get("cardinality")
    if not bounds:
        return ""
    return f" ({bounds.get('min', 0)}..{bounds.get('max', '∞')})"


def _route_line(route: dict[str, Any], names: dict[str, str]) -> str:
    targets = ", ".join(names.get(t, t) for t in route["to"])
    line = f"→ {route['intent']} {targets} [{route['obligation']}]: {', '.join(route['carries'])}"
    if "expects" in route:
        within = route["expects"].get("withinMs")
        when = f" within {_duration(within)}" if within else ""
        line += (
            f"; expects {', '.join(route.get('returns', []))} via {route['expects']['via']}{when}"
        )
    return line


def _workflow(ref: dict[str, Any] | None) -> str:
    if not ref:
        return ""
    where = f"{ref.get('publisherId', '?')}/{ref['id']}@{ref.get('version', '?')}"
    digest = ref.get("digest")
    return f" → workflow {where}" + (f" {digest[:19]}…" if digest else " (unpinned)")


def _duration(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def graph_dot(document: Accepted, verification: Verification) -> str:
    """Graphviz DOT text of the graph (see the module docstring for what is drawn how)."""
    names = _names(document)
    knowledge = {k["id"]: k for k in document.get("knowledge", [])}
    title = escape(f"{document.get('name') or document.get('id')} {document.get('version') or ''}")
    subtitle = escape(f"{verification.verdict} · {verification.digest[:23]}…")
    legend = escape(
        "◆ knowledge the actor stewards · bold: mandatory direction · dashed: report or advice"
        " · dotted: seats a loop binds · gold: convergence"
    )
    lines = [
        "digraph agent_graph {",
        '  graph [rankdir=TB, fontname="Helvetica", fontsize=12, nodesep=0.7, ranksep=0.9,'
        f' labelloc=t, label=<<b>{title}</b><br/><font point-size="10">{subtitle}</font>'
        f'<br/><font point-size="9" color="#64748b">{legend}</font>>];',
        '  node [fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=9, color="#475569"];',
    ]
    for actor in document.get("actors", []):
        stewarded = [
            _kname(knowledge, k) for k in knowledge if actor["id"] in knowledge[k]["stewards"]
        ]
        rows = "".join(f'<tr><td align="left">◆ {escape(str(s))}</td></tr>' for s in stewarded)
        colour = _KIND_COLOUR.get(actor["kind"], "#f1f5f9")
        label = (
            '<<table border="0" cellborder="0" cellspacing="1">'
            f"<tr><td><b>{escape(names[actor['id']])}</b></td></tr>"
            '<tr><td><font point-size="9" color="#475569">'
            f"{escape(actor['kind'] + _seats(actor))}</font></td></tr>"
            f"{rows}</table>>"
        )
        lines.append(
            f'  {_id("actor", actor["id"])} [shape=box, style="rounded,filled", '
            f'fillcolor="{colour}", color="#334155", margin="0.15,0.08", label={label}];'
        )
    for route in document.get("routes", []):
        carried = ", ".join(_kname(knowledge, k) for k in route["carries"])
        label = escape(f"{route['intent']} · {route['obligation']}") + "<br/>" + escape(carried)
        mandatory = route["intent"] == "direct" and route["obligation"] == "must"
        style = (
            "bold"
            if mandatory
            else ("dashed" if route["intent"] in ("report", "advise") else "solid")
        )
        colour = "#0f766e" if route["intent"] in ("report", "advise", "review") else "#1d4ed8"
        for target in route["to"]:
            lines.append(
                f"  {_id('actor', route['from'])} -> {_id('actor', target)} "
                f'[label=<{label}>, style={style}, color="{colour}", fontcolor="{colour}"];'
            )
    for loop in document.get("loops", []):
        ref = loop.get("workflowRef")
        rows = f"<tr><td><b>{escape(loop['id'])}</b></td></tr>"
        if ref:
            where = f"{ref['id']} {ref.get('version', '')}".strip()
            rows += f'<tr><td><font point-size="9">workflow {escape(where)}</font></td></tr>'
            digest = ref.get("digest")
            shown = f"{digest[:19]}…" if digest else "unpinned"
            rows += f'<tr><td><font point-size="8" color="#64748b">{escape(shown)}</font></td></tr>'
        else:
            rows += f'<tr><td><font point-size="9">{escape(loop["kind"])} loop</font></td></tr>'
        for member, arrow in (("imports", "in"), ("exports", "out")):
            if loop.get(member):
                carried = escape(", ".join(_kname(knowledge, k) for k in loop[member]))
                rows += (
                    f'<tr><td align="left"><font point-size="9">{arrow}: {carried}</font></td></tr>'
                )
        lines.append(
            f'  {_id("loop", loop["id"])} [shape=component, style=filled, fillcolor="#f8fafc", '
            f'color="#64748b", label=<<table border="0" cellborder="0">{rows}</table>>];'
        )
        for binding in loop.get("actorBindings", []):
            seats = escape(", ".join(binding["participants"]))
            lines.append(
                f"  {_id('actor', binding['actor'])} -> {_id('loop', loop['id'])} "
                f'[dir=none, style=dotted, color="#64748b", label=<<i>{seats}</i>>];'
            )
    for point in document.get("convergence", []):
        bounds = point["limits"]
        label = (
            f"<<b>{escape(point['id'])}</b><br/>"
            f'<font point-size="9">{escape(point["policy"]["mode"])}<br/>'
            f"≤ {bounds['maxRounds']} rounds · ≤ {escape(_duration(bounds['maxWaitMs']))}"
            "</font>>"
        )
        lines.append(
            f"  {_id('convergence', point['id'])} [shape=diamond, style=filled, "
            f'fillcolor="#fef9c3", color="#a16207", label={label}];'
        )
        for source in point["inputs"]:
            carried = escape(", ".join(_kname(knowledge, k) for k in source["knowledge"]))
            lines.append(
                f"  {_id('loop', source['loop'])} -> {_id('convergence', point['id'])} "
                f'[color="#a16207", fontcolor="#a16207", label=<{carried}>];'
            )
        outputs = escape(", ".join(_kname(knowledge, k) for k in point["outputs"]))
        lines.append(
            f"  {_id('convergence', point['id'])} -> {_id('actor', point['steward'])} "
            f'[color="#a16207", fontcolor="#a16207", penwidth=1.6, label=<⇒ {outputs}>];'
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def _kname(knowledge: dict[str, dict[str, Any]], module: str) -> str:
    return str(knowledge[module].get("name", module)) if module in knowledge else module


def _id(kind: str, value: str) -> str:
    # Graph ids match ^[a-z][a-z0-9._-]*$; quoting keeps '.' and '-' legal in DOT.
    return f'"{kind}:{value}"'


def render_svg(dot_text: str) -> bytes:
    """SVG bytes from Graphviz ``dot``; :class:`MissingDependency` when it is not installed."""
    dot = shutil.which("dot")
    if dot is None:
        raise MissingDependency(
            "drawing a graph needs Graphviz's `dot` (Debian: apt-get install graphviz); "
            "`--format dot` writes the DOT text without it"
        )
    try:
        done = subprocess.run(
            [dot, "-Tsvg"],
            input=dot_text.encode("utf-8"),
            capture_output=True,
            timeout=_DOT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        raise RemoteError(f"graphviz dot did not finish within {_DOT_TIMEOUT_S} s") from e
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RemoteError(f"graphviz dot failed: {message[0] if message else done.returncode}")
    return done.stdout


__all__ = ["Outline", "graph_card", "graph_dot", "graph_outline", "render_svg"]
