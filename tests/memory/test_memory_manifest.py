"""engram.ote.v1 manifests: every key typed and ranged, errors naming file, key and expectation."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from memory_kit import manifest_text

from engram.cli import cli
from engram.errors import ManifestError
from engram.memory import default_manifest_text, load_manifest, parse_manifest

SPEC_EXAMPLE = """
schema_version = "engram.ote.v1"

[seat]
seat_id = "seat:core-exec-01"
archetype = "archetype:general"
keyspace_budget_tokens = 2000

[ontology]
domain = "acme-core"
allowed_kinds = ["invariant", "architecture", "decision", "known_process", "procedure", "incident"]
entity_patterns = ["ADR-\\\\d{4}", "K\\\\d{2}"]

[[topology.mounts]]
ring = "M0" # M0 (Fleet Canon) -> M1 (Archetype) -> M2 (Repo) -> M3 (Team) -> M4 (Seat)
ring_id = "canon:shared" # pre-S2 stores used canon:fleet; `engram migrate --rings` moves them
access = "read_only"
budget_share_pct = 20

[epistemology]
credible_z = 1.96
graduation_lcb_threshold = 0.78
graduation_min_samples = 8.0
nomination_lcb_threshold = 0.85
nomination_min_verifications = 5

[attestation]
allowed_signers = ".engram/attestors"
reverify_fraction = 0.2

[retrieval]
embedding_provider = "remote-openai"
embedding_model = "qwen3-embedding-8b"
embedding_dims = 128
fail_open = true

