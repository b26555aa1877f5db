"""Host resource-limits.yaml precedence, the SAVE rule overlay and the effective policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from policy_kit import REFERENCE_V1_1, docs_v1, edited, reference, to_bytes

from engram.cli import cli, run_cli
from engram.policy import (
    HostLimitsError,
    PolicyError,
    add_rule,
    effective_policy,
    load_host_limits,
    load_policy,
    load_rule_overlay,
)
from engram.policy.internals import effective_limits

BUDGET = docs_v1()["budget"]


@pytest.mark.req("engram.policy.host-precedence")
@pytest.mark.parametrize(
    ("host_yaml", "expected", "source"),
    [
        (b"", 1000000, "cartridge"),  # cartridge only
        (b"tokenSpend: {dailyPerAgent: 5000}\n", 5000, "host"),  # host lower
        (
            b"tokenSpend: {dailyPerAgent: 9000000}\n",
            9000000,
            "host",
        ),  # host higher: host still wins
    ],
)
def test_the_host_value_wins_leaf_by_leaf(host_yaml: bytes, expected: int, source: str) -> None:
    limits = effective_limits(load_host_limits(host_yaml), BUDGET)
    leaf = limits.leaves[("tokenSpend", "dailyPerAgent")]
    assert (leaf.value, leaf.source) == (expected, source)


@pytest.mark.req("engram.policy.host-precedence")
def test_a_shared_cartridge_can_never_raise_a_host_ceiling() -> None:
    host = load_host_limits(
        b"tokenSpend: {dailyPerProject: 10, dailyPerAgent: 10, dailyGlobal: 10}\n"
        b"concurrency: {maxCommandsPerStation: 1, maxStationsPerProject: 1,"
        b" maxGlobalInFlightCommands: 1}\n"
        b"timeouts: {defaultCommandSec: 5, maxCommandSec: 5}\n"
    )
    greedy: dict[str, dict[str, Any]] = {
        "tokenSpend": {"dailyPerProject": 1e12, "dailyPerAgent": 1e12, "dailyGlobal": 1e12},
        "concurrency": {
            "maxCommandsPerStation": 999,
            "maxStationsPerProject": 999,
            "maxGlobalInFlightCommands": 999,
        },
        "timeouts": {"defaultCommandSec": 99999, "maxCommandSec": 99999},
        "killSwitch": {"enabled": False},
    }
    limits = effective_limits(host, greedy)
    for (part, name), ceiling in host.values.items():
        assert limits.value(part, name) == ceiling <= greedy[part][name]
        assert limits.leaves[(part, name)].source == "host"


@pytest.mark.req("engram.policy.host-limits-shape")
def test_neither_side_setting_a_leaf_leaves_it_unset() -> None:
    leaf = effective_limits(None, None).leaves[("timeouts", "maxCommandSec")]
    assert (leaf.value, leaf.source) == (None, "unset")


@pytest.mark.req("engram.policy.host-limits-shape")
@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        (b"tokenSpend: {dailyPerAgent: 1}\ntokenSpend: {dailyGlobal: 2}\n", "duplicate key"),
        (b"tokenspend: {dailyPerAgent: 1}\n", "unknown key 'tokenspend'"),
        (b"timeouts: {maxCommandSecs: 1}\n", "unknown key timeouts.maxCommandSecs"),
        (b"timeouts: {maxCommandSec: 1.5}\n", "whole number"),
        (b"timeouts: {maxCommandSec: yes}\n", "is a number"),
        (b"tokenSpend: {dailyGlobal: -1}\n", "at least 0"),
        (b"killSwitch: {enabled: maybe}\n", "true or false"),
        (b"- a\n- b\n", "top level is a mapping"),
        (b"a: [\n", "not YAML"),
        (b"x" * 70000, "bytes >"),
        (b"!!python/object/apply:os.system ['true']\n", "not YAML"),
    ],
)
def test_a_bad_host_file_is_refused_never_guessed(text: bytes, complaint: str) -> None:
    with pytest.raises(HostLimitsError, match=complaint) as caught:
        load_host_limits(text)
    assert caught.value.code == "invalid_host_limits"


LEARNED = {
    "id": "run-migrations-first",
    "category": "devtools",
    "title": "Run migrations before tests",
    "trigger": "tests touch the schema",
    "action": "run make migrate",
    "severity": "warn",
}


@pytest.mark.req("engram.policy.rule-overlay")
def test_field_learned_rules_go_to_the_save_overlay_and_the_rom_never_changes() -> None:
    raw = REFERENCE_V1_1.read_bytes()
    policy = load_policy(raw)
    overlay = add_rule(None, LEARNED, policy)
    again = load_rule_overlay(overlay.to_bytes(), policy)
    effective = effective_policy(policy, None, again)
    assert [(r["id"], s) for r, s in effective.rules][-1] == (
        "run-migrations-first",
        "save-overlay",
    )
    assert {s for _, s in effective.rules} == {"rom", "save-overlay"}
    assert REFERENCE_V1_1.read_bytes() == raw == policy.raw
    assert (
        policy.digest == "sha256:bb913e01807a12e47a4f87df8c4932eab5d8b1f5ef490b48e827de58b8563a40"
    )
    assert "run-migrations-first" not in {r["id"] for r in policy.get("rules")}


@pytest.mark.req("engram.policy.rule-overlay")
@pytest.mark.parametrize(
    "rule",
    [
        {**LEARNED, "id": "stop-destructive", "severity": "info"},  # would soften a signed rule
        {**LEARNED, "action": "switch to clear_tool_uses_20250919"},
        {**LEARNED, "severity": "fatal"},
        {k: v for k, v in LEARNED.items() if k != "title"},
    ],
)
def test_an_overlay_only_adds_well_formed_portable_rules(rule: dict[str, Any]) -> None:
    with pytest.raises(PolicyError):
        add_rule(None, rule, load_policy(REFERENCE_V1_1.read_bytes()))


@pytest.mark.req("engram.policy.rule-overlay")
def test_an_overlay_of_another_shape_is_refused() -> None:
    policy = load_policy(REFERENCE_V1_1.read_bytes())
    for raw in (
        b'{"rules": []}',
        b'{"schemaVersion": "engram.rule-overlay/2", "rules": []}',
        b"[]",
    ):
        with pytest.raises(PolicyError):
            load_rule_overlay(raw, policy)


@pytest.mark.req("engram.policy.effective-provenance")
def test_the_effective_policy_names_where_each_value_comes_from() -> None:
    policy = load_policy(to_bytes(edited(docs_v1(), "hints", {"effort": "high"})))
    host = load_host_limits(b"timeouts: {maxCommandSec: 600}\n")
    effective = effective_policy(policy, host)
    assert (effective.value("loop.maxTurns"), effective.source("loop.maxTurns")) == (40, "rom")
    assert (
        effective.value("budget.timeouts.maxCommandSec"),
        effective.source("budget.timeouts.maxCommandSec"),
    ) == (600, "host")
    assert effective.source("budget.timeouts.defaultCommandSec") == "cartridge"
    assert effective.source("loop.stopConditions.needs_input") == "engram-default"
    assert effective.source("hints.effort") == "hint (ignored)"
    agent = "loop.subAgents[codebase-searcher]"
    assert effective.source(f"{agent}.contextReturnBudgetTokens") == "rom"
    document = effective.to_wire()
    assert document["policyDigest"] == policy.digest


@pytest.mark.req("engram.policy.effective-provenance")
def test_engram_cartridge_policy_prints_the_effective_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    limits = tmp_path / "resource-limits.yaml"
    limits.write_text("tokenSpend:\n  dailyPerAgent: 250000\n")
    code = run_cli(
        cli, ["cartridge", "policy", str(REFERENCE_V1_1), "--host-limits", str(limits), "--json"]
    )
    assert code == 0
    document = json.loads(capsys.readouterr().out)
    values = {v["path"]: (v["value"], v["source"]) for v in document["values"]}
    assert values["budget.tokenSpend.dailyPerAgent"] == (250000, "host")
    assert values["loop.cycle"][1] == "rom"
    code = run_cli(cli, ["cartridge", "policy", str(REFERENCE_V1_1)])
    out = capsys.readouterr().out
    assert code == 0
    assert "loop.maxTurns" in out
    assert "[rom]" in out
    assert "stop-destructive" in out


@pytest.mark.req("engram.policy.schema-version")
def test_engram_cartridge_policy_refuses_a_hostile_policy_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = tmp_path / "policy.json"
    hostile.write_bytes(to_bytes(edited(reference(), "schemaVersion", "acx.loop-context-policy/9")))
    assert run_cli(cli, ["cartridge", "policy", str(hostile)]) == 2
    assert "error: invalid_policy:" in capsys.readouterr().err
    hostile.write_bytes(to_bytes(edited(reference(), "loop.effort", "max")))
    assert run_cli(cli, ["cartridge", "policy", str(hostile), "--json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["problems"][0]["rule"] == "engram.policy.vendor-only-in-hints"
    bad_limits = tmp_path / "limits.yaml"
    bad_limits.write_text("timeouts: {maxCommandSec: -5}\n")
    assert (
        run_cli(cli, ["cartridge", "policy", str(REFERENCE_V1_1), "--host-limits", str(bad_limits)])
        == 2
    )
