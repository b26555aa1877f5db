"""Review-page sign-in: server-side sessions and one-time links, both stored hashed.

``docs/spec/review-page.md`` ("Sessions", "One-time links", "CSRF") is the contract. In short:

- signing in with a bearer token that may ``confirm`` (or ``admin``) opens a session; the cookie
  carries a 256-bit random secret and the store keeps only its SHA-256, the subject, the token id
  and the instants. A session ends at sign-out, after ``session_idle`` without a request, after
  ``session_lifetime``, when its token expires, or as soon as that token is revoked;
- ``engram review-link`` makes a one-time link: a 256-bit code, stored hashed, that opens one
  session and can never be used again; it expires after its TTL (default 15 minutes, at most 24 h);
- every state-changing form carries a synchronizer token derived from the session secret by
  HMAC-SHA256: it is bound to the session, needs no storage, and reveals nothing of the secret.

Nothing here reads the environment or the wall clock: a store, a clock and a config are passed in.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from engram.context import Permission, get_subject, list_tokens
from engram.context.internals import authorize
from engram.core.clock import Clock, format_instant_precise, parse_instant
from engram.core.encoding import b64url_encode
from engram.errors import (
    AuthError,
    Forbidden,
    InvalidRequest,
    TokenExpired,
    Unauthorized,
    UserNotFound,
)
from engram.provider.review._schema import REVIEW_COMPONENT
from engram.store import Row, Store, Tx

LINK_PREFIX = "rl_"
DEFAULT_LINK_TTL = timedelta(minutes=15)
MAX_LINK_TTL = timedelta(hours=24)
# A session's last_seen_at is written at most this often, so reading a page is not a write each
# time; idle expiry is therefore exact to within this interval.
TOUCH_INTERVAL = timedelta(seconds=60)
# Used links stay this long after they expire, so a second click says "already used" (not
# "unknown link") for a while; then they are deleted.
LINK_RETENTION = timedelta(days=1)
_SECRET = re.compile(r"^[A-Za-z0-9_-]{43}$")
_CSRF_LABEL = b"engram review csrf v1"


@dataclass(frozen=True)
class ReviewConfig:
    """How long sessions live; both bounds apply, and a token's session also ends with it."""

    session_idle: timedelta = timedelta(minutes=30)
    session_lifetime: timedelta = timedelta(hours=8)

    def __post_init__(self) -> None:
        if self.session_idle <= timedelta(0) or self.session_lifetime <= timedelta(0):
            raise InvalidRequest("review session lifetimes must be positive")


@dataclass(frozen=True)
class ReviewSession:
    """A signed-in subject. ``csrf_token`` goes into every state-changing form."""

    subject_id: str
    method: str  # "token" or "link"
    token_id: str | None
    created_at: datetime
    expires_at: datetime
    csrf_token: str


@dataclass(frozen=True)
class OpenedSession:
    """A new session and its secret (the cookie value); the secret is never stored."""

    secret: str
    session: ReviewSession


@dataclass(frozen=True)
class ReviewLink:
    """A one-time sign-in link's code (shown once) and when it stops working."""

    code: str
    subject_id: str
    expires_at: datetime


def ensure_review_schema(store: Store) -> None:
    """Create or upgrade the review tables (idempotent; the app calls it once at start-up)."""
    store.migrate(REVIEW_COMPONENT)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def _t(moment: datetime) -> str:
    return format_instant_precise(moment)


def csrf_token(secret: str) -> str:
    """The synchronizer token of the session whose cookie secret is ``secret``."""
    mac = hmac.new(secret.encode("ascii"), _CSRF_LABEL, hashlib.sha256).digest()
    return b64url_encode(mac)


def check_csrf(secret: str, submitted: str | None) -> None:
    """Forbidden unless ``submitted`` is this session's synchronizer token."""
    if not submitted or not hmac.compare_digest(csrf_token(secret).encode(), submitted.encode()):
        raise Forbidden("the form's security token is missing or does not match this session")


def _open(
    tx: Tx, clock: Clock, subject_id: str, method: str, token_id: str | None, expires: datetime
) -> OpenedSession:
    now = clock.now()
    secret = b64url_encode(secrets.token_bytes(32))
    tx.execute(
        "INSERT INTO review_sessions (session_hash, subject_id, token_id, method, created_at,"
        " last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (_hash(secret), subject_id, token_id, method, _t(now), _t(now), _t(expires)),
    )
    session = ReviewSession(subject_id, method, token_id, now, expires, csrf_token(secret))
    return OpenedSession(secret, session)


def _purge(tx: Tx, now: datetime, config: ReviewConfig) -> None:
    """Delete sessions past either bound and links past their retention."""
    tx.execute(
        "DELETE FROM review_sessions WHERE expires_at <= ? OR last_seen_at <= ?",
        (_t(now), _t(now - config.session_idle)),
    )
    tx.execute("DELETE FROM review_links WHERE expires_at <= ?", (_t(now - LINK_RETENTION),))


def sign_in_with_token(
    store: Store, clock: Clock, raw_token: str, config: ReviewConfig
) -> OpenedSession:
    """Open a session for the token's subject if the token may confirm corrections.

    Unauthorized / TokenExpired for a bad or expired token, Forbidden without ``confirm``.
    """
    grant, _ = authorize(store, clock, raw_token.strip(), Permission.CONFIRM)  # the one rule
    get_subject(store, grant.subject_id)
    now = clock.now()
    expires = min(now + config.session_lifetime, grant.expires_at)
    with store.transaction() as tx:
        _purge(tx, now, config)
        return _open(tx, clock, grant.subject_id, "token", grant.token_id, expires)


