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
from datetime import datetime, timedelta
from pathlib import Path

from engram.core import keyring
from engram.core.clock import format_instant_precise, parse_instant
from engram.core.keyring import KeyInfo
from engram.core.keys import PrivateKey, PublicKey, save_private_key
from engram.errors import ConflictError, InvalidRequest, ResourceNotFound, UnknownKeyId
from engram.store._base import Component, Dialect, Migration, Row, Store, Tx
from engram.store._sql import advisory_lock

DEFAULT_LIFETIME = timedelta(days=90)
_LOCK = "engram-keys"
_COLUMNS = "kid, public_key, created_at, expires_at, retired_at, published_until"


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


COMPONENT = Component("keys", [Migration(1, "signing keys", _schema_v1)])


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
    )


# ``KeyStore.list`` shadows the builtin inside the class body, so annotations use this alias.
KeyList = list[KeyInfo]


def _text(moment: datetime | None) -> str | None:
    return None if moment is None else format_instant_precise(moment)


class KeyStore:
    """The signing keyring of one engram database (component ``keys``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        store.migrate(COMPONENT)

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
        """The keys a verifier may need at ``now`` (the discovery document), oldest first."""
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
        return info

    def rotate(self, now: datetime, lifetime: timedelta = DEFAULT_LIFETIME) -> KeyInfo:
        """Create a new key and retire every other unretired key at ``now``.

        Retired keys stay published until what they signed has expired (``published_until``).
        """
        with self._store.transaction() as tx:
            advisory_lock(tx, _LOCK)
            info, _ = self._create(tx, now, lifetime, None)
            tx.execute(
                "UPDATE engram_signing_keys SET retired_at = ?"
                " WHERE retired_at IS NULL AND kid <> ?",
                (format_instant_precise(now), info.kid),
            )
        return info

    def retire(self, kid: str, now: datetime) -> KeyInfo:
        """Stop ``kid`` signing from ``now`` on (retiring twice keeps the first instant)."""
        with self._store.transaction() as tx:
            info = keyring.retire(self._get(tx, kid), now)
            tx.execute(
                "UPDATE engram_signing_keys SET retired_at = ? WHERE kid = ?",
                (_text(info.retired_at), kid),
            )
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
    ) -> tuple[KeyInfo, PrivateKey]:
        """The key to sign with at ``now``, creating (and retiring) keys as the keyring plans.

        Safe when several workers call it at once: the plan is made and applied under one lock,
        so exactly one new key is created.
        """
        with self._store.transaction() as tx:
            advisory_lock(tx, _LOCK)
            plan = keyring.plan_rotation(self._all(tx), now, renew_before=renew_before)
            active = plan.active
            superseded = list(plan.retire)
            if plan.create:
                created, key = self._create(tx, now, lifetime, None)
                if active is not None:
                    superseded.append(active)
                active = created
            else:
                assert active is not None  # plan_rotation creates whenever no key may sign
                key = self._private(tx, active.kid)
            for old in superseded:
                if old.kid != active.kid and old.retired_at is None:
                    tx.execute(
                        "UPDATE engram_signing_keys SET retired_at = ? WHERE kid = ?",
                        (format_instant_precise(now), old.kid),
                    )
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
        self, tx: Tx, now: datetime, lifetime: timedelta, kid: str | None
    ) -> tuple[KeyInfo, PrivateKey]:
        if kid is not None and not kid.strip():
            raise InvalidRequest("a kid must not be empty")
        key = PrivateKey.generate()
        info = keyring.new_key_info(key.public_key(), now, lifetime, kid)
        inserted = tx.execute(
            "INSERT INTO engram_signing_keys"
            " (kid, public_key, private_key_pem, created_at, expires_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (kid) DO NOTHING RETURNING kid",
            (
                info.kid,
                info.public_key.b64url,
                key.to_pem(),
                format_instant_precise(info.created_at),
                format_instant_precise(info.expires_at),
            ),
        )
        if not inserted:
            raise ConflictError(f"a signing key with kid {info.kid!r} already exists")
        return info, key


__all__ = ["COMPONENT", "DEFAULT_LIFETIME", "KeyStore"]
