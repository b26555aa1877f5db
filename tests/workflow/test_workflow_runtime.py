"""The host half of §14.3 and §14.4: closed conditions as data, the step bound, no execution."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acx_json_kit import workflow
from engram.cli import cli, run_cli
from engram.workflow import (
    ConditionError,
    StepBudget,
    StepLimitReached,
    evaluate_condition,
    lint_workflow,
    next_nodes,
)

VARS: dict[str, Any] = {"review": {"outcome": "ok", "score": 7, "flag": True}, "attempts": 2}


@pytest.mark.req("engram.workflow.condition-evaluation", "engram.workflow.conditions-closed")
@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        (None, True),
        ({"always": True}, True),
        ({"var": "review.outcome", "op": "eq", "value": "ok"}, True),
        ({"var": "review.outcome", "op": "ne", "value": "ok"}, False),
        ({"var": "review.score", "op": "eq", "value": 7.0}, True),
        ({"var": "review.flag", "op": "eq", "value": 1}, False),
        ({"var": "review.score", "op": "gt", "value": 6}, True),
        ({"var": "review.score", "op": "le", "value": "8"}, False),
        ({"var": "review.outcome", "op": "lt", "value": "z"}, True),
        ({"var": "attempts", "op": "in", "value": [1, 2, 3]}, True),
        ({"var": "attempts", "op": "in", "value": 2}, False),
        ({"var": "review.missing", "op": "ne", "value": "x"}, False),
        ({"var": "attempts.deeper", "op": "eq", "value": 2}, False),
        ({"all": [{"always": True}, {"racAvailable": "code-wiki"}]}, True),
        ({"any": [{"racAvailable": "infra"}, {"not": {"always": True}}]}, False),
    ],
)
def test_conditions_evaluate_as_closed_data(condition: Any, expected: bool) -> None:
    assert evaluate_condition(condition, VARS, {"code-wiki"}) is expected


@pytest.mark.req("engram.workflow.conditions-closed")
@pytest.mark.parametrize("condition", ["review.outcome == 'ok'", {"var": "x", "all": []}, [1], {}])
def test_expression_strings_and_mixed_shapes_are_refused(condition: Any) -> None:
    with pytest.raises(ConditionError):
        evaluate_condition(condition, VARS)


@pytest.mark.req("engram.workflow.condition-evaluation")
def test_gateways_choose_their_branches() -> None:
    document = workflow()
    assert next_nodes(document, "gate", VARS) == ["done"]
    assert next_nodes(document, "gate", {"review": {"outcome": "no"}}) == ["build"]
    document["nodes"][2]["gateway"] = "inclusive"
    assert next_nodes(document, "gate", VARS) == ["done", "build"]
    document["nodes"][2]["gateway"] = "parallel"
    assert next_nodes(document, "gate", {}) == ["done", "build"]
    assert next_nodes(document, "done", VARS) == []


@pytest.mark.req("engram.workflow.step-bound")
def test_no_step_runs_beyond_max_steps() -> None:
    budget = StepBudget(workflow())
    assert [budget.take() for _ in range(12)] == list(range(1, 13))
    with pytest.raises(StepLimitReached):
        budget.take()
    assert budget.taken == 12


@pytest.mark.req("engram.workflow.non-executing")
def test_no_command_runs_and_nothing_is_granted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    witness = tmp_path / "ran"
    document = workflow()
    command = f"touch {witness}"
    document["nodes"][0]["completion"] = {"type": "verification", "commands": [command],
                                          "passIntent": "ran"}  # fmt: skip
    document["nodes"][0]["action"] = command
    document["nodes"][1]["completion"] = {"type": "skill-scripts", "scripts": [command]}
    document["rac"][0]["check"] = {"type": "file-glob", "hint": f"$(touch {witness})"}
    path = tmp_path / "team.cal.json"
    path.write_text(json.dumps(document))  # noqa: TID251
    assert lint_workflow(document).ok
    for command_line in (
        ["workflow", "lint", str(path), "--publish"],
        ["workflow", "ready", str(path), "--cartridges", str(tmp_path)],
        ["workflow", "inspect", str(path)],
        ["workflow", "verify", str(path)],
    ):
        run_cli(cli, command_line)
    assert not witness.exists()
    out = capsys.readouterr().out
    assert "the host must pause for explicit approval" in out
