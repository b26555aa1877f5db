"""The closed eight-role package spec, identity binding, the memory baseline, derived vectors,
capability records and the A2A AgentCard.

SPEC §3.5, §6.1-§6.3, §7.6-§7.7, §9.1 and §12 items 9 (lboel/acx@85f1358). Documents a test
changes are re-signed with ``write`` so only the rule under test can object.
"""

from __future__ import annotations

import copy
import hashlib
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cartridge_kit import NOW, RECORDS, SCHEMAS, build, check, execute, rows, write_package
from jsonschema import Draft202012Validator

from engram.cartridge import (
    Cartridge,
    Contents,
    ExportOptions,
    embed,
    load_rom,
    package_contents,
    spec_report,
    write,
)
from engram.cartridge.internals import (
    agent_card,
    build_capability,
    build_package_spec,
    capability_id,
    capability_problems,
    lance_schema,
    to_purl,
)
from engram.core.canonical import canonicalize
from engram.core.keys import PrivateKey
from engram.errors import CartridgeFormatError
from engram.trust import TrustState

SPEC_FILE = "rom/package-spec.json"
ROLES = [
    "identity",
    "memory-baseline",
    "memory-vectors",
    "skills",
    "capabilities",
    "harness",
    "loop-context",
    "level",
]


@pytest.fixture
def contents(tmp_path: Path) -> Contents:
    package = write_package(tmp_path / "pkg", records=RECORDS[:1])
    built, _ = package_contents(package, ExportOptions("io.github.acme", NOW))
    return built


def _report(tmp_path: Path, contents: Contents) -> list[str]:
    path = tmp_path / "spec.acx"
    write(path, contents, key=PrivateKey.generate(), signed_at=NOW)
    with Cartridge.open(path) as cartridge:
        assert check(path).state is TrustState.PORTABLE
        return spec_report(load_rom(cartridge)).issues


def _edit_spec(contents: Contents, change: Callable[[dict[str, Any]], None]) -> None:
    spec = json.loads(contents.files[SPEC_FILE][0])
    change(spec)
    contents.files[SPEC_FILE] = (canonicalize(spec), 0o100644, 0)


@pytest.mark.req("engram.cartridge.package-spec")
def test_the_package_spec_has_exactly_the_eight_roles(tmp_path: Path, contents: Contents) -> None:
    spec = json.loads(contents.files[SPEC_FILE][0])
    assert set(spec) == {
        "schemaVersion",
        "cartridgeId",
        "specVersion",
        "embeddingEngine",
        "artifacts",
    }
    assert [a["role"] for a in spec["artifacts"]] == ROLES
    assert spec["cartridgeId"] == contents.meta["acx.cartridge_id"]
    assert spec["embeddingEngine"] == json.loads(contents.meta["acx.embedding_engine"])
    schema = json.loads((SCHEMAS / "package-spec.schema.json").read_text())
    assert not list(Draft202012Validator(schema).iter_errors(spec))
    assert _report(tmp_path, contents) == []


