"""Parsing and validating acx.loop-context-policy/1 and /1.1 (SPEC §9; docs/spec/acx-policy.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from policy_kit import PUBLISHED_SCHEMA, REFERENCE_V1_1, docs_v1, edited, reference, to_bytes

from engram.policy import PolicyError, load_policy
from engram.policy.internals import schema_for


def _rules(document: Any) -> set[str]:
    with pytest.raises(PolicyError) as caught:
        load_policy(to_bytes(document) if not isinstance(document, bytes) else document)
    return {p.rule for p in caught.value.problems}


@pytest.mark.req("engram.policy.schema")
def test_the_reference_cartridges_policy_loads_byte_for_byte() -> None:
    raw = REFERENCE_V1_1.read_bytes()
    policy = load_policy(raw)
    assert policy.schema_version == "acx.loop-context-policy/1.1"
    # the oid the reference cartridge's signed objects table records for this ROM object
    assert (
        policy.digest == "sha256:bb913e01807a12e47a4f87df8c4932eab5d8b1f5ef490b48e827de58b8563a40"
    )
    assert policy.raw == raw


@pytest.mark.req("engram.policy.schema")
def test_the_published_v1_schema_refuses_the_references_own_v1_1_default() -> None:
    published = json.loads(PUBLISHED_SCHEMA.read_bytes())
    errors = list(Draft202012Validator(published).iter_errors(reference()))
    assert errors, "the reason engram ships schemas of its own"
    assert not list(
        Draft202012Validator(schema_for("acx.loop-context-policy/1.1")).iter_errors(reference())
    )


@pytest.mark.req("engram.policy.schema")
def test_the_docs_v1_example_loads_and_matches_the_published_v1_schema() -> None:
    document = docs_v1()
    assert load_policy(to_bytes(document)).schema_version == "acx.loop-context-policy/1"
    published = json.loads(PUBLISHED_SCHEMA.read_bytes())
    assert not list(Draft202012Validator(published).iter_errors(document))


@pytest.mark.req("engram.policy.schema")
@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("observability", {"pillars": ["decision"]}),
        ("context.playbook", {"store": "save/playbook.jsonl"}),
        ("loop.verification.regression", {"acceptIf": "no-regression"}),
        ("loop.cycle", ["plan", "gather_context", "act", "verify"]),
        ("loop.cycle", ["gather_context", "act", "verify", "reflect"]),
        (
            "loop.subAgents",
            [{"id": "a", "description": "d", "promptRef": "p", "tools": [], "mode": "backend"}],
        ),
    ],
)
def test_each_v1_1_field_is_refused_in_a_v1_document_and_taken_in_v1_1(
    path: str, value: Any
) -> None:
    v1 = edited(docs_v1(), path, value)
    assert "engram.policy.schema" in _rules(v1)
    v11 = edited(v1, "schemaVersion", "acx.loop-context-policy/1.1")
    load_policy(to_bytes(v11))


@pytest.mark.req("engram.policy.schema-version")
@pytest.mark.parametrize(
    "version", ["acx.loop-context-policy/2", "acx.loop-context-policy/1.2", "", 1, None]
)
def test_any_other_schema_version_is_refused_clearly(version: Any) -> None:
    document = edited(reference(), "schemaVersion", version)
    with pytest.raises(PolicyError, match="unrecognized schemaVersion") as caught:
        load_policy(to_bytes(document))
    assert caught.value.code == "invalid_policy"
    assert [p.rule for p in caught.value.problems] == ["engram.policy.schema-version"]


@pytest.mark.req("engram.policy.schema-version")
def test_a_policy_without_schema_version_is_refused() -> None:
    document = reference()
    del document["schemaVersion"]
    assert _rules(document) == {"engram.policy.schema-version"}


@pytest.mark.req("engram.policy.strict-json")
@pytest.mark.parametrize(
    "raw",
    [
        b'{"schemaVersion": "acx.loop-context-policy/1",'
        b' "schemaVersion": "acx.loop-context-policy/1.1"}',
        b'{"schemaVersion": "acx.loop-context-policy/1.1", "loop": {"maxTurns": 1e400}}',
        b'{"schemaVersion": "acx.loop-context-policy/1.1", "loop": {"maxTurns": 9007199254740993}}',
        b"\xff\xfe",
        b"[]",
        b"{" * 5000,
    ],
)
def test_strict_i_json_refuses_what_json_loads_would_take(raw: bytes) -> None:
    assert _rules(raw) == {"engram.policy.strict-json"}


@pytest.mark.req("engram.policy.strict-json")
def test_an_oversized_policy_is_refused_before_parsing() -> None:
    assert _rules(b" " * (2 << 20)) == {"engram.policy.strict-json"}


@pytest.mark.req("engram.policy.rules-verbatim")
@pytest.mark.parametrize("missing", ["id", "category", "title", "trigger", "action", "severity"])
def test_mission_rules_keep_all_six_fields(missing: str) -> None:
    document = reference()
    del document["rules"][0][missing]
    assert "engram.policy.schema" in _rules(document)


@pytest.mark.req("engram.policy.rules-verbatim")
def test_the_outcome_report_is_the_operator_command_report() -> None:
    document = edited(reference(), "guardrailContract.outcomeReport", "CustomReport")
    assert "engram.policy.schema" in _rules(document)
    document = edited(reference(), "loop.handoff.emits", "CustomReport")
    assert "engram.policy.schema" in _rules(document)


@pytest.mark.req("engram.policy.schema")
def test_every_problem_is_listed_with_its_path_not_just_the_first() -> None:
    document = edited(reference(), "loop.maxTurns", 0)
    document = edited(document, "context.retrieval", "eventually")
    with pytest.raises(PolicyError) as caught:
        load_policy(to_bytes(document))
    paths = {p.path for p in caught.value.problems}
    assert {"$.loop.maxTurns", "$.context.retrieval"} <= paths
