"""One discipline for every remote read engram makes on its own behalf (docs/spec/limits.md §1).

A module of its own beside ``engram.store``, not in ``engram.core``: core imports no network
library.

A registry, a token realm, a status-list host or a DID document host is somebody else's server;
what it answers is bounded here, once, for every caller:

- **Deadline.** Every exchange runs under a total deadline (``deadline`` seconds, plus
  ``expected_bytes / min_rate`` for a download whose size is known), checked at every socket
  read and write by a network backend wrapped around httpcore's, so a server that drips one
  header byte every two seconds is cut off at the deadline, not after one per-read timeout per
  byte. Nested :meth:`Fetcher.budget` scopes keep the earlier end (a token round trip inside a
  registry request shares the request's deadline).
- **Bodies.** Every body (answers, error pages, 401 challenges, token answers) is read from the
  raw stream through a byte cap; an error body is read for at most :data:`ERROR_EXCERPT` bytes
  and the connection closed. httpx's own decoding is never used: it inflates each chunk whole
  (a 1 GiB ``zstd`` frame of spaces in one read) and stacks decoders without bound.
- **Encodings.** ``Accept-Encoding: gzip, identity`` is what is asked; an answer in
  ``identity`` or one ``gzip`` layer is decoded here through ``zlib`` with ``max_length``, so the
  cap applies to the inflated bytes; anything else (``zstd``, ``br``, ``gzip, gzip``) is refused
  unread.
- **Redirects.** Followed here, at most ``max_redirects``, each redirect closed without reading
  its body (httpx's own redirect and auth handling reads those bodies whole).
- **Errors.** Every ``httpx.HTTPError``, decoding error and deadline becomes one
  :class:`FetchError` line naming the host and what went wrong.

- **Proxies.** ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` and ``NO_PROXY`` are honoured as
  httpx and curl read them, through the same deadline backend: a proxy that drips, or an origin
  that drips through it, is cut off at the same deadline (httpx's own proxy transports would
  not be). Only ``http://`` and ``https://`` proxies are spoken.

The limits come from :class:`FetchSettings`; ``ENGRAM_FETCH_DEADLINE``,
``ENGRAM_FETCH_READ_TIMEOUT`` and ``ENGRAM_FETCH_MIN_RATE`` override the defaults (an operator on
a slow link; the hostile-registry tests, which need seconds, not minutes).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import httpcore
import httpx

from engram.errors import RemoteError

ERROR_EXCERPT = 16 << 10
"""Bytes of an error answer read for its message; the rest is never read."""
ASKED_ENCODINGS = "gzip, identity"

_DEADLINE: ContextVar[float | None] = ContextVar("engram_fetch_deadline", default=None)


class FetchError(RemoteError):
    """A remote answer was refused: unreachable, too slow, too large, or malformed in transit."""

    code = "remote_error"


@dataclass(frozen=True)
class FetchSettings:
    deadline: float = 120.0
    """Seconds one exchange (request, redirects, auth round trips, body) may take at most."""
    min_rate: float = 256 * 1024
    """Bytes per second a download of known size is given on top of ``deadline``."""
    read_timeout: float = 30.0
    connect_timeout: float = 10.0
    max_redirects: int = 5
    proxies: Mapping[str, str] = field(default_factory=dict, hash=False)
    """Scheme (``http``, ``https``, ``all``) -> proxy URL, as ``urllib.request.getproxies``
    reads them; ``no`` holds the ``NO_PROXY`` list."""

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> FetchSettings:
        source = os.environ if env is None else env
        defaults = cls()
        return cls(
            deadline=_positive(source, "ENGRAM_FETCH_DEADLINE", defaults.deadline),
            min_rate=_positive(source, "ENGRAM_FETCH_MIN_RATE", defaults.min_rate),
            read_timeout=_positive(source, "ENGRAM_FETCH_READ_TIMEOUT", defaults.read_timeout),
            connect_timeout=defaults.connect_timeout,
            max_redirects=defaults.max_redirects,
            proxies=_proxies(source),
        )


def _proxies(source: Mapping[str, str]) -> dict[str, str]:
    """``<scheme>_proxy`` variables as ``urllib.request.getproxies_environment`` reads them
    (lower case wins; ``REQUEST_METHOD`` set means a CGI script, where HTTP_PROXY is a header)."""
    found: dict[str, str] = {}
    for name, value in source.items():
        if value and name.lower().endswith("_proxy") and name.upper() == name:
            found[name[:-6].lower()] = value
    if "REQUEST_METHOD" in source:
        found.pop("http", None)
    for name, value in source.items():
        if name.lower().endswith("_proxy") and name.lower() == name:
            if value:
                found[name[:-6]] = value
            else:
                found.pop(name[:-6], None)
    return found


def _positive(source: Mapping[str, str], name: str, default: float) -> float:
    text = source.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e9:
        raise FetchError(f"${name} must be a positive number of seconds or bytes, not {text!r}")
    return value


# -- the deadline, enforced at every socket operation ----------------------------------------


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        wrapped = self._inner.start_tls(
            ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)
        )
        return _DeadlineStream(wrapped)

    # Any: httpcore types the extra information as Any (a socket, an SSL object, an address).
    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(
            host, port, _left(timeout, httpcore.ConnectTimeout), local_address, socket_options
        )
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_unix_socket(
            path, _left(timeout, httpcore.ConnectTimeout), socket_options
        )
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def deadline_transport(proxy: str | None = None) -> httpx.HTTPTransport:
    """httpx's transport over a connection pool whose sockets honour the current deadline;
    through ``proxy`` (an ``http://`` or ``https://`` URL) when one is given."""
    transport = httpx.HTTPTransport()
    # httpx takes no network backend of its own; httpcore's pool does, so the pool httpx built
    # is replaced by the same pool over the deadline backend (TLS verified as httpx would).
    if proxy is None:
        transport._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(), network_backend=_DeadlineBackend()
        )
        return transport
    try:
        url = httpx.Proxy(proxy if "://" in proxy else f"http://{proxy}")
    except (ValueError, httpx.InvalidURL) as e:
        raise FetchError(f"proxy {_short(proxy, 100)!r} is not a URL ({e})") from e
    if url.url.scheme not in ("http", "https"):
        raise FetchError(
            f"proxy {_short(str(url.url), 100)}: engram speaks only to http:// and https:// proxies"
        )
    transport._pool = httpcore.HTTPProxy(
        proxy_url=httpcore.URL(
            scheme=url.url.raw_scheme,
            host=url.url.raw_host,
            port=url.url.port,
            target=url.url.raw_path,
        ),
        proxy_auth=url.raw_auth,
        proxy_headers=url.headers.raw,
        ssl_context=httpx.create_ssl_context(),
        proxy_ssl_context=url.ssl_context,
        network_backend=_DeadlineBackend(),
    )
    return transport


