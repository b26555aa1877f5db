"""``engram graph new``: a small, valid, publishable ``acx.agent-graph/1`` Agent Graph to start
from: a lead directs a team that reports back, each with the knowledge it stewards, and one
informal loop. Its ``description`` members say what each part is for and what to change; it
passes ``engram graph lint --publish`` as written (docs/spec/acx-graphs.md "Starting one").
"""

from __future__ import annotations

from engram.core.canonical import JsonObject


def starter_graph(graph_id: str = "my-team") -> JsonObject:
    """Two actors, two pieces of knowledge, a route each way and one loop."""
    return {
        "schemaVersion": "acx.agent-graph/1",
        "id": graph_id,
        "version": "0.1.0",
        "name": "A lead and a team",
        "description": (
            "STARTER (engram graph new): a lead directs a team that reports back. Rename "
            "id/name, add your actors, knowledge and routes, then `engram graph lint FILE "
            "--publish` and `engram graph sign`. Pin a workflow as a loop of kind acx-workflow."
        ),
        "license": "Apache-2.0",
        "authors": [{"name": "Your Name"}],
        "tags": ["starter", "team"],
        "limits": {"maxPropagationHops": 4, "maxFanout": 3},
        "actors": [
            {
                "id": "lead",
                "kind": "human",
                "name": "Lead",
                "description": "Owns the brief and the decisions (a person, an agent or a group).",
            },
            {
                "id": "team",
                "kind": "agent",
                "description": "Does the work; staffed by cartridges when a workflow runs.",
            },
        ],
        "knowledge": [
            {
                "id": "brief",
                "kind": "requirement",
                "description": "What to build, kept by the lead.",
                "stewards": ["lead"],
            },
            {
                "id": "status",
                "kind": "status",
                "description": "Progress and blockers, kept by the team.",
                "stewards": ["team"],
            },
        ],
        "routes": [
            {
                "id": "lead-directs",
                "from": "lead",
                "to": ["team"],
                "intent": "direct",
                "obligation": "must",
                "purpose": "Hand the team the current brief.",
                "carries": ["brief"],
                "returns": ["status"],
                "expects": {"via": "team-reports", "withinMs": 86400000},
                "triggers": [{"type": "event", "events": ["work.requested"]}],
            },
            {
                "id": "team-reports",
                "from": "team",
                "to": ["lead"],
                "intent": "report",
                "obligation": "must",
                "purpose": "Report progress and blockers.",
                "carries": ["status"],
                "triggers": [{"type": "interval", "everyMs": 3600000}],
            },
        ],
        "loops": [
            {
                "id": "delivery",
                "kind": "informal",
                "description": "The team's own delivery loop (replace with an acx-workflow "
                "loop pinning a signed workflow by digest).",
                "imports": ["brief"],
                "exports": ["status"],
            }
        ],
    }


__all__ = ["starter_graph"]
