"""The tamper suite for the signed ACX JSON artifacts (issue 15, "Tests"): workflows, Agent
Graphs, level credentials and their Bitstring Status Lists.

Each artifact is a real signed document (the reference implementation's and engram's own, see
acx_artifacts.py) mutated by the JSON kit: single bytes, duplicate members, reorderings,
whitespace, re-spelled numbers, escapes, changed or removed members, 5,000-digit integers.
The rule is "accepted => the meaning is identical" and nothing crashes. CI runs a bounded count
(each test a few seconds); ``python -m bench tamper`` runs thousands per artifact.

A second family re-signs each structural mutation with the signer's own key, so the signature
holds and the semantic checks behind it are what is exercised: those may accept (the document
is validly signed), but must answer, never crash.
"""

from __future__ import annotations

import random
from base64 import b64decode
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from acx_artifacts import LIST_URL, Level, Refused, issue_level, signed_json_artifacts
from json_tamper import Mutation, TamperReport, mutations, run_tamper, structural_mutations

from engram.core.canonical import canonicalize, parse_strict
from engram.errors import CanonicalJsonError, EngramError
from engram.level import set_entry, status_list_credential
from engram.level.internals import add_proof, envelope_file_name


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


WORKFLOW_MUTATIONS = 300
GRAPH_MUTATIONS = 200
LEVEL_MUTATIONS = 100
STATUS_MUTATIONS = 1500
RESIGNED = 150
TIME_BUDGET = 6.0  # seconds per artifact: a safety stop on a loaded machine

ARTIFACTS = {a.name: a for a in signed_json_artifacts()}


@pytest.fixture(scope="module")
def level(tmp_path_factory: pytest.TempPathFactory) -> Level:
    return issue_level(tmp_path_factory.mktemp("level"))


def _judged(
    name: str,
    original: bytes,
    accept: Callable[[bytes], object],
    candidates: Iterator[Mutation],
    record: Callable[[str, object], None],
) -> TamperReport:
    report = run_tamper(name, original, accept, candidates, time_budget=TIME_BUDGET)
    summary = report.summary()
    print(summary)  # with -s; also kept in the JUnit XML as a property
    record("tamper", summary)
    report.assert_sound()
    assert report.tried >= 40  # the time budget may stop a run early on a loaded machine
    assert report.refused > report.tried // 2
    assert report.accepted_same > 0  # reorderings, whitespace, escapes, re-spelled numbers
    return report


@pytest.mark.req("engram.workflow.tamper-suite")
@pytest.mark.parametrize("name", ["workflow (reference)", "workflow (engram)"])
def test_a_tampered_workflow_is_refused_unless_it_means_the_same(
    name: str, record_property: Callable[[str, object], None]
) -> None:
    artifact = ARTIFACTS[name]
    candidates = mutations(artifact.data, seed=21, count=WORKFLOW_MUTATIONS)
    _judged(name, artifact.data, artifact.accept, candidates, record_property)


@pytest.mark.req("engram.graph.tamper-suite")
@pytest.mark.parametrize("name", ["graph (reference)", "graph (engram)"])
def test_a_tampered_agent_graph_is_refused_unless_it_means_the_same(
    name: str, record_property: Callable[[str, object], None]
) -> None:
    artifact = ARTIFACTS[name]
    candidates = mutations(artifact.data, seed=22, count=GRAPH_MUTATIONS)
    _judged(name, artifact.data, artifact.accept, candidates, record_property)


@pytest.mark.req("engram.level.tamper-suite")
def test_a_tampered_level_credential_is_refused_unless_it_means_the_same(
    level: Level, record_property: Callable[[str, object], None]
) -> None:
    candidates = mutations(level.credential, seed=23, count=LEVEL_MUTATIONS)
    _judged(
        "level credential", level.credential, level.accept_credential, candidates, record_property
    )


@pytest.mark.req("engram.level.tamper-suite", "engram.level.status-fail-closed")
def test_a_tampered_status_list_is_refused_unless_it_means_the_same(
    level: Level, record_property: Callable[[str, object], None]
) -> None:
    candidates = mutations(level.status_list, seed=24, count=STATUS_MUTATIONS)
    _judged("status list", level.status_list, level.accept_status_list, candidates, record_property)


# -- re-signed mutations: the checks behind a valid signature answer, never crash --------------


def resigned(
    original: bytes, sign: Callable[[dict[str, Any]], bytes], seed: int, count: int
) -> Iterator[Mutation]:
    """Structural mutations of the document, each signed again by its own signer."""
    for mutation in structural_mutations(original, random.Random(seed), count):
        try:
            document = parse_strict(mutation.data)
        except CanonicalJsonError:
            continue  # not a document any signer could sign
        if not isinstance(document, dict):
            continue
        try:
            yield Mutation("resigned", mutation.name, sign(document))
        except EngramError:
            continue  # the signer itself refuses it (not canonicalisable, not signable)


