"""The signing keyring as pure data: which key signs now, which keys are published, rotation.

Spec: issue 2 item 3, docs/spec/keys-and-signatures.md "Keyring" (signing keys: kid, Ed25519,
created_at, expires_at; retired keys stay published until their last export expires), OpenWOP v2
Conformance §"Signature and attribution" (a retired key stays listed),
docs/spec/keys-and-signatures.md §"Key lifecycle".

No I/O and no clock: every function takes ``now``. ``engram.store.keys.KeyStore`` persists
:class:`KeyInfo` rows and applies the decisions made here.

Lifecycle of one key::

    created_at ── published ahead ──> signs_from ── may sign ──> retired_at or expires_at
               (verifiers fetch it)              ── published only ──> published_until

- A key is published from ``created_at``, and *may sign* from ``signs_from`` (``created_at``
  when unset) until ``retired_at`` or ``expires_at``, whichever comes first. A successor made by
  rotation signs only a publish lead after it was created (issue 12: at least one key-list
  cache lifetime), so a verifier holding a cached key list never meets a kid it cannot resolve;
  ``retired_at`` may lie in the future (the old key hands over at the successor's
  ``signs_from``).
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

KeyStatus = Literal["active", "next", "retired"]


@dataclass(frozen=True)
class KeyInfo:
    """The public record of one signing key (never the private half)."""

    kid: str
    public_key: PublicKey
    created_at: datetime
    expires_at: datetime
    retired_at: datetime | None = None
    published_until: datetime | None = None
    signs_from: datetime | None = None  # None: from created_at

    def __post_init__(self) -> None:
        for name in ("created_at", "expires_at", "retired_at", "published_until", "signs_from"):
            moment = getattr(self, name)
            if moment is not None and moment.tzinfo is None:
                raise InvalidRequest(f"KeyInfo.{name} must be timezone-aware")
        if self.expires_at <= self.created_at:
            raise InvalidRequest("a key must expire after it is created")
        if self.signs_from is not None and not (
            self.created_at <= self.signs_from < self.expires_at
        ):
            raise InvalidRequest("a key must start signing between its creation and expiry")

    @property
    def first_signs(self) -> datetime:
        """The instant the key may start signing (``signs_from``, else ``created_at``)."""
        return self.signs_from if self.signs_from is not None else self.created_at

    @property
    def status(self) -> KeyStatus:
        """``retired`` once a retirement is recorded (by hand or by rotation), else
        ``active``; :meth:`status_at` knows about time."""
        return "retired" if self.retired_at is not None else "active"

    def status_at(self, now: datetime) -> KeyStatus:
        """``next`` while published ahead of signing, ``retired`` once it stopped signing (or
        was retired), else ``active``."""
        if now < self.first_signs and (self.retired_at is None or now < self.retired_at):
            return "next"
        if self.retired_at is not None and self.retired_at <= now:
            return "retired"
        return "active"

    def signing_until(self) -> datetime:
        """The instant this key stops signing: its expiry, or its retirement if earlier."""
        if self.retired_at is not None and self.retired_at < self.expires_at:
            return self.retired_at
        return self.expires_at

    def can_sign(self, now: datetime) -> bool:
        return self.first_signs <= now < self.signing_until()

    def is_published(self, now: datetime) -> bool:
        """True from creation while the key has signing ahead of it or may sign, and then until
        everything it signed has expired."""
        if self.created_at <= now < self.signing_until():
            return True
        return self.published_until is not None and now <= self.published_until

    def to_wire(self, now: datetime | None = None) -> dict[str, str]:
        """The published form: ``{kid, alg, public_key, created_at, expires_at, status}``;
        with ``now`` the status is :meth:`status_at` (``next`` for a key published ahead)."""
        return {
            "kid": self.kid,
            "alg": ALGORITHM,
            "public_key": self.public_key.b64url,
            "created_at": format_instant(self.created_at),
            "expires_at": format_instant(self.expires_at),
            "status": self.status if now is None else self.status_at(now),
        }


@dataclass(frozen=True)
class RotationPlan:
    """What the keyring should do at ``now``.

    ``active`` is the key to sign with (None when ``create`` is set and no key may sign);
    ``create`` says a new key must be generated first: ``create_lead`` is how long it is to be
    published before it signs (zero when no key may sign now: nothing could be served
    otherwise); ``pending`` is a successor already published ahead; ``retire`` lists keys that are
    expired or superseded (retire each with :func:`retire` at ``now``); ``published`` is what a
    discovery document lists; ``withdrawn`` are keys no verifier needs any more.
    """

    active: KeyInfo | None
    create: bool
    retire: tuple[KeyInfo, ...]
    published: tuple[KeyInfo, ...]
    withdrawn: tuple[KeyInfo, ...]
    pending: KeyInfo | None = None
    create_lead: timedelta = timedelta(0)


DEFAULT_PUBLISH_LEAD = timedelta(seconds=300)
"""How long a rotated-in key is published before it signs: the key list's cache lifetime
(``Cache-Control: max-age=300`` on ``/.well-known/engram-keys``)."""


def new_key_info(
    public_key: PublicKey,
    now: datetime,
    lifetime: timedelta,
    kid: str | None = None,
    *,
    lead: timedelta = timedelta(0),
) -> KeyInfo:
    """A fresh record: created ``now``, signing from ``now + lead``, expiring ``lifetime``
    after it starts signing; kid defaults to the key id."""
    if lifetime <= timedelta(0):
        raise InvalidRequest("a key lifetime must be positive")
    if lead < timedelta(0):
        raise InvalidRequest("a publish lead must not be negative")
    return KeyInfo(
        kid=kid if kid is not None else public_key.key_id,
        public_key=public_key,
        created_at=now,
        expires_at=now + lead + lifetime,
        signs_from=now + lead if lead else None,
    )


def active_key(keys: Iterable[KeyInfo], now: datetime) -> KeyInfo | None:
    """The newest key that may sign at ``now``, or None."""
    candidates = [k for k in keys if k.can_sign(now)]
    if not candidates:
        return None
    return max(candidates, key=lambda k: (k.created_at, k.kid))


def pending_key(keys: Iterable[KeyInfo], now: datetime) -> KeyInfo | None:
    """The newest key published ahead that will start signing later, or None."""
    waiting = [
        k for k in keys if k.created_at <= now < k.first_signs and k.first_signs < k.signing_until()
    ]
    return max(waiting, key=lambda k: (k.first_signs, k.kid)) if waiting else None


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
    keys: Iterable[KeyInfo],
    now: datetime,
    *,
    renew_before: timedelta = timedelta(0),
    lead: timedelta = timedelta(0),
) -> RotationPlan:
    """Decide rotation at ``now``.

    A new key is needed when no key may sign (it signs at once), or when the active key stops
    signing within ``renew_before + lead`` and no successor is published ahead yet (it is
    published ``lead`` before it signs, so verifiers' cached key lists already hold it). Every
    other unretired key that is expired or older than the active key is to be retired.
    """
    all_keys = list(keys)
    active = active_key(all_keys, now)
    pending = pending_key(all_keys, now)
    if active is None:
        # Nothing may sign: a key that signs at once, or no export could be served at all.
        create, create_lead = True, timedelta(0)
    else:
        running_out = active.signing_until() - now <= renew_before + lead
        successor = pending is not None and pending.first_signs <= active.signing_until()
        create, create_lead = running_out and not successor, lead
    retire_now = tuple(
        k
        for k in all_keys
        if k.retired_at is None
        and k is not active
        and k.first_signs <= now  # a key published ahead is waiting, not superseded
        and (not k.can_sign(now) or (active is not None and _older(k, active)))
    )
    published = tuple(published_keys(all_keys, now))
    withdrawn = tuple(k for k in all_keys if not k.is_published(now) and k.created_at <= now)
    return RotationPlan(
        active=active,
        create=create,
        retire=retire_now,
        published=published,
        withdrawn=withdrawn,
        pending=pending,
        create_lead=create_lead,
    )


def _older(key: KeyInfo, than: KeyInfo) -> bool:
    return (key.created_at, key.kid) < (than.created_at, than.kid)


__all__ = [
    "ALGORITHM",
    "DEFAULT_PUBLISH_LEAD",
    "KeyInfo",
    "KeyStatus",
    "RotationPlan",
    "active_key",
    "new_key_info",
    "note_signed",
    "pending_key",
    "plan_rotation",
    "published_keys",
    "retire",
]