def _bypassed(url: httpx.URL, no_proxy: str) -> bool:
    """``NO_PROXY`` as curl reads it: ``*``, or a host (with or without a leading dot, an
    optional ``:port``) that is the URL's host or a domain above it."""
    host = url.host.lower()
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry == "*":
            return True
        name, _, port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if port and (not port.isdigit() or int(port) != (url.port or 0)):
            continue
        name = name.lstrip(".")
        if name and (host == name or host.endswith("." + name)):
            return True
    return False


class _ProxyRouting(httpx.BaseTransport):
    """Each request to its proxy (``settings.proxies``, ``NO_PROXY`` honoured) or direct; every
    route over the deadline backend. Proxy transports are made on first use."""

    def __init__(self, proxies: Mapping[str, str]) -> None:
        self._proxies = dict(proxies)
        self._direct = deadline_transport()
        self._through: dict[str, httpx.HTTPTransport] = {}

    def _route(self, url: httpx.URL) -> httpx.HTTPTransport:
        proxy = self._proxies.get(url.scheme) or self._proxies.get("all")
        if not proxy or _bypassed(url, self._proxies.get("no", "")):
            return self._direct
        if proxy not in self._through:
            self._through[proxy] = deadline_transport(proxy)
        return self._through[proxy]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._route(request.url).handle_request(request)

    def close(self) -> None:
        self._direct.close()
        for transport in self._through.values():
            transport.close()


def routed_transport(settings: FetchSettings) -> httpx.BaseTransport:
    """The deadline transport, through the proxies ``settings`` name (if any)."""
    if not any(scheme in settings.proxies for scheme in ("http", "https", "all")):
        return deadline_transport()
    return _ProxyRouting(settings.proxies)


# -- bounded decoding ---------------------------------------------------------------------------


class _Identity:
    def feed(self, raw: bytes, room: int) -> bytes:  # noqa: ARG002 - raw blocks are capped upstream
        return raw

    def finish(self) -> None:
        pass


