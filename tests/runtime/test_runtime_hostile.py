"""The runtime SDK against a hostile provider: the fetch discipline (docs/spec/limits.md §1).

A loopback server (written here, importing nothing of engram) answers ``/.well-known/engram``
with one misbehaviour; the sync and the async client each run in a child process whose peak
RSS is measured, and must end with one :class:`RemoteError` line within the deadline the
config sets, never a traceback.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from hostile_http_kit import hostile_host
from peak_kit import run_python_peak

WALL_BOUND = 10.0
RSS_BOUND_KIB = 300 * 1024

CHILD = """
import asyncio, sys
from engram.errors import EngramError
from engram.runtime import AsyncEngramClient, EngramClient, RuntimeConfig
config = RuntimeConfig(provider_url=sys.argv[1], token="t", deadline=3.0, read_timeout=3.0)
try:
    if sys.argv[2] == "sync":
        with EngramClient(config) as client:
            client.discover()
    else:
        async def main():
            async with AsyncEngramClient(config) as client:
                await client.discover()
        asyncio.run(main())
except EngramError as e:
    print(f"error: {e.code}: {e.message}", file=sys.stderr)
    sys.exit(1)
"""


@pytest.fixture
def provider(request: pytest.FixtureRequest) -> Iterator[str]:
    with hostile_host(request.param) as url:
        yield url


CASES = [
    ("endless", "larger than"),
    ("zstd", "Content-Encoding 'zstd'"),
    ("gzip-bomb", "larger than"),
    ("drip", "within the 3 s deadline"),
]


@pytest.mark.req("engram.limits.fetch-deadline", "engram.limits.fetch-body-cap")
@pytest.mark.parametrize("flavour", ["sync", "async"])
@pytest.mark.parametrize(
    ("provider", "expected"), CASES, indirect=["provider"], ids=[c[0] for c in CASES]
)
def test_a_hostile_provider_gets_one_error_line_in_bounded_time_and_memory(
    provider: str, expected: str, flavour: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    started = time.monotonic()
    done, rss_kib = run_python_peak(CHILD, [provider, flavour], timeout=30, env=env)
    elapsed = time.monotonic() - started
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("error: remote_error: "), lines[0]
    assert expected in lines[0], lines[0]
    print(f"\nruntime {flavour}: {elapsed:.2f} s, {rss_kib // 1024} MiB: {lines[0][:160]}")
    assert elapsed < WALL_BOUND
    assert 0 < rss_kib < RSS_BOUND_KIB, rss_kib
