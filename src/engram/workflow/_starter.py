"""``engram workflow new``: a small, valid, publishable ``acx.cal/1`` workflow to start from.

JSON has no comments, so the starter explains itself in the members the format gives every
document and node for words (``description``, ``action``, ``passIntent``): each says what the
member is for and what to change. It passes ``engram workflow lint --publish`` as written
(docs/spec/acx-workflows.md "Starting one").
"""

from __future__ import annotations

from engram.core.canonical import JsonObject


def starter_workflow(workflow_id: str = "my-workflow") -> JsonObject:
    """A builder builds, a reviewer reviews, and the loop goes back to the build until the
    review passes: two role slots, one resource, a gateway and an end event."""
    return {
        "schemaVersion": "acx.cal/1",
        "id": workflow_id,
        "version": "0.1.0",
        "name": "Build and review",
        "description": (
            "STARTER (engram workflow new): a builder builds, a reviewer reviews, and the loop "
            "returns to the build until the review passes. Rename id/name, describe your task, "
            "then `engram workflow lint FILE --publish` and `engram workflow sign`."
        ),
        "license": "Apache-2.0",
        "authors": [{"name": "Your Name"}],
        "tags": ["starter", "review"],
        "participants": [
            {
                "alias": "builder",
                "bind": "slot",
                "slot": {"role": "builder", "capabilities": [{"taskType": "implement-feature"}]},
            },
            {"alias": "reviewer", "bind": "slot", "slot": {"role": "reviewer"}},
        ],
        "rac": [
            {
                "id": "code-wiki",
                "kind": "wiki",
                "description": "A map of the codebase the builder reads first (replace with "
                "the resources your agents need).",
            }
        ],
        "variables": [{"name": "review", "type": "object"}],
        "limits": {"maxSteps": 12},
        "start": "build",
        "nodes": [
            {
                "id": "build",
                "type": "task",
                "agent": "builder",
                "action": "Build the change (say what the task is).",
                "requires": {"capabilities": ["implement-feature"], "rac": ["code-wiki"]},
                "completion": {
                    "type": "verification",
                    "commands": ["make test"],
                    "passIntent": "The tests pass (replace with your own check).",
                },
            },
            {
                "id": "review",
                "type": "task",
                "agent": "reviewer",
                "action": "Review the change; set review.outcome to ok when it passes.",
                "approval": "always",
                "completion": {"type": "guardrail", "kind": "milestone"},
            },
            {"id": "gate", "type": "gateway", "gateway": "exclusive"},
            {"id": "done", "type": "event", "event": "end"},
        ],
        "edges": [
            {"from": "build", "to": "review"},
            {"from": "review", "to": "gate"},
            {
                "from": "gate",
                "to": "done",
                "when": {"var": "review.outcome", "op": "eq", "value": "ok"},
            },
            {"from": "gate", "to": "build", "when": {"always": True}},
        ],
    }


__all__ = ["starter_workflow"]