def create_review_link(
    store: Store, clock: Clock, subject_id: str, ttl: timedelta = DEFAULT_LINK_TTL
) -> ReviewLink:
    """A single-use sign-in link code for ``subject_id``; only its hash is stored."""
    if ttl <= timedelta(0) or ttl > MAX_LINK_TTL:
        raise InvalidRequest("a review link's ttl must be positive and at most 24 hours")
    get_subject(store, subject_id)
    ensure_review_schema(store)
    now = clock.now()
    code = LINK_PREFIX + b64url_encode(secrets.token_bytes(32))
    with store.transaction() as tx:
        tx.execute(
            "INSERT INTO review_links (link_hash, subject_id, created_at, expires_at, used_at)"
            " VALUES (?, ?, ?, ?, NULL)",
            (_hash(code), subject_id, _t(now), _t(now + ttl)),
        )
    return ReviewLink(code, subject_id, now + ttl)


def _link_code_ok(code: str) -> bool:
    return code.startswith(LINK_PREFIX) and bool(_SECRET.match(code[len(LINK_PREFIX) :]))


def _link_refusal(row: Row | None, now: datetime) -> AuthError:
    if row is None:
        return Unauthorized("this sign-in link is not valid")
    if row["used_at"] is not None:
        return Unauthorized("this sign-in link was already used; each link works once")
    if parse_instant(row["expires_at"]) <= now:
        return TokenExpired("this sign-in link has expired")
    return Unauthorized("this sign-in link is not valid")


def inspect_link(store: Store, clock: Clock, code: str) -> ReviewLink:
    """The link if it is unused and unexpired (it stays unused); otherwise why not."""
    if not _link_code_ok(code):
        raise Unauthorized("this sign-in link is not valid")
    now = clock.now()
    with store.read() as tx:
        row = tx.one("SELECT * FROM review_links WHERE link_hash = ?", (_hash(code),))
    if row is None or row["used_at"] is not None or parse_instant(row["expires_at"]) <= now:
        raise _link_refusal(row, now)
    return ReviewLink(code, str(row["subject_id"]), parse_instant(row["expires_at"]))


def redeem_review_link(
    store: Store, clock: Clock, code: str, config: ReviewConfig
) -> OpenedSession:
    """Spend a one-time link (atomically: two concurrent redemptions open one session)."""
    if not _link_code_ok(code):
        raise Unauthorized("this sign-in link is not valid")
    now = clock.now()
    with store.transaction() as tx:
        spent = tx.execute(
            "UPDATE review_links SET used_at = ? WHERE link_hash = ? AND used_at IS NULL"
            " AND expires_at > ? RETURNING subject_id, expires_at",
            (_t(now), _hash(code), _t(now)),
        )
        if not spent:
            row = tx.one("SELECT * FROM review_links WHERE link_hash = ?", (_hash(code),))
            raise _link_refusal(row, now)
        subject_id = str(spent[0]["subject_id"])
        _purge(tx, now, config)
        opened = _open(tx, clock, subject_id, "link", None, now + config.session_lifetime)
    try:
        get_subject(store, subject_id)
    except UserNotFound:
        sign_out(store, opened.secret)
        raise
    return opened


def _forget(store: Store, secret: str) -> None:
    with store.transaction() as tx:
        tx.execute("DELETE FROM review_sessions WHERE session_hash = ?", (_hash(secret),))


def _token_still_valid(store: Store, clock: Clock, subject_id: str, token_id: str) -> bool:
    for info in list_tokens(store, subject_id):
        if info.token_id == token_id:
            return info.revoked_at is None and clock.now() < info.expires_at
    return False


def resume_session(store: Store, clock: Clock, secret: str, config: ReviewConfig) -> ReviewSession:
    """The session behind a cookie secret, or Unauthorized (none) / TokenExpired (timed out)."""
    if not _SECRET.match(secret):
        raise Unauthorized("you are not signed in")
    now = clock.now()
    with store.read() as tx:
        row = tx.one("SELECT * FROM review_sessions WHERE session_hash = ?", (_hash(secret),))
    if row is None:
        raise Unauthorized("you are not signed in")
    expires_at = parse_instant(row["expires_at"])
    last_seen = parse_instant(row["last_seen_at"])
    if now >= expires_at or now >= last_seen + config.session_idle:
        _forget(store, secret)
        raise TokenExpired("your review session has expired")
    subject_id, token_id = str(row["subject_id"]), row["token_id"]
    try:
        valid = token_id is None or _token_still_valid(store, clock, subject_id, token_id)
        get_subject(store, subject_id)
    except UserNotFound:
        valid = False
    if not valid:
        _forget(store, secret)
        raise Unauthorized("the token this session was opened with is no longer valid")
    if now - last_seen >= TOUCH_INTERVAL:
        with store.transaction() as tx:
            tx.execute(
                "UPDATE review_sessions SET last_seen_at = ? WHERE session_hash = ?",
                (_t(now), _hash(secret)),
            )
    created_at = parse_instant(row["created_at"])
    method = str(row["method"])
    return ReviewSession(subject_id, method, token_id, created_at, expires_at, csrf_token(secret))


def sign_out(store: Store, secret: str) -> None:
    """End the session at once (its row is deleted); unknown secrets are ignored."""
    if _SECRET.match(secret):
        _forget(store, secret)


__all__ = [
    "DEFAULT_LINK_TTL",
    "LINK_PREFIX",
    "MAX_LINK_TTL",
    "OpenedSession",
    "ReviewConfig",
    "ReviewLink",
    "ReviewSession",
    "check_csrf",
    "create_review_link",
    "csrf_token",
    "ensure_review_schema",
    "inspect_link",
    "redeem_review_link",
    "resume_session",
    "sign_in_with_token",
    "sign_out",
]
