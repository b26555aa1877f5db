"""The signing keyring as pure data: which key signs now, which keys are published, rotation.

Spec: issue 2 item 3, docs/spec/keys-and-signatures.md "Keyring" (signing keys: kid, Ed25519,
created_at, expires_at; retired keys stay published until their last export expires), OpenWOP v2
Conformance §"Signature and attribution" (a retired key stays listed),
docs/spec/keys-and-signatures.md §"Key lifecycle".

No I/O and no clock: every function takes ``now``. ``engram.store.keys.KeyStore`` persists
:class:`KeyInfo` rows and applies the decisions made here.

Lifecycle of one key::

    created_at ── may sign ──> retired_at or expires_at ── published only ──> published_until
                               (whichever comes first)     (verifiers still need it)

- A key *may sign* at ``now`` when ``created_at <= now < expires_at`` and it is not retired.
- The *active* key is the newest (latest ``created_at``, then greatest ``kid``) key that may sign.
- ``published_until`` is the latest ``expires_at`` of anything the key signed
  (:func:`note_signed`). A key is *published* while it may sign, and afterwards through
  ``published_until`` inclusive, so every unexpired signature stays verifiable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from engram.core.clock import format_instant
from engram.core.keys import PublicKey
from engram.errors import InvalidRequest

ALGORITHM = "Ed25519"

KeyStatus = Literal["active", "retired"]


@dataclass(frozen=True)
class KeyInfo:
    """The public record of one signing key (never the private half)."""

    kid: str
    public_key: PublicKey
    created_at: datetime
    expires_at: datetime
    retired_at: datetime | None = None
    published_until: datetime | None = None

    def __post_init__(self) -> None:
        for name in ("created_at", "expires_at", "retired_at", "published_until"):
            moment = getattr(self, name)
            if moment is not None and moment.tzinfo is None:
                raise InvalidRequest(f"KeyInfo.{name} must be timezone-aware")
        if self.expires_at <= self.created_at:
            raise InvalidRequest("a key must expire after it is created")

    @property
    def status(self) -> KeyStatus:
        """``retired`` once retired (by hand or by rotation), else ``active``."""
        return "retired" if self.retired_at is not None else "active"

    def signing_until(self) -> datetime:
        """The instant this key stops signing: its expiry, or its retirement if earlier."""
        if self.retired_at is not None and self.retired_at < self.expires_at:
            return self.retired_at
        return self.expires_at

    def can_sign(self, now: datetime) -> bool:
        return self.created_at <= now < self.signing_until()

    def is_published(self, now: datetime) -> bool:
        """True while the key may sign, and then until everything it signed has expired."""
        if self.can_sign(now):
            return True
        return self.published_until is not None and now <= self.published_until

    def to_wire(self) -> dict[str, str]:
        """The published form: ``{kid, alg, public_key, created_at, expires_at, status}``."""
        return {
            "kid": self.kid,
            "alg": ALGORITHM,
            "public_key": self.public_key.b64url,
            "created_at": format_instant(self.created_at),
            "expires_at": format_instant(self.expires_at),
            "status": self.status,
        }


@dataclass(frozen=True)
class RotationPlan:
    """What the keyring should do at ``now``.

    ``active`` is the key to sign with (None when ``create`` is set and no key may sign);
    ``create`` says a new key must be generated first; ``retire`` lists unretired keys that are
    expired or superseded (retire each with :func:`retire` at ``now``); ``published`` is what a
    discovery document lists; ``withdrawn`` are keys no verifier needs any more.
    """

    active: KeyInfo | None
    create: bool
    retire: tuple[KeyInfo, ...]
    published: tuple[KeyInfo, ...]
    withdrawn: tuple[KeyInfo, ...]


def new_key_info(
    public_key: PublicKey, now: datetime, lifetime: timedelta, kid: str | None = None
) -> KeyInfo:
    """A fresh record: created ``now``, expiring after ``lifetime``; kid defaults to the key id."""
    if lifetime <= timedelta(0):
        raise InvalidRequest("a key lifetime must be positive")
    return KeyInfo(
        kid=kid if kid is not None else public_key.key_id,
        public_key=public_key,
        created_at=now,
        expires_at=now + lifetime,
    )


def active_key(keys: Iterable[KeyInfo], now: datetime) -> KeyInfo | None:
    """The newest key that may sign at ``now``, or None."""
    candidates = [k for k in keys if k.can_sign(now)]
    if not candidates:
        return None
    return max(candidates, key=lambda k: (k.created_at, k.kid))


def published_keys(keys: Iterable[KeyInfo], now: datetime) -> list[KeyInfo]:
    """Keys a verifier may need at ``now``, oldest first (ties by kid)."""
    return sorted((k for k in keys if k.is_published(now)), key=lambda k: (k.created_at, k.kid))


def retire(key: KeyInfo, now: datetime) -> KeyInfo:
    """``key`` retired at ``now``; an already retired key keeps its first retirement instant."""
    if key.retired_at is not None:
        return key
    return replace(key, retired_at=now)


def note_signed(key: KeyInfo, signed_expires_at: datetime) -> KeyInfo:
    """``key`` after it signed something that expires at ``signed_expires_at``.

    ``published_until`` only ever moves later: the key must stay published until the last
    thing it signed has expired.
    """
    if signed_expires_at.tzinfo is None:
        raise InvalidRequest("signed_expires_at must be timezone-aware")
    if key.published_until is not None and key.published_until >= signed_expires_at:
        return key
    return replace(key, published_until=signed_expires_at)


def plan_rotation(
    keys: Iterable[KeyInfo], now: datetime, *, renew_before: timedelta = timedelta(0)
) -> RotationPlan:
    """Decide rotation at ``now``.

    A new key is needed when no key may sign, or when the active key expires within
    ``renew_before`` (so a fresh key exists before the old one runs out). Every other unretired
    key that is expired or older than the active key is to be retired.
    """
    all_keys = list(keys)
    active = active_key(all_keys, now)
    create = active is None or active.expires_at - now <= renew_before
    retire_now = tuple(
        k
        for k in all_keys
        if k.retired_at is None
        and k is not active
        and (not k.can_sign(now) or (active is not None and _older(k, active)))
        and k.created_at <= now
    )
    published = tuple(published_keys(all_keys, now))
    withdrawn = tuple(k for k in all_keys if not k.is_published(now) and k.created_at <= now)
    return RotationPlan(
        active=active, create=create, retire=retire_now, published=published, withdrawn=withdrawn
    )


def _older(key: KeyInfo, than: KeyInfo) -> bool:
    return (key.created_at, key.kid) < (than.created_at, than.kid)


__all__ = [
    "ALGORITHM",
    "KeyInfo",
    "KeyStatus",
    "RotationPlan",
    "active_key",
    "new_key_info",
    "note_signed",
    "plan_rotation",
    "published_keys",
    "retire",
]