def _never_crashes(
    name: str,
    original: bytes,
    accept: Callable[[bytes], object],
    candidates: Iterator[Mutation],
    record: Callable[[str, object], None],
    minimum: int = 20,
) -> None:
    # Accepting another meaning is fine here (each edit carries a valid signature by the
    # signer); what must hold is that every edit is answered: accepted or refused, no crash.
    report = run_tamper(name, original, accept, candidates, time_budget=TIME_BUDGET)
    summary = report.summary()
    print(summary)
    record("tamper", summary)
    assert not report.crashed, summary + "".join(f"\n{m.name}: {w}" for m, w in report.crashed[:5])
    assert report.tried >= minimum  # the time budget may stop it early on a loaded machine
    assert report.refused > 0


@pytest.mark.req("engram.workflow.tamper-suite", "engram.graph.tamper-suite")
@pytest.mark.parametrize("name", ["workflow (engram)", "graph (engram)"])
def test_a_re_signed_workflow_or_graph_edit_is_answered_never_crashed_on(
    name: str, record_property: Callable[[str, object], None]
) -> None:
    artifact = ARTIFACTS[name]
    assert artifact.resign is not None
    candidates = resigned(artifact.data, artifact.resign, 31, RESIGNED)
    _never_crashes(name + " re-signed", artifact.data, artifact.accept, candidates, record_property)


@pytest.mark.req("engram.level.tamper-suite")
def test_a_re_signed_level_or_status_list_edit_is_answered_never_crashed_on(
    level: Level, record_property: Callable[[str, object], None]
) -> None:
    lists = resigned(level.status_list, level.resign, 32, RESIGNED)
    _never_crashes(
        "status list re-signed", level.status_list, level.accept_status_list, lists, record_property
    )
    credentials = resigned(level.credential, level.resign, 33, RESIGNED // 5)
    _never_crashes(
        "level re-signed",
        level.credential,
        level.accept_credential,
        credentials,
        record_property,
        minimum=5,
    )


@pytest.mark.req("engram.level.status-fail-closed", "engram.level.tamper-suite")
def test_a_suspension_entry_never_passes_for_a_clear_revocation_bit(level: Level) -> None:
    """Found by the re-signed family: a credential whose entry is a suspension entry, on a
    suspension list with its bit set, verified with "suspension bit ... is clear"."""
    credential = _parsed(level.credential)
    entry = credential["credentialStatus"]
    entry["statusPurpose"] = "suspension"
    method = level.verifier.verification_method
    suspended = add_proof(
        status_list_credential(list_id=LIST_URL, issuer=level.verifier.did,
                               valid_from="2026-07-01T00:00:00Z", purpose="suspension"),
        level.verifier.key, verification_method=method, created="2026-07-01T00:00:00Z",
    )  # fmt: skip
    suspended = set_entry(suspended, int(entry["statusListIndex"]), level.verifier.key,
                          verification_method=method, created="2026-07-02T00:00:00Z")  # fmt: skip
    original = level.status_list
    try:
        level.status_list = canonicalize(suspended)
        with pytest.raises(Refused, match="not revocation: the level is not revocable"):
            level.accept_credential(level.resign(credential))
    finally:
        level.status_list = original


@pytest.mark.req("engram.level.evidence", "engram.level.tamper-suite")
def test_another_signed_envelope_cannot_stand_in_for_the_one_the_evidence_names(
    level: Level,
) -> None:
    """Found by the re-signed family: evidence entries name their trajectory and envelope by
    digest, but any of the issuer's envelopes with the same outcome replayed to the same rating."""
    credential = _parsed(level.credential)
    links = [envelope_file_name(e["acx:dsseEnvelope"]) or "" for e in credential["evidence"]]
    outcomes = [_outcome(level.envelopes[name]) for name in links]
    # Two trajectories with the same difficulty and result: swapping them keeps the replay.
    first, twin = next(
        (i, j) for i in range(len(links)) for j in range(i + 1, len(links))
        if outcomes[i] == outcomes[j]
    )  # fmt: skip
    swapped = dict(level.envelopes)
    swapped[links[first]], swapped[links[twin]] = swapped[links[twin]], swapped[links[first]]
    original = level.envelopes
    try:
        level.envelopes = swapped
        with pytest.raises(Refused, match="is not the digest of the trajectory"):
            level.accept_credential(level.credential)
        level.envelopes = original
        # Signed by the issuer, an entry whose digest names another trajectory is refused too.
        credential["evidence"][first]["acx:digestMultibase"] = credential["evidence"][twin][
            "acx:digestMultibase"
        ]
        with pytest.raises(Refused, match="acx:digestMultibase is not the digest"):
            level.accept_credential(level.resign(credential))
    finally:
        level.envelopes = original


def _outcome(envelope: bytes) -> tuple[object, object]:
    statement = _parsed(b64decode(_parsed(envelope)["payload"]))
    return statement["predicate"]["difficulty"], statement["predicate"]["passed"]
