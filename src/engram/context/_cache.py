"""Token grants and subject state versions held in process, invalidated by the database.

docs/spec/context-provider.md "Token and state cache" (issue 21). Every ``GET /v1/context``
authenticates its token and reads its subject's ``state_version`` (the signed-export cache
key); on PostgreSQL that round trip cost seven times everything else a cached export needs.
:class:`ContextCache` keeps what the query returned, per token hash and per subject, and drops an
entry when the change feed (:meth:`engram.store.Store.subscribe`) reports a change to it: a
revoked token (topic ``token``), any change to a subject's exportable state or its erasure
(topic ``subject``), or :data:`~engram.store.internals.FLUSH`.

Correctness does not rest on notifications arriving: the cache answers only while its
subscription is :meth:`~engram.store.internals.Subscription.fresh` (the feed confirmed, less than
``bound`` seconds ago, that every committed change was delivered); otherwise every request reads
the database. So a token revoked anywhere is refused everywhere within ``bound`` (default 1 s),
whatever happened to NOTIFY. Expiry is not cached as a decision: the stored ``expires_at`` is
compared with the clock on every request, as the uncached path does. Unknown tokens are never
cached (the per-address rate limit bounds what they cost).

A read that races an invalidation must not put back what the invalidation removed: every
invalidation bumps an epoch, and a value read from the database is kept only if the epoch did
not move while it was read.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from engram.context import _repo
from engram.context._model import TokenGrant
from engram.context._rows import TokenStateRow
from engram.store import Store
from engram.store.internals import FLUSH, Change

DEFAULT_MAX_ENTRIES = 100_000


@dataclass(frozen=True)
class CachedToken:
    """A token row as authentication needs it (never the raw token)."""

    grant: TokenGrant
    revoked: bool


class ContextCache:
    """One worker's in-memory view of token grants and subject state versions."""

    def __init__(
        self, store: Store, *, bound: float = 1.0, max_entries: int = DEFAULT_MAX_ENTRIES
    ) -> None:
        self._max_entries = max_entries
        self._lock = threading.Lock()
        self._tokens: OrderedDict[str, CachedToken] = OrderedDict()
        self._versions: dict[str, int | None] = {}
        self._epoch = 0
        self.bound = bound
        self.hits = 0
        self.misses = 0
        self._subscription = store.subscribe(self._changed, bound)

    def close(self) -> None:
        self._subscription.close()

    # -- invalidation (the change feed's thread, or the committing thread) -------------------

    def _changed(self, change: Change) -> None:
        with self._lock:
            self._epoch += 1
            if change.topic == _repo.TOKEN_TOPIC:
                self._tokens.pop(change.key, None)
            elif change.topic == _repo.SUBJECT_TOPIC:
                self._versions.pop(change.key, None)
            elif change.topic == FLUSH:
                self._tokens.clear()
                self._versions.clear()

    # -- reading -----------------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self._epoch

    def revalidate(self) -> bool:
        """Poll the change feed now (one poll for all who wait) if the cache is stale; True when
        it may answer again. Blocking: call it off the event loop."""
        return self._subscription.fresh() or self._subscription.refresh()

    def lookup(self, token_hash: str) -> tuple[CachedToken, int | None] | None:
        """The cached token and its subject's version, or None (ask the database)."""
        if not self._subscription.fresh():
            return None
        token = self._tokens.get(token_hash)
        if token is None:
            self.misses += 1
            return None
        subject = token.grant.subject_id
        if subject not in self._versions:
            self.misses += 1
            return None
        self.hits += 1
        return token, self._versions[subject]

    def remember(self, token_hash: str, row: TokenStateRow, epoch: int, grant: TokenGrant) -> None:
        """Keep what :func:`engram.context._repo.token_and_state` returned at ``epoch``."""
        version = row["state_version"]
        with self._lock:
            if epoch != self._epoch or not self._subscription.fresh():
                return  # something changed while it was read: do not keep a stale value
            self._tokens[token_hash] = CachedToken(grant, row["revoked_at"] is not None)
            self._tokens.move_to_end(token_hash)
            self._versions[grant.subject_id] = None if version is None else int(version)
            while len(self._tokens) > self._max_entries:
                self._tokens.popitem(last=False)
            if len(self._versions) > self._max_entries:
                self._versions.clear()  # rare: re-read on demand


__all__ = ["DEFAULT_MAX_ENTRIES", "CachedToken", "ContextCache"]
