"""KeyStore on every backend: create, rotate, retire, publish, sign, export (0600)."""

from __future__ import annotations

import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engram.core.keys import PublicKey, load_private_key
from engram.core.signing import sign_json, verify_json
from engram.errors import ConflictError, KeyFileError, ResourceNotFound, UnknownKeyId
from engram.store import Store, open_store
from engram.store.keys import KeyStore

T0 = datetime(2026, 1, 1, 10, 0, 0, tzinfo=UTC)
DAY = timedelta(days=1)


@pytest.fixture
def keys(any_store: Store) -> KeyStore:
    return KeyStore(any_store)


@pytest.mark.req("engram.store.keys-persist")
def test_a_created_key_is_listed_with_its_lifetime(keys: KeyStore) -> None:
    info = keys.create(T0, 30 * DAY)
    assert info.kid.startswith("ed25519:")
    assert info.kid == info.public_key.key_id
    (listed,) = keys.list()
    assert listed == info
    assert (listed.created_at, listed.expires_at) == (T0, T0 + 30 * DAY)
    assert listed.status == "active"
    assert keys.public_key(info.kid) == info.public_key
    assert keys.get(info.kid) == info


@pytest.mark.req("engram.store.keys-persist")
def test_an_explicit_kid_is_kept_and_may_not_repeat(keys: KeyStore) -> None:
    info = keys.create(T0, DAY, kid="test-key-001")
    assert info.kid == "test-key-001"
    with pytest.raises(ConflictError, match="test-key-001"):
        keys.create(T0, DAY, kid="test-key-001")
    assert [k.kid for k in keys.list()] == ["test-key-001"]


@pytest.mark.req("engram.store.keys-persist")
def test_ensure_active_creates_once_and_signs_verifiably(keys: KeyStore) -> None:
    info, private = keys.ensure_active(T0, 30 * DAY)
    again, same = keys.ensure_active(T0 + DAY, 30 * DAY)
    assert again.kid == info.kid
    assert same.public_key() == private.public_key() == info.public_key
    document = {"subject": "ada", "beliefs": []}
    signature = sign_json(document, private)
    verify_json(document, signature, keys.public_key(info.kid))
    assert len(keys.list()) == 1


@pytest.mark.req("engram.store.keys-rotation")
def test_ensure_active_replaces_an_expired_key_and_retires_it(keys: KeyStore) -> None:
    first, _ = keys.ensure_active(T0, DAY)
    second, _ = keys.ensure_active(T0 + 2 * DAY, DAY)
    assert second.kid != first.kid
    by_kid = {k.kid: k for k in keys.list()}
    assert by_kid[first.kid].retired_at == T0 + 2 * DAY
    assert by_kid[second.kid].retired_at is None


@pytest.mark.req("engram.store.keys-rotation")
def test_ensure_active_renews_before_the_active_key_runs_out(keys: KeyStore) -> None:
    first, _ = keys.ensure_active(T0, 10 * DAY)
    same, _ = keys.ensure_active(T0 + 5 * DAY, 10 * DAY, renew_before=2 * DAY)
    assert same.kid == first.kid
    renewed, _ = keys.ensure_active(T0 + 9 * DAY, 10 * DAY, renew_before=2 * DAY)
    assert renewed.kid != first.kid


@pytest.mark.req("engram.store.keys-rotation", "engram.store.keys-published-until")
def test_a_rotated_key_stays_published_until_what_it_signed_expires(keys: KeyStore) -> None:
    old, _ = keys.ensure_active(T0, 30 * DAY)
    keys.note_signed(old.kid, T0 + DAY)  # an export valid for a day
    keys.note_signed(old.kid, T0 + DAY / 2)  # an earlier expiry never shortens it
    new = keys.rotate(T0 + DAY / 4, 30 * DAY)
    assert keys.get(old.kid).status == "retired"
    assert keys.get(old.kid).published_until == T0 + DAY
    published = [k.kid for k in keys.published(T0 + DAY / 2)]
    assert published == [old.kid, new.kid]
    assert [k.kid for k in keys.published(T0 + DAY + timedelta(seconds=1))] == [new.kid]
    active, _ = keys.ensure_active(T0 + DAY / 2, 30 * DAY)
    assert active.kid == new.kid


@pytest.mark.req("engram.store.keys-published-until")
def test_a_retired_key_that_signed_nothing_is_withdrawn_at_once(keys: KeyStore) -> None:
    info = keys.create(T0, 30 * DAY)
    retired = keys.retire(info.kid, T0 + DAY)
    assert retired.retired_at == T0 + DAY
    assert keys.retire(info.kid, T0 + 2 * DAY).retired_at == T0 + DAY  # first instant kept
    assert [k.kid for k in keys.published(T0 + DAY / 2)] == [info.kid]
    assert keys.published(T0 + DAY) == []
    # A kid the store created is still resolvable for audits, even when no longer published.
    assert keys.public_key(info.kid) == info.public_key


@pytest.mark.req("engram.store.keys-persist")
def test_unknown_kids_are_reported(keys: KeyStore) -> None:
    with pytest.raises(UnknownKeyId):
        keys.public_key("ed25519:nope")
    with pytest.raises(ResourceNotFound):
        keys.retire("ed25519:nope", T0)
    with pytest.raises(ResourceNotFound):
        keys.note_signed("ed25519:nope", T0)


