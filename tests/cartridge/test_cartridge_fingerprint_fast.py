"""§7.3's artifact fingerprint written directly is the fingerprint of the generic canonicaliser.

``artifact_fingerprint`` writes the RFC 8785 bytes of its nine members itself when they are
strings, ``null`` and a safe integer (issue 33: the generic walk was a third of import's record
check). Here the reference is the formula as SPEC §7.3 states it (lboel/acx@85f1358), hashed
over ``engram.core.canonical.canonicalize`` (itself held to ``rfc8785``): the same digest for
every record, and the same refusal (a lone surrogate, an integer beyond 2^53-1) where it has none.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from cartridge_kit import fingerprint_members
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.cartridge.internals import artifact_fingerprint
from engram.core.canonical import canonicalize
from engram.errors import CanonicalJsonError


def _reference(record: dict[str, Any]) -> str:
    members = fingerprint_members(record)
    return hashlib.sha1(canonicalize(members), usedforsecurity=False).hexdigest()[:10]


_TEXT = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["", " Title ", 'quo"te\\', "\x00\x1f\x7f\u2028", "\ue000", "\U0001f600", "ÉCOLE", "\ud800"]
)
_SCALAR = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.sampled_from([0, -0.0, 1.0, 2.5, 1e-7, 2.0**53, 1e21, 2**53 - 1, -(2**53) + 1])
    | _TEXT
)
_RECORD = st.fixed_dictionaries(
    {},
    optional={
        "title": _SCALAR,
        "summary": _SCALAR,
        "sourceType": _SCALAR,
        "repoId": _SCALAR,
        "projectLabel": _SCALAR,
        "timestamp": _SCALAR,
        "impact": _SCALAR,
        "xpAwarded": _SCALAR,
        "tags": st.lists(_SCALAR, max_size=4),
    },
)


def _outcome(fingerprint: Any, record: dict[str, Any]) -> str:
    try:
        return str(fingerprint(record))
    except CanonicalJsonError as e:
        return f"refused: {e.reason}"


@pytest.mark.req("engram.cartridge.memory-partition")
@settings(max_examples=600, deadline=None)
@given(_RECORD)
def test_the_written_fingerprint_is_the_canonical_one(record: dict[str, Any]) -> None:
    assert _outcome(artifact_fingerprint, record) == _outcome(_reference, record)


@pytest.mark.req("engram.cartridge.memory-partition")
@pytest.mark.parametrize(
    ("member", "value", "reason"),
    [("title", "a\ud800b", "lone_surrogate"), ("xpAwarded", 2**53, "integer_out_of_range")],
)
def test_what_cannot_be_canonicalised_is_refused_as_before(
    member: str, value: object, reason: str
) -> None:
    record: dict[str, Any] = {"title": "t", "summary": "s", "tags": ["B", "a"], member: value}
    with pytest.raises(CanonicalJsonError) as refused:
        artifact_fingerprint(record)
    assert refused.value.reason == reason
    assert _outcome(_reference, record) == f"refused: {reason}"