@pytest.mark.req("engram.cartridge.package-spec")
@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s["artifacts"].append({"role": "plugins", "kind": "sqlar"}), "package-spec"),
        (lambda s: s["artifacts"].append(copy.deepcopy(s["artifacts"][0])), "package-spec"),
        (lambda s: s["artifacts"].pop(), "package-spec"),
        (lambda s: s["artifacts"][2].update(signed=True), "package-spec"),
        (lambda s: s.update(extra=1), "package-spec"),
        (lambda s: s.update(cartridgeId="io.github.other/x@1"), "cartridgeId does not match"),
        (lambda s: s.update(specVersion="9.9"), "specVersion does not match"),
        (
            lambda s: s.update(embeddingEngine={"id": "local-hash-128", "dim": 384}),
            "embeddingEngine",
        ),
        (lambda s: s["artifacts"][3].update(count=7), "skills count 7 is not the live 1"),
    ],
)
def test_the_package_spec_is_a_closed_profile(
    tmp_path: Path, contents: Contents, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    """§7.7: unknown fields or roles, duplicate, missing or altered profiles fail (the order of
    the eight entries is not fixed by SPEC or the schema, so a reordered list is accepted)."""
    _edit_spec(contents, change)
    issues = _report(tmp_path, contents)
    assert any(message in i for i in issues), issues


@pytest.mark.req("engram.cartridge.package-spec")
@pytest.mark.parametrize(
    ("drop", "message"),
    [
        ("rom/manifest/harness-requirements.json", "required artifact rom/manifest/harness"),
        ("rom/policy/loop-context-policy.json", "required artifact rom/policy/loop"),
        ("rom/schema/lance-memory.json", "required artifact rom/schema/lance-memory.json"),
        (SPEC_FILE, "rom/package-spec.json is missing"),
    ],
)
def test_every_required_artifact_is_present(
    tmp_path: Path, contents: Contents, drop: str, message: str
) -> None:
    del contents.files[drop]
    issues = _report(tmp_path, contents)
    assert any(message in i for i in issues), issues


@pytest.mark.req("engram.cartridge.package-spec")
@pytest.mark.parametrize("version", ["acx.loop-context-policy/2", "acx.loop-policy/1"])
def test_an_unrecognised_loop_policy_version_is_reported(
    tmp_path: Path, contents: Contents, version: str
) -> None:
    """§9.1: an unrecognised schemaVersion MUST be rejected."""
    policy = json.loads(contents.files["rom/policy/loop-context-policy.json"][0])
    contents.files["rom/policy/loop-context-policy.json"] = (
        canonicalize({**policy, "schemaVersion": version}),
        0o100644,
        0,
    )
    assert any("unrecognised schemaVersion" in i for i in _report(tmp_path, contents))


@pytest.mark.req("engram.cartridge.package-spec")
def test_the_lance_descriptor_is_the_normative_table(tmp_path: Path, contents: Contents) -> None:
    lance = json.loads(contents.files["rom/schema/lance-memory.json"][0])
    assert lance == lance_schema({"id": "local-hash-128", "dim": 128})
    assert [c["name"] for c in lance["columns"]] == [
        "id", "zone", "portable", "artifact_fingerprint", "codebase_fingerprint", "title",
        "summary", "source_type", "tags", "impact", "xp_awarded", "timestamp", "text", "vector",
    ]  # fmt: skip
    assert lance["columns"][-1]["type"] == "fixed_size_list<float32, 128>"
    schema = json.loads((SCHEMAS / "lance-memory.schema.json").read_text())
    assert not list(Draft202012Validator(schema).iter_errors(lance))
    lance["columns"] = lance["columns"][:-1]
    contents.files["rom/schema/lance-memory.json"] = (canonicalize(lance), 0o100644, 0)
    assert any("14-column" in i for i in _report(tmp_path, contents))


@pytest.mark.req("engram.cartridge.package-spec", "engram.cartridge.publisher-binding")
def test_identity_is_bound_into_the_signed_manifest(tmp_path: Path) -> None:
    path = build(
        tmp_path / "c.acx", key=PrivateKey.generate(), package=write_package(tmp_path / "p")
    )
    with Cartridge.open(path) as cartridge:
        rom = load_rom(cartridge)
    signed = {str(e["sourceRef"]) for e in rom.manifest}
    for key in ("acx.spec_version", "acx.cartridge_id", "acx.artifact_id", "acx.artifact_version",
                "acx.created_at", "acx.embedding_engine", "acx.publisher_id"):  # fmt: skip
        assert f"cartridge:{key}" in signed, key
    assert (rom.publisher_id, rom.signed_meta["acx.artifact_id"]) == (
        "io.github.acme",
        "git-helper",
    )
    assert rom.signed_meta["acx.embedding_engine"] == '{"id":"local-hash-128","dim":128}'
    assert rom.cartridge_id.startswith("io.github.acme/git-helper@")
    for key in ("acx.publisher_id", "acx.artifact_version", "acx.embedding_engine"):
        tampered = tmp_path / f"{key}.acx"
        tampered.write_bytes(path.read_bytes())
        execute(tampered, "UPDATE cartridge SET value = value || 'x' WHERE key = ?", (key,))
        assert check(tampered).state is TrustState.TAMPERED, key


@pytest.mark.req("engram.cartridge.package-spec")
def test_the_spec_counts_are_live(tmp_path: Path) -> None:
    spec: dict[str, Any] = build_package_spec(
        cartridge_id="io.github.acme/x@1",
        engine={"id": "local-hash-128", "dim": 128},
        memories=3,
        skills=2,
        table_counts={"capability": 1},
    )
    counts = {a["role"]: a.get("count") for a in spec["artifacts"]}
    assert counts == {
        "identity": None, "memory-baseline": 3, "memory-vectors": None, "skills": 2,
        "capabilities": 1, "harness": None, "loop-context": None, "level": 0,
    }  # fmt: skip


@pytest.mark.req("engram.cartridge.memory-baseline")
def test_the_memory_baseline_is_there_even_without_memories(tmp_path: Path) -> None:
    path = build(tmp_path / "empty.acx", key=None, package=write_package(tmp_path / "p"))
    assert rows(path, "SELECT count(*) FROM memory") == [(0,)]
    with Cartridge.open(path) as cartridge:
        report = spec_report(load_rom(cartridge))
    assert report.clean
    assert report.counts["memory"] == 0


@pytest.mark.req("engram.cartridge.memory-baseline", "engram.cartridge.vector-dimension")
def test_vectors_are_engine_tagged_derived_and_outside_the_signature(tmp_path: Path) -> None:
    package = write_package(tmp_path / "p", records=RECORDS[:1])
    path = build(tmp_path / "v.acx", key=PrivateKey.generate(), package=package)
    meta = dict(rows(path, "SELECT key, value FROM cartridge"))
    engine = json.loads(meta["acx.embedding_engine"])
    assert engine == {"id": "local-hash-128", "dim": 128}
    assert meta["acx.vec0_format"] == "1"
    ((memory_id, zone, blob, fingerprint),) = rows(path, "SELECT * FROM vectors")
    assert (memory_id, zone) == ("mem-001", "rom")
    assert len(blob) == 4 * engine["dim"]  # the dimension comes from acx.embedding_engine (§3.5)
    vector = struct.unpack(f"<{engine['dim']}f", blob)
    record = json.loads(rows(path, "SELECT payload FROM memory")[0][0])
    expected = embed(f"{record['title']}\n\n{record['summary']}")
    assert max(abs(a - b) for a, b in zip(vector, expected, strict=True)) < 1e-6
    assert fingerprint == record["artifactFingerprint"]
    before = check(path)
    execute(path, "UPDATE vectors SET embedding = ?", (struct.pack("<128f", *([9.0] * 128)),))
    execute(path, "UPDATE cartridge SET value = '2' WHERE key = 'acx.vec0_format'")
    after = check(path)
    assert after.manifest_hash == before.manifest_hash
    assert after.state is before.state


@pytest.mark.req("engram.cartridge.memory-baseline")
def test_vectors_without_a_baseline_row_are_reported(tmp_path: Path) -> None:
    path = build(tmp_path / "v.acx", key=None, package=write_package(tmp_path / "p"))
    execute(path, "INSERT INTO vectors VALUES ('ghost', 'rom', zeroblob(512), NULL)")
    with Cartridge.open(path) as cartridge:
        report = spec_report(load_rom(cartridge))
    assert any("no memory baseline row" in i for i in report.issues)


@pytest.mark.req("engram.cartridge.capability-records")
def test_export_writes_a_self_declared_capability_record(contents: Contents) -> None:
    (only,) = contents.capabilities
    record: dict[str, Any] = only
    schema = json.loads((SCHEMAS / "capability-sellable-claim.schema.json").read_text())
    assert not list(Draft202012Validator(schema).iter_errors(record))
    assert record["taskType"] == "implement-feature"
    assert record["domain"] == "backend"
    assert record["stack"] == ["pkg:generic/git", "pkg:generic/python"]  # sorted purls
    assert record["proficiency"]["verified"] is False
    text = f"implement-feature|{','.join(sorted(record['stack']))}|backend"
    assert record["id"] == "cap-" + hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.req("engram.cartridge.capability-records")
@pytest.mark.parametrize(
    ("token", "purl"),
    [
        ("Airflow", "pkg:pypi/apache-airflow"),
        ("apache-airflow", "pkg:pypi/apache-airflow"),
        (" postgres ", "pkg:generic/postgresql"),
        ("My Service", "pkg:generic/my-service"),
        ("pkg:npm/react@18", "pkg:npm/react@18"),
    ],
)
def test_stack_tokens_normalise_through_the_alias_table(token: str, purl: str) -> None:
    assert to_purl(token) == purl


@pytest.mark.req("engram.cartridge.capability-records")
def test_the_capability_id_is_order_insensitive() -> None:
    assert capability_id("debug", ["pkg:npm/b", "pkg:npm/a"], "backend") == capability_id(
        "debug", ["pkg:npm/a", "pkg:npm/b"], "backend"
    )


@pytest.mark.req("engram.cartridge.capability-records")
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"taskType": "generate-terraform"}, "not a v1 seed token"),
        ({"stack": ["pkg:madeup/x"]}, "registered type"),
        ({"id": "cap-0000000000000000"}, "id is not cap-"),
        ({"domain": "marketing"}, "domain"),
        ({"schemaVersion": "acx.capability/2"}, "schemaVersion"),
    ],
)
def test_capability_rules(change: dict[str, Any], message: str) -> None:
    record = build_capability(
        task_type="debug", stack=["python"], domain="backend", at="2026-01-01T00:00:00Z"
    )
    problems = capability_problems({**record, **change}, "cap")
    assert any(message in p for p in problems), problems