class _Gzip:
    """One gzip member, inflated at most ``room`` bytes at a time."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def feed(self, raw: bytes, room: int) -> bytes:
        if self._inflate.eof:
            if raw:
                raise FetchError(f"{self._what}: data after the end of its gzip body")
            return b""
        try:
            out = self._inflate.decompress(raw, max(room, 1))
        except zlib.error as e:
            raise FetchError(f"{self._what} says gzip but is not gzip ({e})") from e
        if self._inflate.unused_data:
            raise FetchError(f"{self._what}: data after the end of its gzip body")
        return out

    def finish(self) -> None:
        if not self._inflate.eof:
            raise FetchError(f"{self._what}: its gzip body ends early")


def _decoder(response: httpx.Response, what: str) -> _Identity | _Gzip:
    codings = [
        c.strip().lower()
        for c in response.headers.get_list("content-encoding", split_commas=True)
        if c.strip().lower() not in ("", "identity")
    ]
    if not codings:
        return _Identity()
    if codings == ["gzip"] or codings == ["x-gzip"]:
        return _Gzip(what)
    named = ", ".join(codings)[:80]
    raise FetchError(f"{what} came as Content-Encoding {named!r}; engram asked for gzip or none")


# -- the fetcher ---------------------------------------------------------------------------------


class Fetcher:
    """An httpx client for one remote party, with the discipline above on every exchange.

    ``party`` names the remote in every error line (``registry.example``, a URL's host).
    ``transport`` replaces the deadline transport (tests over an in-process app); the deadline
    is then still checked between body blocks.
    """

    def __init__(
        self,
        party: str,
        *,
        base_url: str = "",
        headers: Mapping[str, str] | None = None,
        settings: FetchSettings | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.party = party
        self.settings = settings or FetchSettings.from_environment()
        self._client = httpx.Client(
            base_url=base_url,
            headers={**(headers or {}), "Accept-Encoding": ASKED_ENCODINGS},
            timeout=httpx.Timeout(
                self.settings.read_timeout, connect=self.settings.connect_timeout
            ),
            follow_redirects=False,
            transport=transport or routed_transport(self.settings),
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextlib.contextmanager
    def budget(self, expected_bytes: int = 0) -> Iterator[None]:
        """Everything inside ends by the deadline (the earlier of this one and any outer one)."""
        seconds = self.settings.deadline + max(expected_bytes, 0) / self.settings.min_rate
        with deadline(seconds):
            try:
                yield
            except (httpx.HTTPError, httpx.InvalidURL) as e:
                raise self._wrap(e) from e

    # Any: the keyword arguments go straight to httpx.Client.build_request (params, content,
    # headers), whose many options are typed there.
    @contextlib.contextmanager
    def stream(
        self, method: str, url: str | httpx.URL, *, expected_bytes: int = 0, **kwargs: Any
    ) -> Iterator[httpx.Response]:
        """The answer to one request, its redirects followed (bodies unread), body not read yet.

        Reading it with :meth:`read`, :meth:`iter_body` or :meth:`excerpt` inside the ``with``
        keeps the read under the same deadline; the connection is closed on leaving."""
        with self.budget(expected_bytes):
            request = self._client.build_request(method, url, **kwargs)
            for _ in range(self.settings.max_redirects + 1):
                response = self._client.send(request, stream=True)
                following = response.next_request if response.has_redirect_location else None
                if following is None:
                    try:
                        yield response
                    finally:
                        response.close()
                    return
                response.close()  # a redirect's body is never read
                if self.settings.max_redirects == 0:
                    raise FetchError(
                        f"{self.party}: answered with a redirect (to "
                        f"{_short(str(following.url))}), which is not followed here"
                    )
                request = following
            raise FetchError(
                f"{self.party}: more than {self.settings.max_redirects} redirects "
                f"(last to {_short(str(request.url))})"
            )

    def iter_body(self, response: httpx.Response, limit: int, what: str) -> Iterator[bytes]:
        """The decoded body in blocks; :class:`FetchError` once it passes ``limit`` bytes."""
        try:
            yield from iter_capped(response, limit, what)
        except (httpx.HTTPError, httpcore.ReadTimeout) as e:
            raise self._wrap(e) from e

    def read(self, response: httpx.Response, limit: int, what: str) -> bytes:
        return b"".join(self.iter_body(response, limit, what))

    def excerpt(self, response: httpx.Response) -> bytes:
        """At most :data:`ERROR_EXCERPT` bytes of an (error) answer, for its message; never
        fails: what cannot be read in time or decoded is simply not quoted."""
        out = bytearray()
        with contextlib.suppress(FetchError):
            for block in self.iter_body(response, 1 << 62, "an error answer"):
                out += block
                if len(out) >= ERROR_EXCERPT:
                    break
        return bytes(out[:ERROR_EXCERPT])

    def _wrap(self, error: Exception) -> FetchError:
        if deadline_passed():
            return FetchError(
                f"{self.party}: no complete answer within the deadline "
                f"({self.settings.deadline:g} s per request, $ENGRAM_FETCH_DEADLINE)"
            )
        detail = _short(str(error)) or type(error).__name__
        if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout):
            return FetchError(f"cannot reach {self.party}: {detail}")
        return FetchError(f"{self.party}: {type(error).__name__}: {detail}")


# -- bounded reading for clients that send their own requests (the runtime SDK) --------------


def iter_capped(response: httpx.Response, limit: int, what: str) -> Iterator[bytes]:
    """``response``'s body (sent with ``stream=True``) decoded in blocks through the cap.

    The raw stream is read as it arrives and the current deadline checked between reads;
    :class:`FetchError` for an encoding engram did not ask for or once ``limit`` is passed."""
    if response.is_stream_consumed:
        yield _whole(response, limit, what)
        return
    decoder = _decoder(response, what)
    total = 0
    for raw in response.iter_raw():
        _left(None, httpcore.ReadTimeout)
        block = decoder.feed(raw, limit - total + 1)
        total += len(block)
        if total > limit:
            raise FetchError(f"{what} is larger than {limit} bytes")
        if block:
            yield block
    decoder.finish()


async def read_capped_async(response: httpx.Response, limit: int, what: str) -> bytes:
    """:func:`iter_capped` for an ``httpx.AsyncClient`` answer, read whole (at most ``limit``)."""
    if response.is_stream_consumed:
        return _whole(response, limit, what)
    decoder = _decoder(response, what)
    out = bytearray()
    async for raw in response.aiter_raw():
        out += decoder.feed(raw, limit - len(out) + 1)
        if len(out) > limit:
            raise FetchError(f"{what} is larger than {limit} bytes")
    decoder.finish()
    return bytes(out)


def _whole(response: httpx.Response, limit: int, what: str) -> bytes:
    # An in-process transport (ASGI, a mock) hands httpx the body whole, already read: there
    # is no stream to bound, only the length to check.
    if len(response.content) > limit:
        raise FetchError(f"{what} is larger than {limit} bytes")
    return response.content


def buffered(response: httpx.Response, body: bytes) -> httpx.Response:
    """A closed streamed answer as an ordinary one holding ``body`` (already decoded)."""
    headers = [
        (k, v)
        for k, v in response.headers.multi_items()
        if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(
        response.status_code, headers=headers, content=body, request=response.request
    )


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Everything inside (on a :func:`deadline_transport`) ends within ``seconds``."""
    end = time.monotonic() + seconds
    outer = _DEADLINE.get()
    token = _DEADLINE.set(end if outer is None else min(outer, end))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def deadline_passed() -> bool:
    end = _DEADLINE.get()
    return end is not None and time.monotonic() >= end - 0.05


def _short(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


MAX_MODEL_ANSWER = 128 << 20
"""Bytes of one answer of a model endpoint (embeddings, rerank, chat) read at most."""


def model_fetcher(url: str, timeout: float, transport: httpx.BaseTransport | None) -> Fetcher:
    """A fetcher for an OpenAI-compatible model endpoint: ``timeout`` seconds in all."""
    settings = FetchSettings(deadline=timeout, read_timeout=timeout)
    return Fetcher(party_of(url), settings=settings, transport=transport)


# Any: a model endpoint's JSON answer, checked field by field by its caller.
def post_json(fetcher: Fetcher, url: str, body: object, limit: int = MAX_MODEL_ANSWER) -> Any:
    """``POST url`` with a JSON body; the answer's JSON, or one :class:`FetchError` line."""
    with fetcher.stream("POST", url, json=body) as response:
        if response.status_code != 200:
            raise FetchError(f"{_short(url)}: HTTP {response.status_code}")
        data = fetcher.read(response, limit, f"{_short(url)}'s answer")
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as e:
        raise FetchError(f"{_short(url)}: the answer is not JSON") from e


def party_of(url: str) -> str:
    """The ``host[:port]`` of ``url`` for messages, without parsing it (it may not parse)."""
    return _short(url.split("/")[2] if "://" in url else url, 100)


def fetch_url(url: str, *, limit: int, settings: FetchSettings | None = None) -> bytes:
    """The body of one ``GET url`` answered ``200``, within the discipline and ``limit``."""
    party = party_of(url)
    with Fetcher(party, settings=settings) as fetcher, fetcher.stream("GET", url) as response:
        if response.status_code != 200:
            raise FetchError(f"{_short(url)}: HTTP {response.status_code}")
        return fetcher.read(response, limit, _short(url))


__all__ = [
    "ASKED_ENCODINGS",
    "ERROR_EXCERPT",
    "MAX_MODEL_ANSWER",
    "FetchError",
    "FetchSettings",
    "Fetcher",
    "buffered",
    "deadline",
    "deadline_passed",
    "deadline_transport",
    "fetch_url",
    "iter_capped",
    "model_fetcher",
    "party_of",
    "post_json",
    "read_capped_async",
    "routed_transport",
]
