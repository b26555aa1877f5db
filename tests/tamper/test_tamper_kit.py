"""The mutation kit itself: reproducible, its meaning-preserving edits preserve meaning, and it
catches a verifier that accepts what it should not (a suite that cannot fail is a defect)."""

from __future__ import annotations

import json
import random

import pytest
from json_tamper import (
    TamperReport,
    mutations,
    parse_tree,
    run_tamper,
    structural_mutations,
    write_tree,
)

from engram.core.canonical import canonicalize, parse_strict

DOCUMENT = (
    b'{"beliefs":[{"id":"b1","statement":"Drinks caf\xc3\xa9 at 7/8","confidence":0.9,'
    b'"version":3}],'
    b'"name":"\xf0\x9f\x98\x80 user","ok":true,"none":null,"count":12}'
)


@pytest.mark.req("engram.conformance.tamper-kit")
def test_mutations_are_reproducible_from_their_seed() -> None:
    first = [m.data for m in mutations(DOCUMENT, seed=3, count=200)]
    again = [m.data for m in mutations(DOCUMENT, seed=3, count=200)]
    other = [m.data for m in mutations(DOCUMENT, seed=4, count=200)]
    assert first == again
    assert first != other
    assert len(first) == 200


@pytest.mark.req("engram.conformance.tamper-kit")
def test_writing_the_parsed_tree_back_keeps_the_meaning() -> None:
    assert canonicalize(parse_strict(write_tree(parse_tree(DOCUMENT)))) == canonicalize(
        parse_strict(DOCUMENT)
    )


@pytest.mark.req("engram.conformance.tamper-kit")
@pytest.mark.parametrize("family", ["reorder", "whitespace", "escape", "respell"])
@pytest.mark.req("engram.conformance.tamper-kit")
def test_meaning_preserving_edits_preserve_the_canonical_bytes(family: str) -> None:
    rng = random.Random(1)
    seen = [m for m in structural_mutations(DOCUMENT, rng, 2000) if m.name.startswith(family)]
    assert seen
    for mutation in seen:
        assert canonicalize(parse_strict(mutation.data)) == canonicalize(parse_strict(DOCUMENT))


@pytest.mark.req("engram.conformance.tamper-kit")
def test_a_lax_verifier_is_caught() -> None:
    def lax(data: bytes) -> bytes:
        # Python's json: duplicates last-wins, NaN, no signature at all. Meaning = its reading.
        return repr(json.loads(data)).encode()

    report: TamperReport = run_tamper("lax", DOCUMENT, lax, mutations(DOCUMENT, seed=9, count=600))
    assert report.accepted_different
    with pytest.raises(AssertionError, match="accepted with another meaning"):
        report.assert_sound()


@pytest.mark.req("engram.conformance.tamper-kit")
def test_a_crash_is_told_apart_from_a_refusal() -> None:
    def fragile(data: bytes) -> bytes:
        value = json.loads(data)  # raises a bare ValueError on 5,000-digit integers
        return repr(value["beliefs"][0]).encode()  # KeyError/TypeError on edited structure

    report = run_tamper("fragile", DOCUMENT, fragile, mutations(DOCUMENT, seed=2, count=600))
    assert report.crashed