@pytest.mark.req("engram.cartridge.capability-records")
def test_namespaced_task_types_are_accepted_and_unknown_seed_tokens_refused() -> None:
    record = build_capability(
        task_type="dev.acx.x:generate-terraform",
        stack=[],
        domain="infrastructure",
        at="2026-01-01T00:00:00Z",
    )
    assert capability_problems(record, "cap") == []
    with pytest.raises(CartridgeFormatError, match="seed token"):
        build_capability(
            task_type="generate-terraform", stack=[], domain="backend", at="2026-01-01T00:00:00Z"
        )


@pytest.mark.req("engram.cartridge.capability-records")
def test_a_capability_is_never_minted_from_field_learned_memory(tmp_path: Path) -> None:
    package = write_package(tmp_path / "p", records=RECORDS[:2])
    options = ExportOptions(
        "io.github.acme", NOW, include_field_learned=True, installation_salt=b"s" * 32
    )
    contents, _ = package_contents(package, options)
    field = next(m for m in contents.memories if not m["portable"])
    claim = build_capability(
        task_type="debug", stack=[], domain="backend", at="2026-01-01T00:00:00Z"
    )
    claim["evidenceRefs"] = [{"kind": "memory-artifact", "ref": field["artifactFingerprint"]}]
    contents.capabilities.append(claim)
    spec = json.loads(contents.files[SPEC_FILE][0])
    spec["artifacts"][4]["count"] = 2
    contents.files[SPEC_FILE] = (canonicalize(spec), 0o100644, 0)
    assert any("field-learned memory" in i for i in _report(tmp_path, contents))