@pytest.mark.req("engram.store.keys-private")
def test_export_writes_a_0600_file_that_loads_back_and_never_overwrites(
    keys: KeyStore, tmp_path: Path
) -> None:
    info, private = keys.ensure_active(T0, DAY)
    path = keys.export_private_key(info.kid, tmp_path / "out" / "signing.pem")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_private_key(path).public_key() == private.public_key()
    with pytest.raises(KeyFileError, match="already exists"):
        keys.export_private_key(info.kid, path)


@pytest.mark.req("engram.store.keys-private")
def test_nothing_public_carries_the_private_key(keys: KeyStore) -> None:
    info, private = keys.ensure_active(T0, DAY)
    pem = private.to_pem()
    wire = info.to_wire()
    assert set(wire) == {"kid", "alg", "public_key", "created_at", "expires_at", "status"}
    rendered = repr(keys.list()) + repr(info) + repr(private) + str(wire)
    assert pem.decode() not in rendered
    assert "PRIVATE KEY" not in rendered
    assert PublicKey.from_b64url(wire["public_key"]) == info.public_key


@pytest.mark.req("engram.store.keys-persist")
def test_keys_survive_reopening_the_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'engram.db'}"
    store = open_store(url)
    info, private = KeyStore(store).ensure_active(T0, DAY)
    store.close()
    reopened = open_store(url)
    try:
        again, key = KeyStore(reopened).ensure_active(T0, DAY)
    finally:
        reopened.close()
    assert again == info
    assert key.public_key() == private.public_key()


@pytest.mark.req("engram.store.keys-concurrent")
def test_concurrent_ensure_active_creates_exactly_one_key(any_store: Store) -> None:
    keys = KeyStore(any_store)
    barrier = threading.Barrier(4)

    def first_kid(_: int) -> str:
        barrier.wait()
        return keys.ensure_active(T0, DAY)[0].kid

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(first_kid, range(4)))
    assert len(set(results)) == 1
    assert len(keys.list()) == 1


LEAD = timedelta(seconds=300)


@pytest.mark.req("engram.store.keys-published-before-signing")
def test_a_rotated_in_key_is_published_a_lead_before_it_signs(keys: KeyStore) -> None:
    old, _ = keys.ensure_active(T0, 30 * DAY)
    new = keys.rotate(T0 + DAY, 30 * DAY, lead=LEAD)

    just_after = T0 + DAY + timedelta(seconds=1)
    assert [k.kid for k in keys.published(just_after)] == [old.kid, new.kid]
    assert {k.kid: k.status_at(just_after) for k in keys.list()} == {
        old.kid: "active",
        new.kid: "next",
    }
    signer, _ = keys.ensure_active(just_after, 30 * DAY)
    assert signer.kid == old.kid  # the old key signs through the whole lead
    signer, _ = keys.ensure_active(T0 + DAY + LEAD - timedelta(microseconds=1), 30 * DAY)
    assert signer.kid == old.kid

    handover = T0 + DAY + LEAD
    signer, private = keys.ensure_active(handover, 30 * DAY)
    assert signer.kid == new.kid
    assert private.public_key() == new.public_key
    assert keys.get(old.kid).status_at(handover) == "retired"
    assert new.expires_at == handover + 30 * DAY  # its lifetime counts from its first signature


@pytest.mark.req("engram.store.keys-published-before-signing", "engram.store.keys-rotation")
def test_renewal_publishes_the_successor_a_lead_before_the_active_key_runs_out(
    keys: KeyStore,
) -> None:
    first, _ = keys.ensure_active(T0, 10 * DAY, lead=LEAD)
    assert first.first_signs == T0  # no key could sign yet: the first one signs at once
    renew = 2 * DAY
    early, _ = keys.ensure_active(
        T0 + 8 * DAY - LEAD - DAY, 10 * DAY, renew_before=renew, lead=LEAD
    )
    assert early.kid == first.kid
    assert len(keys.list()) == 1

    at = T0 + 8 * DAY - LEAD
    signer, _ = keys.ensure_active(at, 10 * DAY, renew_before=renew, lead=LEAD)
    assert signer.kid == first.kid  # still the old one: the successor is only published
    successor = keys.list()[-1]
    assert successor.kid != first.kid
    assert successor.first_signs == at + LEAD
    again, _ = keys.ensure_active(at + LEAD / 2, 10 * DAY, renew_before=renew, lead=LEAD)
    assert again.kid == first.kid
    assert len(keys.list()) == 2  # one successor, not one per call
    then, _ = keys.ensure_active(at + LEAD, 10 * DAY, renew_before=renew, lead=LEAD)
    assert then.kid == successor.kid


@pytest.mark.req("engram.store.keys-rotation")
def test_retire_stops_a_key_at_once_even_during_a_scheduled_handover(keys: KeyStore) -> None:
    old, _ = keys.ensure_active(T0, 30 * DAY)
    keys.rotate(T0 + DAY, 30 * DAY, lead=LEAD)
    compromised = keys.retire(old.kid, T0 + DAY + timedelta(seconds=10))
    assert compromised.retired_at == T0 + DAY + timedelta(seconds=10)
    signer, _ = keys.ensure_active(T0 + DAY + timedelta(seconds=11), 30 * DAY, lead=LEAD)
    assert signer.kid != old.kid
    assert signer.can_sign(T0 + DAY + timedelta(seconds=11))  # nothing else could sign: at once
