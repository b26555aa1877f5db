"""The semantic rules of SPEC §9.2-§9.5 beyond the schema, each a requirement id."""

from __future__ import annotations

from typing import Any

import pytest
from policy_kit import docs_v1, edited, reference, to_bytes

from engram.policy import PolicyError, load_policy


def _rules(document: dict[str, Any]) -> set[str]:
    with pytest.raises(PolicyError) as caught:
        load_policy(to_bytes(document))
    return {p.rule for p in caught.value.problems}


VENDOR_OUTSIDE_HINTS = [
    ("loop.effort", "high"),
    ("context.compaction.summarizationAlgorithm", "map-reduce"),
    ("context.kvCachePrefixStable", True),
    ("context.toolResultTruncation.contextEditing", {"strategy": "x"}),
    ("rules.0.action", "apply clear_tool_uses_20250919 then continue"),
    ("rules.0.trigger", "when compact_20260112 fires"),
    ("loop.verification.commands", ["send anthropic-beta: context-management-2025-06-27"]),
    ("context.memoryFiles", ["interleaved-thinking-2025-05-14"]),
]


@pytest.mark.req("engram.policy.vendor-only-in-hints")
@pytest.mark.parametrize(("path", "value"), VENDOR_OUTSIDE_HINTS)
def test_vendor_specifics_outside_hints_are_refused(path: str, value: Any) -> None:
    assert "engram.policy.vendor-only-in-hints" in _rules(edited(reference(), path, value))


@pytest.mark.req("engram.policy.vendor-only-in-hints")
def test_the_same_specifics_under_hints_are_taken() -> None:
    hints = {
        "effort": "high",
        "kvCachePrefixStable": True,
        "summarizationAlgorithm": "map-reduce",
        "contextEditing": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        "compactionMechanism": "compact_20260112",
        "betaHeaders": ["context-management-2025-06-27"],
    }
    load_policy(to_bytes(edited(reference(), "hints", hints)))


@pytest.mark.req("engram.policy.verify-justified")
def test_a_cycle_without_verify_needs_a_justification_in_hints() -> None:
    document = edited(reference(), "loop.cycle", ["plan", "gather_context", "act"])
    assert _rules(document) == {"engram.policy.verify-justified"}
    assert _rules(edited(document, "hints", {"verifyOmitted": "   "})) == {
        "engram.policy.verify-justified"
    }
    load_policy(to_bytes(edited(document, "hints", {"verifyOmitted": "read-only research agent"})))


@pytest.mark.req("engram.policy.cycle-order")
def test_the_cycle_is_an_ordered_subset() -> None:
    assert _rules(edited(reference(), "loop.cycle", ["act", "gather_context", "verify"])) == {
        "engram.policy.cycle-order"
    }
    assert "engram.policy.schema" in _rules(
        edited(reference(), "loop.cycle", ["act", "act", "verify"])
    )


WRITER = {"id": "fixer", "description": "edits files", "promptRef": "rom/skills/x/SKILL.md"}


@pytest.mark.req("engram.policy.writer-single-threaded")
@pytest.mark.parametrize(
    "tools", [["acx:execute"], ["acx:search", "acx:memory.write"], ["acx:dispatch"], ["Edit"]]
)
def test_a_parallel_sub_agent_that_can_write_is_refused(tools: list[str]) -> None:
    agent = {**WRITER, "tools": tools, "concurrency": "parallel"}
    assert _rules(edited(reference(), "loop.subAgents", [agent])) == {
        "engram.policy.writer-single-threaded"
    }


@pytest.mark.req("engram.policy.writer-single-threaded")
def test_writers_default_to_single_threaded_and_read_only_fan_out_may_be_parallel() -> None:
    load_policy(
        to_bytes(edited(reference(), "loop.subAgents", [{**WRITER, "tools": ["acx:execute"]}]))
    )
    load_policy(to_bytes(docs_v1()))  # its searcher is parallel with acx:search only


@pytest.mark.req("engram.policy.unambiguous")
def test_a_condition_rule_or_sub_agent_listed_twice_is_refused() -> None:
    stops = reference()["loop"]["stopConditions"] + [{"when": "completed", "action": "handoff"}]
    assert _rules(edited(reference(), "loop.stopConditions", stops)) == {
        "engram.policy.unambiguous"
    }
    rules = reference()["rules"] + [reference()["rules"][0]]
    assert _rules(edited(reference(), "rules", rules)) == {"engram.policy.unambiguous"}


@pytest.mark.req("engram.policy.hints-ignorable")
@pytest.mark.parametrize(
    "member", ["outcomeReport", "stopConditions", "handoff", "guardrailContract"]
)
def test_hints_cannot_carry_the_outcome_contract(member: str) -> None:
    assert _rules(edited(reference(), "hints", {member: "anything"})) == {
        "engram.policy.hints-ignorable"
    }


@pytest.mark.req("engram.policy.budget-consistent")
def test_a_budget_default_timeout_above_its_own_ceiling_is_refused() -> None:
    document = edited(docs_v1(), "budget.timeouts.defaultCommandSec", 7200)
    assert _rules(document) == {"engram.policy.budget-consistent"}


@pytest.mark.req("engram.policy.not-mutated")
def test_the_loaded_policy_hands_out_copies_only() -> None:
    policy = load_policy(to_bytes(reference()))
    handed = policy.document()["loop"]
    assert isinstance(handed, dict)
    handed["maxTurns"] = 10_000
    loop = policy.get("loop")
    loop["maxTurns"] = 10_000
    assert policy.get("loop", "maxTurns") == 40
    fresh = policy.document()["loop"]
    assert isinstance(fresh, dict)
    assert fresh["maxTurns"] == 40