@pytest.mark.req("engram.cartridge.capability-records")
def test_the_agent_card_maps_one_skill_per_record_and_attaches_the_records() -> None:
    record = build_capability(
        task_type="debug", stack=["python"], domain="backend", at="2026-01-01T00:00:00Z"
    )
    card: dict[str, Any] = agent_card(
        meta={
            "acx.publisher_id": "io.github.acme",
            "acx.artifact_id": "x",
            "acx.artifact_version": "1.2.0",
        },
        records=[record],
        url="https://agents.example.com/a2a",
    )
    assert card["version"] == "1.2.0"
    assert card["provider"] == {"organization": "io.github.acme", "url": "https://github.com/acme"}
    assert card["supportedInterfaces"] == [
        {
            "url": "https://agents.example.com/a2a",
            "protocolBinding": "JSONRPC",
            "protocolVersion": "1.0",
        }
    ]
    (skill,) = card["skills"]
    assert skill["id"] == record["id"]
    assert skill["name"] == "debug · python"
    assert "unproven" in skill["description"]
    (extension,) = card["capabilities"]["extensions"]
    assert extension == {
        "uri": "https://acx.dev/a2a/ext/capability/v1",
        "required": False,
        "params": {"records": [record]},
    }
    for member in ("securitySchemes", "security", "defaultInputModes"):
        assert member in card
