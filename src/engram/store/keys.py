"""Signing-key persistence: the keyring of :mod:`engram.core.keyring`, kept in the database.

docs/spec/storage.md "Signing keys"; docs/spec/keys-and-signatures.md (signing keys: kid,
Ed25519, created_at, expires_at; retired keys stay published until their last export expires;
private keys never leave the key store). The decisions (which key signs, which are published,
what to retire) are the pure functions of :mod:`engram.core.keyring`; this module stores their
results.

Private keys are kept as PKCS#8 PEM in the ``engram_signing_keys`` table: on SQLite the database
file is created 0600 (and refused when group or others can read it); on PostgreSQL the database
is the key store and its access control guards them. They leave only through
:meth:`KeyStore.ensure_active` (in memory, to sign) and :meth:`KeyStore.export_private_key`
(a 0600 file, on explicit request). Nothing here logs or renders a private key.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

from engram.core import keyring
from engram.core.clock import format_instant_precise, parse_instant
from engram.core.keyring import KeyInfo
from engram.core.keys import PrivateKey, PublicKey, save_private_key
from engram.errors import ConflictError, InvalidRequest, ResourceNotFound, UnknownKeyId
from engram.store._base import Component, Dialect, Migration, Row, Store, Tx
from engram.store._changes import COMPONENT as CHANGES_COMPONENT
from engram.store._sql import advisory_lock

DEFAULT_LIFETIME = timedelta(days=90)
_LOCK = "engram-keys"
KEYS_TOPIC = "keys"
"""Change-feed topic of every change to the keyring (creation, rotation, retirement)."""
_COLUMNS = "kid, public_key, created_at, expires_at, retired_at, published_until, signs_from"


def _schema_v1(dialect: Dialect) -> list[str]:
    return [
        "CREATE TABLE engram_signing_keys ("
        " kid TEXT PRIMARY KEY,"
        " public_key TEXT NOT NULL UNIQUE,"
        f" private_key_pem {dialect.blob} NOT NULL,"
        " created_at TEXT NOT NULL,"
        " expires_at TEXT NOT NULL,"
        " retired_at TEXT,"
        " published_until TEXT)",
    ]


def _schema_v2(_: Dialect) -> list[str]:
    # When a key starts signing (NULL: at created_at): a successor is published ahead of it.
    return ["ALTER TABLE engram_signing_keys ADD COLUMN signs_from TEXT"]


COMPONENT = Component(
    "keys",
    [
        Migration(1, "signing keys", _schema_v1),
        Migration(2, "keys published ahead of signing", _schema_v2),
    ],
)


def _instant(value: object) -> datetime | None:
    return None if value is None else parse_instant(str(value))


def _info(row: Row) -> KeyInfo:
    return KeyInfo(
        kid=str(row["kid"]),
        public_key=PublicKey.from_b64url(str(row["public_key"])),
        created_at=parse_instant(str(row["created_at"])),
        expires_at=parse_instant(str(row["expires_at"])),
        retired_at=_instant(row["retired_at"]),
        published_until=_instant(row["published_until"]),
        signs_from=_instant(row["signs_from"]),
    )


# ``KeyStore.list`` shadows the builtin inside the class body, so annotations use this alias.
KeyList = list[KeyInfo]


def _text(moment: datetime | None) -> str | None:
    return None if moment is None else format_instant_precise(moment)


class KeyStore:
    """The signing keyring of one engram database (component ``keys``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        store.migrate(CHANGES_COMPONENT, COMPONENT)

    # -- reading -------------------------------------------------------------------------------

    def list(self) -> KeyList:
        """Every key ever created, oldest first."""
        with self._store.read() as tx:
            return self._all(tx)

    def get(self, kid: str) -> KeyInfo:
        """The record of ``kid``; a kid never created is ResourceNotFound."""
        with self._store.read() as tx:
            return self._get(tx, kid)

    def published(self, now: datetime) -> KeyList:
        """The keys a verifier may need at ``now`` (the discovery document), oldest first:
        a key published ahead of signing is among them."""
        return keyring.published_keys(self.list(), now)

    def public_key(self, kid: str) -> PublicKey:
        """The public key of any key this store created; an unknown kid is UnknownKeyId."""
        with self._store.read() as tx:
            row = tx.one("SELECT public_key FROM engram_signing_keys WHERE kid = ?", (kid,))
        if row is None:
            raise UnknownKeyId(f"no signing key with kid {kid!r}")
        return PublicKey.from_b64url(str(row["public_key"]))

    # -- changing ------------------------------------------------------------------------------

    def create(
        self, now: datetime, lifetime: timedelta = DEFAULT_LIFETIME, *, kid: str | None = None
    ) -> KeyInfo:
        """Generate and store a new key (kid defaults to its content-addressed key id)."""
        with self._store.transaction() as tx:
            info, _ = self._create(tx, now, lifetime, kid)
            tx.record_change(KEYS_TOPIC, info.kid)
        return info

    def rotate(
        self,
        now: datetime,
        lifetime: timedelta = DEFAULT_LIFETIME,
        *,
        lead: timedelta = keyring.DEFAULT_PUBLISH_LEAD,
    ) -> KeyInfo:
        """Create a new key that is published now and signs from ``now + lead``; every other
        unretired key retires at that instant (it keeps signing until then).

        ``lead`` is at least the key list's cache lifetime (issue 12), so no verifier meets the
        new kid before its cached key list holds it. Retired keys stay published until what
        they signed has expired (``published_until``). To stop a compromised key at once, use
        :meth:`retire`: the next :meth:`ensure_active` then makes a key that signs at once.
        """
        handover = format_instant_precise(now + lead)
        with self._store.transaction() as tx:
            advisory_lock(tx, _LOCK)
            info, _ = self._create(tx, now, lifetime, None, lead=lead)
            tx.execute(
                "UPDATE engram_signing_keys SET retired_at = ?"
                " WHERE kid <> ? AND (retired_at IS NULL OR retired_at > ?)",
                (handover, info.kid, handover),
            )
            tx.record_change(KEYS_TOPIC, info.kid)
        return info

    def retire(self, kid: str, now: datetime) -> KeyInfo:
        """Stop ``kid`` signing from ``now`` on (retiring twice keeps the earlier instant)."""
        with self._store.transaction() as tx:
            current = self._get(tx, kid)
            if current.retired_at is not None and current.retired_at > now:
                current = replace(current, retired_at=None)  # scheduled later: bring it forward
            info = keyring.retire(current, now)
            tx.execute(
                "UPDATE engram_signing_keys SET retired_at = ? WHERE kid = ?",
                (_text(info.retired_at), kid),
            )
            tx.record_change(KEYS_TOPIC, kid)
        return info

    def note_signed(self, kid: str, expires_at: datetime) -> None:
        """Record that ``kid`` signed something valid until ``expires_at``.

        ``published_until`` only moves later, so the key stays published until the last thing
        it signed has expired. Call it before handing out what was signed.
        """
        if expires_at.tzinfo is None:
            raise InvalidRequest("expires_at must be timezone-aware")
        stamp = format_instant_precise(expires_at)
        with self._store.transaction() as tx:
            self._get(tx, kid)
            # One conditional UPDATE: concurrent signers can only move it later, never back.
            tx.execute(
                "UPDATE engram_signing_keys SET published_until = ?"
                " WHERE kid = ? AND (published_until IS NULL OR published_until < ?)",
                (stamp, kid, stamp),
            )

    def ensure_active(
        self,
        now: datetime,
        lifetime: timedelta = DEFAULT_LIFETIME,
        *,
        renew_before: timedelta = timedelta(0),
        lead: timedelta = timedelta(0),
    ) -> tuple[KeyInfo, PrivateKey]:
        """The key to sign with at ``now``, creating (and retiring) keys as the keyring plans.

        A successor is created ``lead`` before it signs, once the active key stops signing
        within ``renew_before + lead``; the active key signs until then. Safe when several
        workers call it at once: the plan is made and applied under one lock, so exactly one
        new key is created.
        """
        with self._store.transaction() as tx:
            advisory_lock(tx, _LOCK)
            plan = keyring.plan_rotation(self._all(tx), now, renew_before=renew_before, lead=lead)
            active = plan.active
            superseded = list(plan.retire)
            changed = bool(superseded)
            if plan.create:
                created, _ = self._create(tx, now, lifetime, None, lead=plan.create_lead)
                changed = True
                if created.can_sign(now):
                    if active is not None:
                        superseded.append(active)
                    active = created
            if active is None:  # pragma: no cover - plan_rotation creates when none may sign
                raise ConflictError("no signing key may sign now")
            key = self._private(tx, active.kid)
            for old in superseded:
                if old.kid != active.kid and old.retired_at is None:
                    tx.execute(
                        "UPDATE engram_signing_keys SET retired_at = ? WHERE kid = ?",
                        (format_instant_precise(now), old.kid),
                    )
            if changed:
                tx.record_change(KEYS_TOPIC, active.kid)
        return active, key

    def export_private_key(self, kid: str, path: str | os.PathLike[str]) -> Path:
        """Write the private key of ``kid`` to ``path`` as PKCS#8 PEM with mode 0600.

        The one way a private key leaves the store; an existing file is never overwritten.
        """
        with self._store.read() as tx:
            key = self._private(tx, kid)
        target = Path(path)
        save_private_key(target, key)
        return target

    # -- inside a transaction ------------------------------------------------------------------

    def _all(self, tx: Tx) -> KeyList:
        rows = tx.execute(
            f"SELECT {_COLUMNS} FROM engram_signing_keys ORDER BY created_at, kid"  # noqa: S608
        )
        return [_info(row) for row in rows]

    def _get(self, tx: Tx, kid: str) -> KeyInfo:
        row = tx.one(f"SELECT {_COLUMNS} FROM engram_signing_keys WHERE kid = ?", (kid,))  # noqa: S608
        if row is None:
            raise ResourceNotFound(f"no signing key with kid {kid!r}")
        return _info(row)

    def _private(self, tx: Tx, kid: str) -> PrivateKey:
        pem = tx.scalar("SELECT private_key_pem FROM engram_signing_keys WHERE kid = ?", (kid,))
        if pem is None:
            raise ResourceNotFound(f"no signing key with kid {kid!r}")
        return PrivateKey.from_pem(bytes(pem))

    def _create(
        self,
        tx: Tx,
        now: datetime,
        lifetime: timedelta,
        kid: str | None,
        *,
        lead: timedelta = timedelta(0),
    ) -> tuple[KeyInfo, PrivateKey]:
        if kid is not None and not kid.strip():
            raise InvalidRequest("a kid must not be empty")
        key = PrivateKey.generate()
        info = keyring.new_key_info(key.public_key(), now, lifetime, kid, lead=lead)
        inserted = tx.execute(
            "INSERT INTO engram_signing_keys"
            " (kid, public_key, private_key_pem, created_at, expires_at, signs_from)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (kid) DO NOTHING RETURNING kid",
            (
                info.kid,
                info.public_key.b64url,
                key.to_pem(),
                format_instant_precise(info.created_at),
                format_instant_precise(info.expires_at),
                _text(info.signs_from),
            ),
        )
        if not inserted:
            raise ConflictError(f"a signing key with kid {info.kid!r} already exists")
        return info, key


__all__ = ["COMPONENT", "DEFAULT_LIFETIME", "KEYS_TOPIC", "KeyStore"]
