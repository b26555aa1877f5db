"""Signing exports and diffs, with the signed-export cache (Engram v0.1, Tier 3).

``signature`` is base64url Ed25519 over the RFC 8785 bytes of the document without
``signature`` (:func:`engram.core.signing.sign_document`), ``kid`` names the active key of
:class:`engram.store.keys.KeyStore`, and every signature is recorded with ``note_signed`` before it
is handed out so a later-retired key stays published until what it signed has expired.

Each document is canonicalised once: every top-level member's value is serialised once
(:func:`signed_bytes`), the signed bytes are those members in RFC 8785 order without
``signature``, and the response body is the same member bytes with ``signature`` spliced in at
its sorted place, so both are exactly ``canonicalize`` of the unsigned and the signed document.
The signing key is fetched once per document and passed through.

A signed export is a pure function of (subject, scope, ``state_version``) and the signing
instant, so each worker caches the response bytes per (subject, scope, state_version) and serves
them until less than ``export_refresh_margin`` of their life is left
(``docs/spec/context-export.md``).
Any change to the subject bumps ``state_version`` in the store, so no worker serves stale content.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from engram.context import Issuer, build_export
from engram.context.internals import Scope, build_diff, state_version
from engram.core.canonical import JsonObject, canonicalize
from engram.core.clock import Clock
from engram.core.encoding import b64url_encode
from engram.core.keyring import KeyInfo
from engram.core.keys import PrivateKey
from engram.core.signing import SIGNATURE_FIELD
from engram.provider._config import ProviderConfig
from engram.store import Store
from engram.store.internals import FLUSH, Change
from engram.store.keys import KEYS_TOPIC, KeyStore

# How long a worker trusts its in-memory copy of "the active key" before asking the store again;
# a rotation recorded in the change feed drops it at once.
_ACTIVE_KEY_RECHECK = timedelta(seconds=60)


def _utf16(key: str) -> bytes:
    # RFC 8785 section 3.2.3 orders members by their UTF-16 code units; big-endian UTF-16
    # bytes compare in exactly that order.
    return key.encode("utf-16-be")


def signed_bytes(document: JsonObject, key: PrivateKey) -> bytes:
    """``canonicalize(sign_document(document, key))``, canonicalising each member once.

    The signature is Ed25519 over the RFC 8785 bytes of ``document`` without ``signature``
    (Engram v0.1 export envelope); those bytes are assembled from the canonical bytes of each
    member, and the body reuses them with the signature member inserted in sorted order.
    """
    members = {
        name: canonicalize(name) + b":" + canonicalize(value)
        for name, value in document.items()
        if name != SIGNATURE_FIELD
    }
    order = sorted(members, key=_utf16)
    unsigned = b"{" + b",".join(members[name] for name in order) + b"}"
    signature = b64url_encode(key.sign(unsigned))
    members[SIGNATURE_FIELD] = canonicalize(SIGNATURE_FIELD) + b":" + canonicalize(signature)
    return b"{" + b",".join(members[name] for name in sorted(members, key=_utf16)) + b"}"


@dataclass(frozen=True)
class SignedExport:
    """A signed export's response bytes, and the same bytes gzip-compressed once when signed
    (about 7x smaller for 200 beliefs) for clients that send ``Accept-Encoding: gzip``."""

    body: bytes
    gzipped: bytes


@dataclass(frozen=True)
class _Cached:
    export: SignedExport
    refresh_at: datetime  # expires_at - export_refresh_margin: re-sign from this instant on


class ExportSigner:
    """Builds, signs and caches export documents for one provider worker."""

    def __init__(self, store: Store, clock: Clock, config: ProviderConfig) -> None:
        self._store = store
        self._clock = clock
        self._config = config
        self.keys = KeyStore(store)
        self._issuer = Issuer(config.issuer_name, config.base_url)
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, str, int], _Cached] = OrderedDict()
        self._active: tuple[KeyInfo, PrivateKey, datetime] | None = None
        # Told (kind, seconds) after each document is built and signed (GET /metrics).
        self.on_signed: Callable[[str, float], None] | None = None
        # A rotation or retirement anywhere drops the held active key at once (change feed).
        self._subscription = store.subscribe(self._changed, config.change_bound.total_seconds())

    def _changed(self, change: Change) -> None:
        if change.topic in (KEYS_TOPIC, FLUSH):
            with self._lock:
                self._active = None

    def active_key(self) -> tuple[KeyInfo, PrivateKey]:
        """The key to sign with now (created or rotated by the KeyStore when needed)."""
        now = self._clock.now()
        with self._lock:
            held = self._active
        if held is not None and now < held[2] and held[0].can_sign(now):
            return held[0], held[1]
        info, key = self.keys.ensure_active(
            now,
            self._config.key_lifetime,
            renew_before=self._config.export_ttl,
            lead=self._config.key_publish_lead,
        )
        with self._lock:
            self._active = (info, key, now + _ACTIVE_KEY_RECHECK)
        return info, key

    def _sign(
        self, document: JsonObject, info: KeyInfo, key: PrivateKey, expires_at: datetime
    ) -> bytes:
        """The response bytes of ``document`` signed with ``key`` (whose kid it names); the
        key's publication window is extended before the bytes are handed out."""
        body = signed_bytes(document, key)
        self.keys.note_signed(info.kid, expires_at)
        return body

    def cached(self, subject_id: str, scope: Scope, version: int) -> SignedExport | None:
        """The cached signed export for this state, if it still has enough life left."""
        key = (subject_id, scope.name, version)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)  # least recently used is dropped first
        if hit is not None and self._clock.now() < hit.refresh_at:
            return hit.export
        return None

    def export(self, subject_id: str, scope: Scope, version: int | None = None) -> SignedExport:
        """The signed export as response bytes (from the cache when it can be);
        UserNotFound if the subject has no record."""
        if version is None:
            version = state_version(self._store, subject_id)
        hit = self.cached(subject_id, scope, version)
        if hit is not None:
            return hit
        started = time.perf_counter()
        now = self._clock.now()
        cache_key = (subject_id, scope.name, version)
        info, key = self.active_key()
        expires_at = now + self._config.export_ttl
        document = build_export(
            self._store,
            subject_id,
            scope,
            self._issuer,
            now,
            expires_at,
            info.kid,
            self._config.injection_budget,
        )
        body = self._sign(document, info, key, expires_at)
        # mtime=0: the same signed bytes always compress to the same gzip bytes.
        signed = SignedExport(body, gzip.compress(body, compresslevel=6, mtime=0))
        if self.on_signed is not None:
            self.on_signed("export", time.perf_counter() - started)
        refresh_at = expires_at - self._config.export_refresh_margin
        with self._lock:
            self._cache[cache_key] = _Cached(signed, refresh_at)
            self._cache.move_to_end(cache_key)
            while len(self._cache) > self._config.export_cache_entries:
                self._cache.popitem(last=False)
        return signed

    def diff(self, subject_id: str, scope: Scope, since: datetime) -> bytes:
        """The signed diff since ``since`` (not cached: it depends on ``since``)."""
        started = time.perf_counter()
        info, key = self.active_key()
        now = self._clock.now()
        expires_at = now + self._config.export_ttl
        document = build_diff(
            self._store, subject_id, scope, since, self._issuer, now, expires_at, info.kid
        )
        body = self._sign(document, info, key, expires_at)
        if self.on_signed is not None:
            self.on_signed("diff", time.perf_counter() - started)
        return body

    def published_keys(self) -> list[JsonObject]:
        """The ``keys`` list of ``/.well-known/engram-keys`` (active key first created if none)."""
        self.active_key()
        now = self._clock.now()
        return [{**k.to_wire(now)} for k in self.keys.published(now)]


__all__ = ["ExportSigner", "SignedExport", "signed_bytes"]
