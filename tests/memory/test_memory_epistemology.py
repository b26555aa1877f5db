"""outcome and complete: Beta updates, caps, oracles, decision ids, real OpenSSH attestations and
the graduation rule, on every backend."""

from __future__ import annotations

import base64
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from memory_kit import ANCHOR, manifest_text, ssh_keygen_key, ssh_sign

from engram.core.clock import FixedClock
from engram.errors import ConflictError, Forbidden, InvalidRequest, SignatureInvalid
from engram.memory import (
    MemoryEngine,
    complete,
    get_memory,
    open_engine,
    outcome,
    parse_manifest,
    record,
    status,
)
from engram.memory.internals import ATTESTATION_NAMESPACE, BLOCKED, attestation_message, lower_bound
from engram.store import Store


def attest(
    engine: MemoryEngine,
    key: Path,
    memory: str,
    decision: str,
    signal: str,
    workdir: Path,
    namespace: str = ATTESTATION_NAMESPACE,
    weight: float = 1.0,
) -> object:
    signature = ssh_sign(
        key, attestation_message(memory, decision, signal, weight), namespace, workdir
    )
    return outcome(
        engine, memory, signal, decision, weight=weight, attestation=signature, channel="cli"
    )


@pytest.mark.req("engram.memory.outcome-beta", "engram.memory.outcome-oracle")
def test_outcomes_are_conjugate_beta_updates_with_the_oracle_taken_from_the_signal(
    engine: MemoryEngine,
) -> None:
    m = record(engine, "migrations run before deploy", "procedure").memory
    passed = outcome(engine, m.id, "tests_pass", "ci-1")
    failed = outcome(engine, m.id, "build_fail", "ci-2", weight=2.5)
    lint = outcome(engine, m.id, "lint_pass", "ci-3")
    assert (passed.oracle, failed.oracle, lint.oracle) == ("structural", "structural", "lint")
    assert (lint.alpha, lint.beta) == (3.0, 3.5)  # Beta(1, 1) + 1 + 1 pass, + 2.5 fail
    with pytest.raises(InvalidRequest, match="signal: expected one of"):
        outcome(engine, m.id, "vibes_good", "x")


@pytest.mark.req("engram.memory.outcome-model-cap", "engram.memory.outcome-structural-uncapped")
def test_model_judged_deltas_are_capped_at_030_and_structural_ones_are_not(
    engine: MemoryEngine,
) -> None:
    m = record(engine, "cap me", "fact").memory
    rubric = outcome(engine, m.id, "rubric_accept", "r1", weight=5.0)
    model = outcome(engine, m.id, "model_reject", "r2", weight=0.9)
    gate = outcome(engine, m.id, "tests_pass", "g1", weight=5.0)
    assert rubric.delta_alpha == 0.30
    assert model.delta_beta == 0.30
    assert gate.delta_alpha == 5.0
    assert (gate.alpha, gate.beta) == pytest.approx((6.3, 1.3))


@pytest.mark.req("engram.memory.outcome-decision-idempotent")
def test_a_repeated_decision_id_is_one_event_and_a_different_verdict_is_a_conflict(
    engine: MemoryEngine,
) -> None:
    m = record(engine, "retry me", "fact").memory
    first = outcome(engine, m.id, "tests_pass", "decision-7")
    again = outcome(engine, m.id, "tests_pass", "decision-7")
    assert again.duplicate
    assert (again.alpha, again.beta) == (first.alpha, first.beta) == (2.0, 1.0)
    with pytest.raises(ConflictError):
        outcome(engine, m.id, "tests_fail", "decision-7")
    assert status(engine).oracle_split == {"structural": 1}


