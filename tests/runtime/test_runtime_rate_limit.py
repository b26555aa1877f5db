"""A fetch answered 429 with a short ``Retry-After`` is asked again once (issue 32, point 5;
docs/spec/runtime.md "Rate limits"): a burst limiter does not surface as an error, a second 429
or a long wait does, as ``RateLimited`` with the provider's ``retry_after_seconds``."""

from __future__ import annotations

import httpx
import pytest

from engram.errors import RateLimited
from engram.runtime import AsyncEngramClient, EngramClient
from engram.runtime.testing import FakeProvider

LIMITED = {"error": {"code": "rate_limited", "message": "slow down", "status": 429}}


class Limiter:
    """FakeProvider behind a limiter that answers the first ``times`` export requests 429."""

    def __init__(self, times: int, retry_after: str) -> None:
        self.provider = FakeProvider([{"category": "preference", "statement": "Tea."}])
        self.times = times
        self.retry_after = retry_after
        self.exports = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/context":
            self.exports += 1
            if self.exports <= self.times:
                headers = {"Retry-After": self.retry_after}
                return httpx.Response(429, json=LIMITED, headers=headers)
        return self.provider.handle(request)

    def client(self) -> EngramClient:
        return EngramClient(self.provider.config(), transport=httpx.MockTransport(self.handle))

    def async_client(self) -> AsyncEngramClient:
        transport = httpx.MockTransport(self.handle)
        return AsyncEngramClient(self.provider.config(), transport=transport)


@pytest.mark.req("engram.runtime.retry-short-429")
def test_one_short_429_is_waited_out_and_asked_again() -> None:
    limiter = Limiter(times=1, retry_after="0")
    with limiter.client() as engram:
        view = engram.fetch()
    assert limiter.exports == 2
    assert "Tea." in view.system_prompt()


@pytest.mark.req("engram.runtime.retry-short-429")
async def test_the_async_client_retries_the_same_way() -> None:
    limiter = Limiter(times=1, retry_after="0")
    async with limiter.async_client() as engram:
        view = await engram.fetch()
    assert limiter.exports == 2
    assert "Tea." in view.system_prompt()


@pytest.mark.req("engram.runtime.retry-short-429")
@pytest.mark.parametrize(("times", "retry_after", "asked"), [(2, "0", 2), (1, "120", 1)])
def test_a_second_429_or_a_long_wait_is_the_callers(
    times: int, retry_after: str, asked: int
) -> None:
    limiter = Limiter(times=times, retry_after=retry_after)
    with limiter.client() as engram, pytest.raises(RateLimited) as limited:
        engram.fetch()
    assert limiter.exports == asked
    assert limited.value.retry_after_seconds == int(retry_after)
