"""The export path canonicalises once and reads beliefs straight from their rows
(docs/spec/context-export.md "Signing"): its bytes are exactly what the general functions give.

``signed_bytes`` assembles the signed body from each member's RFC 8785 bytes; it must equal
``canonicalize(sign_document(...))`` for every document, including member names whose UTF-16
order differs from their code-point order. The row-based export must equal the export built
from :class:`Belief` objects (beliefs, their order and the injection text) in every scope.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provider_harness import Provider

from engram.context import Issuer, add_belief, build_export, delete_belief, list_beliefs
from engram.context.internals import SCOPES, render_injection
from engram.core.canonical import canonicalize, parse_strict
from engram.core.keys import PrivateKey
from engram.core.signing import sign_document, verify_document
from engram.provider.internals import signed_bytes


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


KEY = PrivateKey.generate()
# Names around the UTF-16 / code-point disagreement: U+E000..U+FFFF sort after astral
# characters in UTF-16 (surrogates are 0xD800..) but before them by code point.
NAMES = st.text(
    alphabet=st.sampled_from(["a", "s", "z", "é", "\ue000", "\uffee", "😀", "𝄞"]), max_size=4
) | st.sampled_from(["signature", "scope", "subject", "sig"])
SCALARS = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=8)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAMES, inner, max_size=3),
    max_leaves=12,
)


@pytest.mark.req("engram.provider.signed-bytes-canonical")
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(NAMES, VALUES, max_size=8))
def test_signed_bytes_equal_the_canonical_signed_document(document: dict[str, Any]) -> None:
    expected = canonicalize(sign_document(document, KEY))
    got = signed_bytes(document, KEY)
    assert got == expected
    verify_document(_parsed(got), KEY.public_key())


@pytest.mark.req("engram.provider.signed-bytes-canonical", "engram.provider.injection-format")
@pytest.mark.parametrize("scope", sorted(SCOPES))
def test_the_export_read_from_rows_equals_the_one_built_from_beliefs(
    provider: Provider, scope: str
) -> None:
    subject = provider.demo.subject.id
    store, clock = provider.store, provider.clock
    extra = add_belief(store, clock, subject, "health", "Runs twice a week.", 0.5)
    delete_belief(store, clock, subject, provider.demo.beliefs[0].id)
    add_belief(store, clock, subject, "goal", 'Learns Rust; "quotes" and \\ too ✓', 0.95)
    assert extra.id
    now = clock.now()
    export = build_export(
        store, subject, SCOPES[scope], Issuer("t", "https://t.test"), now, now.replace(hour=23), "k"
    )
    beliefs = [b for b in list_beliefs(store, subject) if SCOPES[scope].admits(b.category)]
    assert export["beliefs"] == [b.to_wire() for b in beliefs]
    assert export["system_prompt_injection"] == render_injection(
        "Ada Example", "Europe/London", scope, beliefs
    )