@pytest.mark.req("engram.memory.outcome-attested-cli-only")
@pytest.mark.parametrize("signal", ["sealed_test_pass", "human_accept", "human_reject"])
def test_sealed_and_human_outcomes_are_refused_over_mcp_and_without_an_attestation(
    make_engine: Callable[..., MemoryEngine],
    attestor: tuple[Path, str],
    tmp_path: Path,
    signal: str,
) -> None:
    engine = make_engine(ANCHOR)
    m = record(engine, "attest me", "fact").memory
    key, _ = attestor
    good = ssh_sign(
        key, attestation_message(m.id, "d", signal, 1.0), ATTESTATION_NAMESPACE, tmp_path
    )
    with pytest.raises(Forbidden, match="refused over MCP"):
        outcome(engine, m.id, signal, "d", attestation=good, channel="mcp")
    with pytest.raises(Forbidden, match="needs an attestation"):
        outcome(engine, m.id, signal, "d", channel="cli")
    assert get_memory(engine, m.id).alpha == 1.0  # type: ignore[union-attr]


@pytest.mark.req("engram.memory.attestation-ssh")
def test_a_real_ssh_keygen_signature_is_accepted_and_agrees_with_ssh_keygen_verify(
    make_engine: Callable[..., MemoryEngine],
    attestor: tuple[Path, str],
    tmp_path: Path,
) -> None:
    engine = make_engine(ANCHOR)
    m = record(engine, "sealed evidence", "fact").memory
    key, _ = attestor
    message = attestation_message(m.id, "seal-1", "sealed_test_pass", 1.0)
    signature = ssh_sign(key, message, ATTESTATION_NAMESPACE, tmp_path)
    result = outcome(
        engine, m.id, "sealed_test_pass", "seal-1", attestation=signature, channel="cli"
    )
    assert result.attested
    assert result.oracle == "sealed_test"
    assert result.principal == "alice@example.org"
    # The oracle: OpenSSH itself accepts the same signature for the same principal.
    (tmp_path / "sig").write_text(signature)
    verified = subprocess.run(
        [
            "ssh-keygen",
            "-Y",
            "verify",
            "-f",
            str(tmp_path / "attestors"),
            "-I",
            "alice@example.org",
            "-n",
            ATTESTATION_NAMESPACE,
            "-s",
            str(tmp_path / "sig"),
        ],
        input=message,
        capture_output=True,
        check=False,
    )
    assert verified.returncode == 0, verified.stderr


@pytest.mark.req("engram.memory.attestation-refuses-forged")
def test_forged_signatures_are_refused(
    make_engine: Callable[..., MemoryEngine],
    attestor: tuple[Path, str],
    tmp_path: Path,
) -> None:
    engine = make_engine(ANCHOR)
    m = record(engine, "forge me", "fact").memory
    key, _ = attestor
    mallory, _ = ssh_keygen_key(tmp_path / "keys", "mallory")
    # A key that is not in allowed_signers.
    with pytest.raises(SignatureInvalid, match="not an allowed signer"):
        attest(engine, mallory, m.id, "f1", "human_accept", tmp_path)
    # Alice's signature over another decision replayed onto this one.
    other = ssh_sign(
        key,
        attestation_message(m.id, "f-other", "human_accept", 1.0),
        ATTESTATION_NAMESPACE,
        tmp_path,
    )
    with pytest.raises(SignatureInvalid):
        outcome(engine, m.id, "human_accept", "f2", attestation=other, channel="cli")
    # A signature for a pass presented for a heavier weight.
    light = ssh_sign(
        key, attestation_message(m.id, "f3", "human_accept", 1.0), ATTESTATION_NAMESPACE, tmp_path
    )
    with pytest.raises(SignatureInvalid):
        outcome(engine, m.id, "human_accept", "f3", weight=9.0, attestation=light, channel="cli")
    # Garbage in the armour.
    with pytest.raises(SignatureInvalid):
        outcome(
            engine,
            m.id,
            "human_accept",
            "f4",
            channel="cli",
            attestation="-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n",
        )
    assert get_memory(engine, m.id).alpha == 1.0  # type: ignore[union-attr]


@pytest.mark.req("engram.memory.attestation-namespace")
def test_a_signature_in_another_namespace_is_refused(
    make_engine: Callable[..., MemoryEngine],
    attestor: tuple[Path, str],
    tmp_path: Path,
) -> None:
    engine = make_engine(ANCHOR)
    m = record(engine, "namespaced", "fact").memory
    key, _ = attestor
    with pytest.raises(SignatureInvalid, match="Namespace"):
        attest(engine, key, m.id, "n1", "human_accept", tmp_path, namespace="git")


