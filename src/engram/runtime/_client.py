"""``EngramClient`` and ``AsyncEngramClient``: one protocol, two ways to wait for the network.

Both drive the same :class:`~engram.runtime._engine.Engine` operations and have the same
method names; only ``await`` tells them apart. Any httpx transport can be passed, so a runtime's
tests can talk to a provider in-process (``httpx.ASGITransport``) or through a recorder.
Redirects are not followed: a provider that moves is reconfigured, not chased with a token.
Spec: Engram v0.1 conformance, runtime requirements of Tiers 1-3; docs/spec/runtime.md.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar, cast

import httpcore
import httpx

from engram import fetch
from engram.core.clock import Clock, SystemClock
from engram.errors import EngramError, RemoteError
from engram.runtime import _wire
from engram.runtime._config import SUPPORTED_VERSIONS, RuntimeConfig
from engram.runtime._engine import Discovery, Engine, ProposedCorrection
from engram.runtime._prompt import with_context
from engram.runtime._verify import PublishedKey
from engram.runtime._view import ContextView
from engram.runtime._wire import Call, Op

T = TypeVar("T")


def _httpx_options(config: RuntimeConfig) -> dict[str, Any]:
    return {
        "base_url": config.base_url,
        "timeout": httpx.Timeout(config.read_timeout, connect=config.connect_timeout),
        "headers": {
            "User-Agent": config.user_agent,
            "Accept": "application/json",
            # Tells the provider which protocol version the answer must be in.
            "Engram-Version": min(SUPPORTED_VERSIONS),
            "Accept-Encoding": fetch.ASKED_ENCODINGS,
        },
        "follow_redirects": False,
    }


def _too_slow(call: Call, config: RuntimeConfig) -> RemoteError:
    return RemoteError(
        f"the provider at {config.base_url} gave no complete answer to {call.describe()} "
        f"within the {config.deadline:g} s deadline"
    )


def _request(
    client: httpx.Client | httpx.AsyncClient, config: RuntimeConfig, call: Call
) -> httpx.Request:
    headers = dict(call.headers)
    if call.authenticated:
        headers["Authorization"] = f"Bearer {config.token}"
    return client.build_request(
        call.method, call.path, params=list(call.params), content=call.body, headers=headers
    )


class _Session:
    """What both clients share: the engine and read-only views of its state."""

    _engine: Engine

    @property
    def config(self) -> RuntimeConfig:
        return self._engine.config

    @property
    def current(self) -> ContextView | None:
        """The verified view if it is still before its ``expires_at``; otherwise None."""
        return self._engine.current()

    @property
    def pending_corrections(self) -> tuple[ProposedCorrection, ...]:
        """Corrections this runtime proposed that no verified export shows decided yet."""
        return tuple(self._engine.pending.values())

    @property
    def last_refresh_error(self) -> EngramError | None:
        """Why the last scheduled refresh fell back to the held view (None if it did not)."""
        return self._engine.last_refresh_error

    @property
    def last_diff_fallback(self) -> str | None:
        """Why the last sync fetched the full export instead of applying a diff (None if the
        diff was applied); the same reason is logged on the ``engram.runtime`` logger."""
        return self._engine.last_diff_fallback


class EngramClient(_Session):
    """A blocking client for one runtime session with one provider.

    ``with EngramClient(config) as engram: prompt = engram.system_prompt()``
    """

    def __init__(
        self,
        config: RuntimeConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._engine = Engine(config, clock or SystemClock())
        self._http = httpx.Client(
            transport=transport or fetch.deadline_transport(), **_httpx_options(config)
        )
        # One operation at a time: the engine's cache and key list are shared state.
        self._lock = threading.RLock()

    def _run(self, op: Op[T]) -> T:
        with self._lock:
            outcome: httpx.Response | RemoteError | None = None
            while True:
                try:
                    if outcome is None:
                        call = next(op)
                    elif isinstance(outcome, RemoteError):
                        call = op.throw(outcome)
                    else:
                        call = op.send(outcome)
                except StopIteration as stop:
                    return cast(T, stop.value)
                outcome = self._send(call)

    def _send(self, call: Call) -> httpx.Response | RemoteError:
        """One exchange under the fetch discipline: a deadline, the answer read through a cap
        and a bounded decoder (engram.fetch), every failure a :class:`RemoteError`."""
        config = self.config
        if call.wait_before:  # a short Retry-After, waited once (issue 32)
            time.sleep(call.wait_before)
        with fetch.deadline(config.deadline):  # outside the try: the handler asks if it passed
            try:
                response = self._http.send(_request(self._http, config, call), stream=True)
                try:
                    what = f"the answer to {call.describe()}"
                    body = b"".join(fetch.iter_capped(response, config.max_answer_bytes, what))
                finally:
                    response.close()
                return fetch.buffered(response, body)
            except fetch.FetchError as e:
                return e
            except (httpx.HTTPError, httpcore.TimeoutException) as e:
                if fetch.deadline_passed():
                    return _too_slow(call, config)
                return _wire.unreachable(call, config.base_url, e)

    def discover(self) -> Discovery:
        """Read ``/.well-known/engram`` (done once on first use anyway)."""
        return self._run(self._engine.discover())

    def keys(self, *, refresh: bool = False) -> Mapping[str, PublishedKey]:
        """The published keys by kid, fetched once and then cached."""
        with self._lock:
            if self._engine.keys is not None and not refresh:
                return dict(self._engine.keys)
            return dict(self._run(self._engine.fetch_keys()))

    def fetch(self, scope: str | None = None) -> ContextView:
        """Fetch and verify one export now (scoped when ``scope`` or the config says so)."""
        return self._run(self._engine.fetch(scope))

    def sync(self) -> ContextView:
        """Apply ``/v1/context/diff`` since the held view (a full fetch if it cannot)."""
        return self._run(self._engine.sync())

    def context(self) -> ContextView:
        """The view to inject now: fetched, refreshed or held as the schedule says."""
        return self._run(self._engine.context())

    def system_prompt(self) -> str:
        """The verified context as system-prompt text."""
        return self.context().system_prompt()

    def messages(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """``messages`` with the verified context as their system message."""
        return with_context(messages, self.context())

    def propose_correction(
        self, belief_id: str, new_value: str, reason: str = ""
    ) -> ProposedCorrection:
        """Propose a correction; it stays pending until the subject confirms it."""
        return self._run(self._engine.propose_correction(belief_id, new_value, reason))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class AsyncEngramClient(_Session):
    """The asyncio twin of :class:`EngramClient`: the same methods, awaited.

    ``async with AsyncEngramClient(config) as engram: prompt = await engram.system_prompt()``
    """

    def __init__(
        self,
        config: RuntimeConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._engine = Engine(config, clock or SystemClock())
        self._http = httpx.AsyncClient(transport=transport, **_httpx_options(config))
        self._lock = asyncio.Lock()

    async def _run(self, op: Op[T]) -> T:
        async with self._lock:
            outcome: httpx.Response | RemoteError | None = None
            while True:
                try:
                    if outcome is None:
                        call = next(op)
                    elif isinstance(outcome, RemoteError):
                        call = op.throw(outcome)
                    else:
                        call = op.send(outcome)
                except StopIteration as stop:
                    return cast(T, stop.value)
                outcome = await self._send(call)

    async def _send(self, call: Call) -> httpx.Response | RemoteError:
        """:meth:`EngramClient._send`, with the deadline kept by asyncio."""
        config = self.config
        if call.wait_before:  # a short Retry-After, waited once (issue 32)
            await asyncio.sleep(call.wait_before)
        try:
            async with asyncio.timeout(config.deadline):
                response = await self._http.send(_request(self._http, config, call), stream=True)
                try:
                    what = f"the answer to {call.describe()}"
                    body = await fetch.read_capped_async(response, config.max_answer_bytes, what)
                finally:
                    await response.aclose()
                return fetch.buffered(response, body)
        except fetch.FetchError as e:
            return e
        except TimeoutError:
            return _too_slow(call, config)
        except httpx.HTTPError as e:
            return _wire.unreachable(call, config.base_url, e)

    async def discover(self) -> Discovery:
        """Read ``/.well-known/engram`` (done once on first use anyway)."""
        return await self._run(self._engine.discover())

    async def keys(self, *, refresh: bool = False) -> Mapping[str, PublishedKey]:
        """The published keys by kid, fetched once and then cached."""
        if self._engine.keys is not None and not refresh:
            return dict(self._engine.keys)
        return dict(await self._run(self._engine.fetch_keys()))

    async def fetch(self, scope: str | None = None) -> ContextView:
        """Fetch and verify one export now (scoped when ``scope`` or the config says so)."""
        return await self._run(self._engine.fetch(scope))

    async def sync(self) -> ContextView:
        """Apply ``/v1/context/diff`` since the held view (a full fetch if it cannot)."""
        return await self._run(self._engine.sync())

    async def context(self) -> ContextView:
        """The view to inject now: fetched, refreshed or held as the schedule says."""
        return await self._run(self._engine.context())

    async def system_prompt(self) -> str:
        """The verified context as system-prompt text."""
        return (await self.context()).system_prompt()

    async def messages(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """``messages`` with the verified context as their system message."""
        return with_context(messages, await self.context())

    async def propose_correction(
        self, belief_id: str, new_value: str, reason: str = ""
    ) -> ProposedCorrection:
        """Propose a correction; it stays pending until the subject confirms it."""
        return await self._run(self._engine.propose_correction(belief_id, new_value, reason))

    async def close(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


__all__ = ["AsyncEngramClient", "EngramClient"]
