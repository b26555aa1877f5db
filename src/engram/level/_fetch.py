"""The level verifier's fetcher: a status list or a DID document by URL or path.

A credential names where its status list lives (``statusListCredential``) and a DID document
names its keys; this reads either from an ``http(s)://`` URL, a ``file://`` URL or a path, and
nothing else. Like python-tuf's fetcher (``tuf/ngclient/fetcher.py``), the safety rules live here
in the library, not in each caller:

- **Size.** At most :data:`MAX_FETCH_BYTES` (16 MiB, the status list's own bound) are read, from
  the network through :mod:`engram.fetch`'s byte cap, from a file through
  :func:`engram.core.files.read_regular` (a FIFO or a huge file is refused unread).
- **Deadline.** A remote read runs under :mod:`engram.fetch`'s total deadline
  (docs/spec/limits.md §1).
- **No redirects.** The URL a signed credential names is the URL read: a redirect is refused,
  so an issuer's list cannot be swapped for another host's by the server in front of it.
- **Errors wrapped.** Every failure is one engram error line: :class:`engram.fetch.FetchError`
  for the network, :class:`engram.errors.InvalidRequest` for a file; the status check fails
  closed on either (docs/spec/acx-levels.md §4).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from engram.core.files import read_regular
from engram.errors import RemoteError
from engram.fetch import FetchSettings, fetch_url
from engram.level._status import Fetch

MAX_FETCH_BYTES = 1 << 24
"""Bytes of a status list or DID document read at most (after decoding)."""

_HTTP = re.compile(r"^https?://", re.IGNORECASE)
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


def fetch_location(
    location: str, *, limit: int = MAX_FETCH_BYTES, settings: FetchSettings | None = None
) -> bytes:
    """The bytes at ``location``: an ``http(s)://`` URL (no redirects followed), a ``file://``
    URL or a path; any other scheme is refused unread."""
    if _HTTP.match(location):
        base = settings or FetchSettings.from_environment()
        return fetch_url(location, limit=limit, settings=replace(base, max_redirects=0))
    is_file_url = location.lower().startswith("file://")
    if _SCHEME.match(location) and not is_file_url:
        raise RemoteError(f"{location}: only http(s) and file URLs are dereferenced")
    path = Path(location[len("file://") :] if is_file_url else location)
    return read_regular(path, limit=limit, what="file")


def pinned_fetch(location: str | None) -> Fetch:
    """The fetch a verifier uses: every URL read from ``location`` when the user named one
    (``--status-list FILE``), else from the URL the credential names."""
    if location is None:
        return fetch_location
    pinned = location
    return lambda _url: fetch_location(pinned)


__all__ = ["MAX_FETCH_BYTES", "fetch_location", "pinned_fetch"]