@pytest.mark.req("engram.memory.attestation-allowed-signers-options")
def test_allowed_signers_namespaces_and_validity_options_are_honoured(
    make_engine: Callable[..., MemoryEngine],
    attestor: tuple[Path, str],
    tmp_path: Path,
) -> None:
    engine = make_engine(ANCHOR)
    m = record(engine, "options", "fact").memory
    key, public = attestor
    anchor = tmp_path / "attestors"
    anchor.write_text(f'alice@example.org namespaces="git,file" {public}\n')
    with pytest.raises(SignatureInvalid, match="not an allowed signer"):
        attest(engine, key, m.id, "o1", "human_accept", tmp_path)
    anchor.write_text(f'alice@example.org valid-before="20250101" {public}\n')  # clock: 2026
    with pytest.raises(SignatureInvalid, match="not an allowed signer"):
        attest(engine, key, m.id, "o2", "human_accept", tmp_path)
    anchor.write_text(f'alice@example.org valid-after="20250101",namespaces="engram-*" {public}\n')
    assert attest(engine, key, m.id, "o3", "human_accept", tmp_path)


def _graduate_ready(
    engine: MemoryEngine, memory: str, key: Path, tmp_path: Path, n: int, start: int = 0
) -> None:
    for i in range(start, start + n):
        attest(engine, key, memory, f"seal-{i}", "sealed_test_pass", tmp_path)


@pytest.mark.req("engram.memory.graduation-rule", "engram.memory.nomination")
def test_a_memory_graduates_when_full_posterior_and_b_strong_meet_the_threshold(
    make_engine: Callable[..., MemoryEngine],
    attestor: tuple[Path, str],
    tmp_path: Path,
) -> None:
    engine = make_engine(ANCHOR)
    m = record(engine, "graduate me", "invariant").memory
    key, _ = attestor
    _graduate_ready(engine, m.id, key, tmp_path, 8)
    # Beta(9, 1): lower bound 0.9 - 1.96 * sd = 0.72 < 0.78: not yet.
    verdict = complete(engine, m.id).verdicts[0]
    assert verdict.status_after == "candidate"
    assert verdict.strong_lcb == pytest.approx(lower_bound(9, 1, 1.96))
    _graduate_ready(engine, m.id, key, tmp_path, 14, start=8)
    result = complete(engine, m.id)
    assert result.graduation == "open"
    verdict = result.verdicts[0]
    assert verdict.status_after == "graduated"
    assert verdict.full_lcb >= 0.78
    assert verdict.strong_samples >= 8
    assert verdict.nominated  # lcb >= 0.85 with >= 5 verified passes
    assert get_memory(engine, m.id).status == "graduated"  # type: ignore[union-attr]


@pytest.mark.req("engram.memory.graduation-structural-never")
def test_structural_lint_and_rubric_evidence_alone_never_graduates(
    make_engine: Callable[..., MemoryEngine],
    attestor: tuple[Path, str],
) -> None:
    engine = make_engine(ANCHOR)
    m = record(engine, "lots of green builds", "fact").memory
    for i in range(40):
        outcome(engine, m.id, "tests_pass", f"t{i}")
        outcome(engine, m.id, "lint_pass", f"l{i}")
        outcome(engine, m.id, "rubric_accept", f"r{i}")
    verdict = complete(engine, m.id).verdicts[0]
    assert verdict.full_lcb > 0.9
    assert verdict.strong_samples == 0
    assert verdict.status_after == "candidate"


