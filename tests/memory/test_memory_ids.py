"""Content addresses: ``memory_id`` against the RFC 8785 reference.

``memory_id`` hashes the canonical bytes of ``{kind, ring_id, text}`` as
``engram.core.canonical.canonicalize_row`` writes them without building the object (a bulk
import computes one per memory); these tests hold it to the ``rfc8785`` package, an
implementation independent of ours, on arbitrary strings, including the escapes RFC 8785
spells out.
"""

from __future__ import annotations

import hashlib

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from engram.errors import CanonicalJsonError
from engram.memory import memory_id

# Every code point but lone surrogates (I-JSON refuses those).
_TEXT = st.text(st.characters(codec="utf-8"), max_size=200)


def _reference(ring_id: str, kind: str, text: str) -> str:
    data = rfc8785.dumps({"kind": kind, "ring_id": ring_id, "text": text})
    return "mem:" + hashlib.sha256(data).hexdigest()


@pytest.mark.req("engram.memory.record-content-addressed")
@given(ring_id=_TEXT, kind=_TEXT, text=_TEXT)
def test_memory_id_is_the_rfc8785_address(ring_id: str, kind: str, text: str) -> None:
    assert memory_id(ring_id, kind, text) == _reference(ring_id, kind, text)


@pytest.mark.req("engram.memory.record-content-addressed")
@pytest.mark.parametrize(
    "text",
    [
        'quote " and backslash \\',
        "controls \x00 \x01 \x1f \b \f \n \r \t and \x7f",
        "line separators \u2028 \u2029, non-ASCII \u00e9 \u4e2d \U0001f600",
        "",
    ],
)
def test_memory_id_escapes_like_rfc8785(text: str) -> None:
    assert memory_id("repo:x", "fact", text) == _reference("repo:x", "fact", text)


@pytest.mark.req("engram.memory.record-content-addressed")
def test_a_lone_surrogate_is_refused_as_canonicalize_refuses_it() -> None:
    with pytest.raises(CanonicalJsonError):
        memory_id("repo:x", "fact", "broken \ud800 text")