[retrieval.reranker]
enabled = true
provider = "vllm-rerank"
model = "qwen3-reranker-8b"
prompt_template = "qwen3_reranker_chatml"
candidates_k = 20
guaranteed_dense_k = 5
"""


@pytest.mark.req("engram.memory.manifest-schema")
def test_the_spec_example_parses_with_every_key(tmp_path: Path) -> None:
    spec = parse_manifest(SPEC_EXAMPLE, "example.toml", tmp_path)
    assert spec.seat.seat_id == "seat:core-exec-01"
    assert spec.seat.keyspace_budget_tokens == 2000
    assert spec.ontology.entity_patterns == (r"ADR-\d{4}", r"K\d{2}")
    assert [(m.ring, m.ring_id, m.access, m.budget_share_pct) for m in spec.mounts] == [
        ("M0", "canon:shared", "read_only", 20)
    ]
    assert spec.epistemology.nomination_min_verifications == 5
    assert spec.attestation is not None
    assert spec.attestation.allowed_signers == tmp_path / ".engram" / "attestors"
    assert spec.retrieval.embedding_model == "qwen3-embedding-8b"
    assert spec.retrieval.reranker.guaranteed_dense_k == 5


BAD = [
    (
        'schema_version = "engram.ote.v1"',
        'schema_version = "engram.ote.v2"',
        "schema_version",
        "'engram.ote.v1'",
    ),
    (
        'seat_id = "seat:engram-implementer"\narchetype',
        'seat_id = "core"\narchetype',
        "seat.seat_id",
        "an id such as",
    ),
    (
        "keyspace_budget_tokens = 2000",
        "keyspace_budget_tokens = 0",
        "seat.keyspace_budget_tokens",
        "an integer from 1 to 1000000",
    ),
    (
        "keyspace_budget_tokens = 2000",
        'keyspace_budget_tokens = "2000"',
        "seat.keyspace_budget_tokens",
        "an integer",
    ),
    ('domain = "engram"', 'domain = "Acme Core"', "ontology.domain", "lower-case"),
    (
        'allowed_kinds = ["invariant"',
        'allowed_kinds = ["Invariant"',
        "ontology.allowed_kinds",
        "kind names",
    ),
    (
        'entity_patterns = ["ADR-',
        'entity_patterns = ["(ADR-',
        "ontology.entity_patterns",
        "valid regular expressions",
    ),
    ('ring = "M0" #', 'ring = "M9" #', "topology.mounts[0].ring", "one of 'M0'"),
    (
        'ring_id = "canon:shared"',
        'ring_id = "repo:abc"',
        "topology.mounts[0].ring_id",
        "starting with 'canon:'",
    ),
    (
        'ring_id = "canon:shared"\naccess = "read_only"',
        'ring_id = "canon:shared"\naccess = "read_write"',
        "topology.mounts[0].access",
        "ring M0 is canon",
    ),
    (
        "budget_share_pct = 20",
        "budget_share_pct = 120",
        "topology.mounts[0].budget_share_pct",
        "an integer from 0 to 100",
    ),
    ("budget_share_pct = 20", "budget_share_pct = 60", "topology.mounts", "add up to at most 100"),
    ("credible_z = 1.96", "credible_z = 0", "epistemology.credible_z", "a number in (0.0, 10.0]"),
    (
        "graduation_lcb_threshold = 0.78",
        "graduation_lcb_threshold = 1.5",
        "epistemology.graduation_lcb_threshold",
        "a number in (0.0, 1.0)",
    ),
    (
        "graduation_min_samples = 8.0",
        "graduation_min_samples = -1",
        "epistemology.graduation_min_samples",
        "a number in [0.0",
    ),
    (
        "nomination_lcb_threshold = 0.85",
        "nomination_lcb_threshold = true",
        "epistemology.nomination_lcb_threshold",
        "a number",
    ),
    (
        "nomination_min_verifications = 5",
        "nomination_min_verifications = 2.5",
        "epistemology.nomination_min_verifications",
        "an integer",
    ),
    ("fail_open = true", 'fail_open = "yes"', "retrieval.fail_open", "true or false"),
    (
        "embedding_dims = 128",
        "embedding_dims = 0",
        "retrieval.embedding_dims",
        "an integer from 1 to 65536",
    ),
    (
        'embedding_provider = "minilm-l6-v2"',
        'embedding_provider = "magic"',
        "retrieval.embedding_provider",
        "one of 'local-hash-128', 'remote-openai'",
    ),
    (
        "candidates_k = 20",
        "candidates_k = 0",
        "retrieval.reranker.candidates_k",
        "an integer from 1 to 1000",
    ),
    (
        "guaranteed_dense_k = 5",
        "guaranteed_dense_k = 50",
        "retrieval.reranker.guaranteed_dense_k",
        "an integer from 0 to 20",
    ),
    ("fail_open = true", "fail_open = true\ncolour = 3", "retrieval.colour", "no such key"),
    (
        "dense_context = 2",
        "dense_context = 9",
        "retrieval.dense_context",
        "an integer from 0 to 8",
    ),
]


@pytest.mark.req("engram.memory.manifest-schema", "engram.memory.manifest-errors")
@pytest.mark.parametrize(("old", "new", "key", "expected"), BAD)
def test_a_bad_value_names_the_file_the_key_and_the_expectation(
    tmp_path: Path, old: str, new: str, key: str, expected: str
) -> None:
    text = default_manifest_text()
    assert old in text
    path = tmp_path / "seat.toml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ManifestError) as caught:
        load_manifest(path)
    message = caught.value.message
    assert message.startswith(f"{path}: {key}: expected ")
    assert expected in message


@pytest.mark.req("engram.memory.manifest-errors")
def test_a_missing_required_key_and_broken_toml_are_named(tmp_path: Path) -> None:
    without = default_manifest_text().replace('domain = "engram"\n', "")
    with pytest.raises(ManifestError, match=r"x.toml: ontology.domain: expected a value"):
        parse_manifest(without, "x.toml")
    with pytest.raises(ManifestError, match=r"x.toml: not valid TOML"):
        parse_manifest("[seat\n", "x.toml")


@pytest.mark.req("engram.memory.anchor-not-git-ref")
@pytest.mark.parametrize(
    "ref", ["HEAD:.engram/attestors", "refs/heads/main", "origin/main:attestors", "main@{1}"]
)
def test_the_attestation_anchor_is_never_a_git_ref(ref: str) -> None:
    text = manifest_text(f'\n[attestation]\nallowed_signers = "{ref}"\n')
    with pytest.raises(
        ManifestError, match=r"attestation.allowed_signers: expected a file path, never a git ref"
    ):
        parse_manifest(text, "x.toml")


@pytest.mark.req("engram.memory.anchor-path")
def test_a_relative_anchor_resolves_against_the_manifest_and_an_absolute_one_stays(
    tmp_path: Path,
) -> None:
    (tmp_path / "seat").mkdir()
    path = tmp_path / "seat" / "ote.toml"
    path.write_text(manifest_text('\n[attestation]\nallowed_signers = "keys/attestors"\n'))
    spec = load_manifest(path)
    assert spec.attestation is not None
    assert spec.attestation.allowed_signers == tmp_path / "seat" / "keys" / "attestors"
    path.write_text(manifest_text('\n[attestation]\nallowed_signers = "/etc/engram/attestors"\n'))
    spec = load_manifest(path)
    assert spec.attestation is not None
    assert spec.attestation.allowed_signers == Path("/etc/engram/attestors")


@pytest.mark.req("engram.memory.manifest-m4-scope")
def test_writing_another_seats_m4_ring_is_refused_but_reading_it_is_allowed() -> None:
    text = manifest_text().replace(
        'ring_id = "seat:engram-implementer"\naccess = "read_write"',
        'ring_id = "seat:someone-else"\naccess = "read_write"',
    )
    with pytest.raises(
        ManifestError,
        match=r"topology.mounts\[4\].access: expected 'read_only' "
        "for another seat's M4 ring",
    ):
        parse_manifest(text, "x.toml")
    reading = text.replace(
        'ring_id = "seat:someone-else"\naccess = "read_write"',
        'ring_id = "seat:someone-else"\naccess = "read_only"',
    )
    assert parse_manifest(reading, "x.toml").mounts[4].access == "read_only"


@pytest.mark.req("engram.memory.default-ote", "engram.memory.ote-check")
def test_default_ote_prints_a_manifest_that_ote_check_accepts(tmp_path: Path) -> None:
    runner = CliRunner()
    printed = runner.invoke(cli, ["default-ote"])
    assert printed.exit_code == 0
    assert 'ring_id = "canon:shared"' in printed.output
    path = tmp_path / "ote.toml"
    path.write_text(printed.output)
    checked = runner.invoke(cli, ["ote", "check", str(path)])
    assert checked.exit_code == 0, checked.output
    assert "valid engram.ote.v1" in checked.output


@pytest.mark.req("engram.memory.ote-check", "engram.memory.manifest-errors")
def test_ote_check_refuses_an_invalid_file_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "ote.toml"
    path.write_text(default_manifest_text().replace("credible_z = 1.96", "credible_z = -1"))
    from engram.cli import run_cli

    code = run_cli(cli, ["ote", "check", str(path)])
    assert code == 2