@pytest.mark.req("engram.memory.graduation-no-anchor")
def test_without_an_anchor_nothing_graduates_and_status_says_blocked(
    make_engine: Callable[..., MemoryEngine],
    attestor: tuple[Path, str],
    tmp_path: Path,
) -> None:
    anchored = make_engine(ANCHOR)
    m = record(anchored, "was graduated", "invariant").memory
    key, _ = attestor
    _graduate_ready(anchored, m.id, key, tmp_path, 22)
    assert complete(anchored).verdicts[0].status_after == "graduated"
    fresh = record(anchored, "never attested", "invariant").memory
    for i in range(40):
        outcome(anchored, fresh.id, "tests_pass", f"t{i}")

    (tmp_path / "attestors").unlink()  # the anchor goes away
    engine = make_engine(ANCHOR)
    report = status(engine)
    assert report.graduation == BLOCKED == "blocked (no attested evidence)"
    assert report.attestation["exists"] is False
    result = complete(engine)
    assert result.graduation == BLOCKED
    by_id = {v.memory_id: v for v in result.verdicts}
    assert by_id[m.id].status_after == "graduated"  # held on the full posterior
    assert by_id[fresh.id].status_after == "candidate"
    # No [attestation] table at all: the same.
    assert complete(make_engine()).graduation == BLOCKED


@pytest.mark.req("engram.memory.m4-scope")
def test_m4_evidence_is_scoped_to_the_seat_that_owns_the_ring(
    make_engine: Callable[..., MemoryEngine],
) -> None:
    owner = make_engine()
    m = record(owner, "my seat's note", "fact").memory
    assert owner.spec.seat.seat_id == m.ring_id
    visitor_toml = (
        manifest_text()
        .replace(
            'ring_id = "seat:engram-implementer"\naccess = "read_write"',
            'ring_id = "seat:engram-implementer"\naccess = "read_only"',
        )
        .replace('seat_id = "seat:engram-implementer"', 'seat_id = "seat:visitor-implementer"')
    )
    visitor = open_engine(owner.store, parse_manifest(visitor_toml, "v.toml"), FixedClock())
    with pytest.raises(Forbidden, match="M4 evidence is scoped"):
        outcome(visitor, m.id, "tests_pass", "v1")
    assert outcome(owner, m.id, "tests_pass", "o1").alpha == 2.0


@pytest.mark.req("engram.memory.reverify-fraction")
def test_reverify_fraction_tags_a_share_of_first_try_rubric_accepts(
    make_engine: Callable[..., MemoryEngine],
    attestor: tuple[Path, str],
) -> None:
    engine = make_engine(ANCHOR)  # reverify_fraction = 0.2
    tagged = 0
    for i in range(200):
        m = record(engine, f"rubric subject {i}", "fact").memory
        tagged += outcome(engine, m.id, "rubric_accept", "first").reverify
        assert not outcome(engine, m.id, "rubric_accept", "second").reverify  # not a first try
    assert 20 <= tagged <= 60  # about 20 % of 200, deterministically
    assert status(engine).attestation["reverify_tagged"] == tagged


@pytest.mark.req("engram.memory.outcome-attested-cli-only")
def test_the_mcp_channel_refuses_attested_signals_before_looking_up_the_memory(
    engine: MemoryEngine,
) -> None:
    # Not "not found": the refusal must not depend on (or reveal) which memory ids exist.
    with pytest.raises(Forbidden, match="refused over MCP"):
        outcome(engine, "mem:" + "0" * 64, "sealed_test_pass", "d", channel="mcp")


@pytest.mark.req("engram.memory.attestation-refuses-forged")
def test_a_signature_with_a_tampered_algorithm_name_is_refused_not_a_crash(
    make_engine: Callable[..., MemoryEngine],
    attestor: tuple[Path, str],
    tmp_path: Path,
) -> None:
    engine = make_engine(ANCHOR)
    m = record(engine, "tamper target", "fact").memory
    key, _ = attestor
    good = ssh_sign(
        key,
        attestation_message(m.id, "t1", "sealed_test_pass", 1.0),
        ATTESTATION_NAMESPACE,
        tmp_path,
    )
    lines = good.strip().splitlines()
    blob = base64.b64decode("".join(lines[1:-1]))
    # The second "ssh-ed25519" names the signature's algorithm (the first, the public key's).
    at = blob.index(b"ssh-ed25519", blob.index(b"ssh-ed25519") + 1)
    bad = blob[:at] + b"ssh-ed25518" + blob[at + 11 :]
    armored = "\n".join([lines[0], base64.b64encode(bad).decode(), lines[-1]]) + "\n"
    with pytest.raises(SignatureInvalid, match="malformed signature"):
        outcome(engine, m.id, "sealed_test_pass", "t1", attestation=armored, channel="cli")
    assert get_memory(engine, m.id).alpha == 1.0  # type: ignore[union-attr]


