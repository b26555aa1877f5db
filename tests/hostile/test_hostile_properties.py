"""Property tests: hostile shapes generated at each entry point of docs/spec/limits.md.

Each entry point either accepts what it is given or refuses it with engram's own error (a
``ValueError`` for the LangGraph store, as LangGraph's own stores do); no generated shape may
reach a recursive or super-linear step unbounded (a ``RecursionError``, Python's integer-digit
``ValueError``, a base58 decode of megabytes) or make the fetch decoder hand out more than its
cap. Time and memory bounds are the child-process tests' (test_hostile_documents.py,
tests/oci/test_oci_hostile.py); these look for shapes those cases did not think of.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acx_json_kit import workflow
from engram.core.bounds import MAX_BASE58_CHARS, MAX_DEPTH, check_shape
from engram.errors import EngramError, InvalidRequest
from engram.fetch import FetchError, iter_capped
from engram.integrations.langgraph import EngramStore
from engram.level.internals import base58btc_decode
from engram.policy import HostLimitsError, load_host_limits
from engram.store import open_store
from engram.transfer import check_pam_document
from engram.workflow import lint_workflow


def _refusal(call: Callable[[], object], *errors: type[Exception]) -> str | None:
    """The one-line message ``call`` was refused with (one of ``errors``), None if accepted."""
    try:
        call()
    except errors as e:
        return e.message if isinstance(e, EngramError) else str(e)
    return None


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _nest(leaf: Any, shape: list[str]) -> Any:
    """``leaf`` wrapped in one container per entry of ``shape`` (iteratively: no recursion)."""
    value = leaf
    for kind in shape:
        value = [value] if kind == "list" else {"k": value}
    return value


shapes = st.lists(st.sampled_from(["list", "dict"]), min_size=0, max_size=400)
deep_shapes = st.integers(0, 6000).map(lambda n: ["list", "dict"] * (n // 2))


def _yaml_flow(depth: int, opener: str) -> str:
    closer = "]" if opener == "[" else "}"
    inner = "[" * depth if opener == "[" else "{a: " * depth
    return "tokenSpend: " + inner + "1" + closer * depth + "\n"


yaml_texts = st.one_of(
    st.builds(_yaml_flow, st.integers(0, 3000), st.sampled_from("[{")),
    st.integers(1, 6000).map(lambda n: "tokenSpend:\n  dailyPerAgent: " + "7" * n + "\n"),
    st.integers(1, 200).map(lambda n: "".join(" " * i + f"k{i}:\n" for i in range(n))),
    st.text(alphabet="[]{}:,-'\"#&*!| \n0123456789ax", max_size=3000),
)


@pytest.mark.req("engram.limits.yaml-shape", "engram.limits.number-length")
@SETTINGS
@given(yaml_texts)
def test_host_limits_yaml_is_read_or_refused_never_crashes(text: str) -> None:
    refused = _refusal(lambda: load_host_limits(text.encode("utf-8")), HostLimitsError)
    assert refused is None or "\n" not in refused


def _condition(shape: list[str]) -> dict[str, Any]:
    condition: dict[str, Any] = {"always": True}
    for kind in shape:
        condition = {"not": condition} if kind == "list" else {"all": [condition]}
    return condition


@pytest.mark.req("engram.limits.document-depth")
@SETTINGS
@given(shapes)
def test_a_workflow_condition_of_any_depth_is_linted_or_refused(shape: list[str]) -> None:
    document = workflow()
    document["edges"][3]["when"] = _condition(shape)
    refused = _refusal(lambda: lint_workflow(document), InvalidRequest)
    # The condition sits 3 levels down (edges, an edge, when); "all" adds a list level.
    depth = 3 + sum(2 if kind == "dict" else 1 for kind in shape)
    assert (refused is not None) == (depth >= MAX_DEPTH), (depth, refused)
    assert refused is None or "nests deeper than" in refused


@pytest.fixture(scope="module")
def store() -> EngramStore:
    langgraph_store = EngramStore(open_store("memory://"))
    langgraph_store.put(("ns",), "k", {"a": 1})
    return langgraph_store


@pytest.mark.req("engram.limits.document-depth", "engram.limits.document-elements")
@SETTINGS
@given(deep_shapes, st.integers(0, 3))
def test_a_langgraph_filter_of_any_depth_is_matched_or_refused(
    store: EngramStore, shape: list[str], width: int
) -> None:
    wanted = {"a": _nest([1] * width, shape)}
    refused = _refusal(lambda: store.search(("ns",), filter=wanted), ValueError)
    # The filter's value sits one level down ({"a": ...}); the limit counts from its top.
    depth = 1 + len(shape) + (1 if width else 0)
    assert (refused is not None) == (depth > MAX_DEPTH), (depth, refused)
    assert refused is None or "nests deeper than" in refused


@pytest.mark.req("engram.limits.base58-length")
@SETTINGS
@given(
    st.integers(1, 300_000),
    st.sampled_from("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"),
)
def test_a_base58_value_of_any_length_is_decoded_or_refused_by_length(
    length: int, char: str
) -> None:
    text = "z" + char * length
    if len(text) > MAX_BASE58_CHARS:
        with pytest.raises(InvalidRequest, match="longer than"):
            base58btc_decode(text)
    else:
        assert isinstance(base58btc_decode(text), bytes)


memories = st.fixed_dictionaries(
    {
        "id": st.integers(0, 2000).map(lambda n: "i" * n),
        "content": st.integers(0, 200_000).map(lambda n: "c" * n),
    }
)


@pytest.mark.req("engram.limits.pam-caps")
@SETTINGS
@given(st.lists(memories, max_size=5), st.sampled_from([0, 50_001]))
def test_a_pam_document_over_a_cap_is_refused_before_its_schema(
    listed: list[dict[str, Any]], padding: int
) -> None:
    document: dict[str, Any] = {
        "schema": "portable-ai-memory",
        "schema_version": "1.0",
        "memories": listed + [{"id": "p"}] * padding,
    }
    over = padding > 0 or any(len(m["id"]) > 256 or len(m["content"]) > 100_000 for m in listed)
    with pytest.raises(EngramError) as refused:
        check_pam_document(document)  # never valid: no owner; the question is which error
    assert ("longer than" in refused.value.message or "more than" in refused.value.message) == over


@pytest.mark.req("engram.limits.document-elements", "engram.limits.number-length")
@SETTINGS
@given(st.integers(0, 3000), st.integers(0, 3000))
def test_check_shape_counts_values_and_bounds_integers_without_recursing(
    items: int, digits: int
) -> None:
    value = {"list": list(range(items)), "n": 10**digits}
    refused = _refusal(lambda: check_shape(value, "v", max_elements=2000), InvalidRequest)
    assert (refused is not None) == (items + 4 > 2000 or digits > 64), refused


class _Blocks(httpx.SyncByteStream):
    """A body arriving in blocks, as a socket delivers it (a ByteStream httpx would read whole)."""

    def __init__(self, body: bytes, block: int) -> None:
        self._body, self._block = body, block

    def __iter__(self) -> Iterator[bytes]:
        for start in range(0, len(self._body), self._block):
            yield self._body[start : start + self._block]


@pytest.mark.req("engram.limits.fetch-encoding", "engram.limits.fetch-body-cap")
@SETTINGS
@given(st.binary(max_size=4000), st.integers(1, 5000), st.integers(1, 700), st.booleans())
def test_a_gzip_body_is_never_inflated_past_its_cap(
    data: bytes, inflated: int, block: int, valid: bool
) -> None:
    body = zlib.compress(b" " * inflated, wbits=31) if valid else data
    headers = {"Content-Encoding": "gzip"}
    response = httpx.Response(200, headers=headers, stream=_Blocks(body, block))
    handed: list[int] = []
    limit = 1000

    def run() -> None:
        for out in iter_capped(response, limit, "a body"):
            handed.append(len(out))

    refused = _refusal(run, FetchError)
    assert sum(handed) <= limit
    assert refused is None or "\n" not in refused
    if valid:
        assert (refused is None) == (inflated <= limit), refused
        assert sum(handed) == min(inflated, limit) or refused is not None
