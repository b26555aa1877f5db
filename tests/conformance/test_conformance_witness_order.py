"""witnessSha256 hashes the rows in UTF-16 code-unit order of their ids, not code-point order
(OpenWOP v2 Conformance §"Canonical JSON"; docs/spec/conformance-bundle.md). The expected digest
is computed here from hand-written RFC 8785 bytes, not from engram's own canonicaliser."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from engram.conformance.internals import witness_sha256

# U+FF61 is below U+1F600 by code point, above it by UTF-16 code unit (0xFF61 > 0xD83D).
HALFWIDTH = {"id": "engram.x.\uff61", "result": "executed-pass"}
EMOJI = {"id": "engram.x.\U0001f600", "result": "executed-fail"}
ASCII = {"id": "engram.x.a", "result": "skipped"}


def _expected(*rows_json: str) -> str:
    return hashlib.sha256(("[" + ",".join(rows_json) + "]").encode("utf-8")).hexdigest()


A = '{"id":"engram.x.a","result":"skipped"}'
E = '{"id":"engram.x.\U0001f600","result":"executed-fail"}'
H = '{"id":"engram.x.\uff61","result":"executed-pass"}'


@pytest.mark.req("engram.conformance.bundle.witness-sha256")
@pytest.mark.parametrize(
    "rows", [[HALFWIDTH, EMOJI, ASCII], [EMOJI, ASCII, HALFWIDTH], [ASCII, HALFWIDTH, EMOJI]]
)
def test_witness_sha256_sorts_rows_by_utf16_code_units_whatever_their_order(
    rows: list[dict[str, Any]],
) -> None:
    assert witness_sha256(rows) == _expected(A, E, H)
    # The code-point order would give another digest: the ordering is what is being witnessed.
    assert witness_sha256(rows) != _expected(A, H, E)