def _seat_with(any_store: Store, tmp_path: Path, **epistemology: float) -> MemoryEngine:
    """An anchored engine on the test's store with some [epistemology] values replaced."""
    text = manifest_text(ANCHOR)
    for key, value in epistemology.items():
        text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
    spec = parse_manifest(text, str(tmp_path / "ote.toml"), tmp_path)
    return open_engine(any_store, spec, FixedClock())


@pytest.mark.req("engram.memory.graduation-rule")
def test_credible_z_sets_how_sure_the_lower_bound_must_be(
    any_store: Store, attestor: tuple[Path, str], tmp_path: Path
) -> None:
    strict = _seat_with(any_store, tmp_path)  # credible_z = 1.96
    loose = _seat_with(any_store, tmp_path, credible_z=0.5)
    m = record(strict, "eight sealed passes", "invariant").memory
    key, _ = attestor
    _graduate_ready(strict, m.id, key, tmp_path, 8)
    # Beta(9, 1) for both posteriors: lcb 0.72 at z = 1.96, 0.85 at z = 0.5 (threshold 0.78).
    assert complete(strict, m.id, apply=False).verdicts[0].status_after == "candidate"
    verdict = complete(loose, m.id).verdicts[0]
    assert verdict.strong_lcb == pytest.approx(lower_bound(9, 1, 0.5))
    assert verdict.status_after == "graduated"


@pytest.mark.req("engram.memory.graduation-rule")
def test_a_high_lower_bound_without_graduation_min_samples_does_not_graduate(
    any_store: Store, attestor: tuple[Path, str], tmp_path: Path
) -> None:
    engine = _seat_with(any_store, tmp_path, graduation_min_samples=30.0)
    m = record(engine, "not enough samples yet", "invariant").memory
    key, _ = attestor
    _graduate_ready(engine, m.id, key, tmp_path, 22)
    verdict = complete(engine, m.id).verdicts[0]
    assert verdict.strong_lcb >= 0.78
    assert verdict.full_lcb >= 0.78
    assert verdict.strong_samples == verdict.full_samples == 22
    assert verdict.status_after == "candidate"
    assert "sample minimum" in verdict.reason


@pytest.mark.req("engram.memory.graduation-rule")
def test_attested_passes_do_not_graduate_a_memory_whose_full_posterior_fails(
    make_engine: Callable[..., MemoryEngine], attestor: tuple[Path, str], tmp_path: Path
) -> None:
    engine = make_engine(ANCHOR)
    m = record(engine, "sealed green, gates red", "invariant").memory
    key, _ = attestor
    _graduate_ready(engine, m.id, key, tmp_path, 22)
    for i in range(40):
        outcome(engine, m.id, "tests_fail", f"red-{i}")
    verdict = complete(engine, m.id).verdicts[0]
    assert verdict.strong_lcb >= 0.78  # B_strong alone would graduate
    assert verdict.full_lcb < 0.78
    assert verdict.status_after == "candidate"


@pytest.mark.req("engram.memory.graduation-rule")
def test_an_anchored_complete_demotes_a_graduate_that_no_longer_meets_the_rule(
    make_engine: Callable[..., MemoryEngine], attestor: tuple[Path, str], tmp_path: Path
) -> None:
    engine = make_engine(ANCHOR)
    m = record(engine, "was right, then wrong", "invariant").memory
    key, _ = attestor
    _graduate_ready(engine, m.id, key, tmp_path, 22)
    assert complete(engine, m.id).verdicts[0].status_after == "graduated"
    for i in range(6):
        attest(engine, key, m.id, f"fail-{i}", "sealed_test_fail", tmp_path)
    verdict = complete(engine, m.id).verdicts[0]
    assert (verdict.status_before, verdict.status_after) == ("graduated", "candidate")
    assert get_memory(engine, m.id).status == "candidate"  # type: ignore[union-attr]
