"""Bearer tokens: issued once, stored hashed, bound to one subject and a set of permissions.

A raw token is ``eng_`` + 32 random bytes in base64url; only its SHA-256 is stored, which is safe
for a 256-bit random secret (no dictionary to try). Authentication answers ``unauthorized`` for an
unknown or revoked token, ``token_expired`` once ``expires_at`` has passed (Engram v0.1, "Error
Code Reference"); ``docs/spec/context-model.md`` "Tokens" has the permission model.
"""

from __future__ import annotations

import functools
import hashlib
import secrets
from collections.abc import Iterable
from datetime import timedelta

from engram.context import _repo
from engram.context._beliefs import require_schema
from engram.context._cache import ContextCache
from engram.context._model import Permission, TokenGrant, TokenInfo
from engram.core.clock import Clock, parse_instant
from engram.core.encoding import b64url_encode
from engram.errors import Forbidden, InvalidRequest, ResourceNotFound, TokenExpired, Unauthorized
from engram.store import Store

TOKEN_PREFIX = "eng_"  # noqa: S105 - a public prefix, not a secret
MAX_TOKEN_TTL = timedelta(days=366)
DEFAULT_TOKEN_TTL = timedelta(days=30)


def hash_token(raw: str) -> str:
    """The at-rest form of a token (hex SHA-256 of its UTF-8 bytes)."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def parse_permissions(values: Iterable[str]) -> frozenset[Permission]:
    """Permissions from names (``read``, ``correct``, ``confirm``, ``admin``); unknown -> 400."""
    out: set[Permission] = set()
    for value in values:
        name = value.strip()
        if not name:
            continue
        try:
            out.add(Permission(name))
        except ValueError as e:
            known = ", ".join(p.value for p in Permission)
            raise InvalidRequest(f"unknown permission {name!r}: use {known}") from e
    if not out:
        raise InvalidRequest("a token needs at least one permission")
    return frozenset(out)


def issue_token(
    store: Store,
    clock: Clock,
    subject_id: str,
    permissions: Iterable[Permission | str],
    ttl: timedelta = DEFAULT_TOKEN_TTL,
    label: str = "",
) -> str:
    """Create a token for the subject and return it; this is the only time it is visible."""
    perms = parse_permissions(str(p.value if isinstance(p, Permission) else p) for p in permissions)
    if ttl <= timedelta(0) or ttl > MAX_TOKEN_TTL:
        raise InvalidRequest(f"token ttl must be positive and at most {MAX_TOKEN_TTL.days} days")
    raw = TOKEN_PREFIX + b64url_encode(secrets.token_bytes(32))
    now = clock.now()
    info = TokenInfo(
        token_id="tok_" + secrets.token_hex(8),
        subject_id=subject_id,
        permissions=perms,
        created_at=now,
        expires_at=now + ttl,
        revoked_at=None,
        label=label[:100],
    )
    require_schema(store)
    with store.transaction() as tx:
        _repo.require_subject(tx, subject_id)
        _repo.insert_token(tx, hash_token(raw), info)
    return raw


def authenticate_token(store: Store, clock: Clock, raw: str) -> TokenGrant:
    """What ``raw`` may do; Unauthorized if unknown or revoked, TokenExpired if expired.

    Reads one row by primary key (no schema check): the provider calls it on every request.
    """
    return authenticate_token_with_state(store, clock, raw)[0]


def authenticate_token_with_state(
    store: Store, clock: Clock, raw: str, cache: ContextCache | None = None
) -> tuple[TokenGrant, int | None]:
    """:func:`authenticate_token` plus the subject's ``state_version`` (None when the subject
    was erased), read in one query: the provider's hot path for ``GET /v1/context``.

    With a ``cache`` the answer comes from memory while the cache is fresh (no query at all),
    and what the query returns is remembered for the next request.
    """
    token_hash = _plausible_hash(raw)
    if cache is not None:
        hit = cache.lookup(token_hash)
        if hit is None and cache.revalidate():
            # The cache was stale (its poller starved or behind): one poll, shared by every
            # request waiting here, instead of one query each.
            hit = cache.lookup(token_hash)
        if hit is not None:
            token, version = hit
            return _judged(token.grant, token.revoked, clock), version
        epoch = cache.epoch
    with store.read() as tx:
        row = _repo.token_and_state(tx, token_hash)
    if row is None:
        raise Unauthorized("token missing or invalid")
    grant = TokenGrant(
        row["token_id"],
        row["subject_id"],
        _permissions(row["permissions"]),
        _instant(row["expires_at"]),
    )
    if cache is not None:
        cache.remember(token_hash, row, epoch, grant)
    version = row["state_version"]
    return _judged(grant, row["revoked_at"] is not None, clock), (
        None if version is None else int(version)
    )


def authenticate_cached(
    cache: ContextCache, clock: Clock, raw: str
) -> tuple[TokenGrant, int | None] | None:
    """:func:`authenticate_token_with_state` from memory only: None when the cache cannot
    answer (then ask the store). Refusals are raised as usual; nothing here does I/O."""
    hit = cache.lookup(_plausible_hash(raw))
    if hit is None:
        return None
    token, version = hit
    return _judged(token.grant, token.revoked, clock), version


def _plausible_hash(raw: str) -> str:
    if not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        raise Unauthorized("token missing or invalid")
    return hash_token(raw)


def _judged(grant: TokenGrant, revoked: bool, clock: Clock) -> TokenGrant:
    """The grant, or why it cannot be used: revoked is unauthorized, past expiry expired."""
    if revoked:
        raise Unauthorized("token missing or invalid")
    if clock.now() >= grant.expires_at:
        raise TokenExpired("token has expired")
    return grant


def require_permission(grant: TokenGrant, permission: Permission) -> None:
    """The one token rule: Forbidden unless ``grant`` allows ``permission`` (``admin`` allows
    everything). Every adapter (HTTP routes, ``/mcp``, the review page) asks this."""
    if not grant.allows(permission):
        raise Forbidden(f"this token lacks the {permission.value!r} permission")


def authorize(
    store: Store,
    clock: Clock,
    raw: str,
    permission: Permission,
    cache: ContextCache | None = None,
) -> tuple[TokenGrant, int | None]:
    """Authenticate ``raw`` and check ``permission``: the grant and the subject's state version
    (None when the subject was erased). Unauthorized, TokenExpired or Forbidden otherwise."""
    grant, version = authenticate_token_with_state(store, clock, raw, cache)
    require_permission(grant, permission)
    return grant, version


@functools.lru_cache(maxsize=64)
def _permissions(text: str) -> frozenset[Permission]:
    return _repo.parse_permissions(text)


# A token's stored expiry parsed once, not on every request (datetimes are immutable).
_instant = functools.lru_cache(maxsize=4096)(parse_instant)


def list_tokens(store: Store, subject_id: str) -> list[TokenInfo]:
    """The subject's tokens (never their secret), oldest first."""
    require_schema(store)
    with store.read() as tx:
        _repo.require_subject(tx, subject_id)
        return _repo.tokens_for(tx, subject_id)


def revoke_token(store: Store, clock: Clock, subject_id: str, token_id: str) -> None:
    """Revoke one token at once; later requests with it are ``401 unauthorized``."""
    require_schema(store)
    with store.transaction() as tx:
        if not _repo.revoke_token(tx, subject_id, token_id, clock.now()):
            raise ResourceNotFound(f"no active token {token_id!r} for this subject")


__all__ = [
    "DEFAULT_TOKEN_TTL",
    "MAX_TOKEN_TTL",
    "TOKEN_PREFIX",
    "authenticate_cached",
    "authenticate_token",
    "authenticate_token_with_state",
    "authorize",
    "hash_token",
    "issue_token",
    "list_tokens",
    "parse_permissions",
    "require_permission",
    "revoke_token",
]
