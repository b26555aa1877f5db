"""The conformance runner and verifier against a hostile host (docs/spec/limits.md §1).

A loopback server (written here, importing nothing of engram) answers every request endlessly,
in ``zstd``, or one byte every two seconds; the probe's and the verifier's reads of it end in
one :class:`RemoteError` line, bounded by the cap or the deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from engram.conformance import ProviderRunOptions, load_ledger, run_provider
from engram.conformance.internals import read_discovery
from engram.errors import RemoteError
from hostile_http_kit import hostile_host


@pytest.fixture
def host(request: pytest.FixtureRequest) -> Iterator[str]:
    with hostile_host(request.param) as url:
        yield url


@pytest.mark.req("engram.limits.fetch-body-cap", "engram.limits.fetch-encoding")
@pytest.mark.parametrize(
    ("host", "expected"),
    [("endless", "larger than 1048576 bytes"), ("zstd", "Content-Encoding")],
    indirect=["host"],
)
def test_the_verifier_reads_a_discovery_document_through_the_cap(host: str, expected: str) -> None:
    with pytest.raises(RemoteError, match=expected) as refused:
        read_discovery(host)
    assert "\n" not in refused.value.message


@pytest.mark.req("engram.limits.fetch-deadline")
@pytest.mark.parametrize("host", ["drip"], indirect=True)
async def test_the_probe_gives_up_on_a_dripping_provider_at_its_deadline(host: str) -> None:
    options = ProviderRunOptions(host, "eng_token", deadline=2.5)
    started = time.monotonic()
    with pytest.raises(RemoteError, match=r"no complete answer within 2\.5 s"):
        await run_provider(options, load_ledger())
    assert time.monotonic() - started < 10


@pytest.mark.req("engram.limits.fetch-body-cap", "engram.limits.fetch-encoding")
@pytest.mark.parametrize(
    ("host", "expected"),
    [("zstd", "Content-Encoding 'zstd'"), ("endless", "larger than 67108864 bytes")],
    indirect=["host"],
)
async def test_the_probe_reads_answers_through_the_cap(host: str, expected: str) -> None:
    with pytest.raises(RemoteError, match=expected) as refused:
        await run_provider(ProviderRunOptions(host, "eng_token"), load_ledger())
    assert "\n" not in refused.value.message
