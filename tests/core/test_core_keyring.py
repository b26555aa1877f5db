"""The keyring's pure lifecycle: active key, rotation, retirement, publication windows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engram.core.keyring import (
    KeyInfo,
    active_key,
    new_key_info,
    note_signed,
    plan_rotation,
    published_keys,
    retire,
)
from engram.core.keys import PrivateKey
from engram.errors import InvalidRequest

T0 = datetime(2026, 1, 1, 10, 0, 0, tzinfo=UTC)
DAY = timedelta(days=1)
LIFETIME = timedelta(days=90)


def _key(created: datetime, kid: str | None = None) -> KeyInfo:
    return new_key_info(PrivateKey.generate().public_key(), created, LIFETIME, kid=kid)


@pytest.mark.req("engram.core.key-id-spki-sha256")
def test_a_new_key_is_named_by_its_key_id_unless_given_a_kid() -> None:
    public = PrivateKey.generate().public_key()
    assert new_key_info(public, T0, LIFETIME).kid == public.key_id
    assert new_key_info(public, T0, LIFETIME, kid="test-key-001").kid == "test-key-001"
    with pytest.raises(InvalidRequest):
        new_key_info(public, T0, timedelta(0))
    with pytest.raises(InvalidRequest):
        KeyInfo("k", public, datetime(2026, 1, 1), datetime(2026, 2, 1))  # naive instants


@pytest.mark.req("engram.core.keyring-active-key")
def test_the_active_key_is_the_newest_unretired_unexpired_one() -> None:
    old, new = _key(T0, "old"), _key(T0 + DAY, "new")
    assert active_key([old, new], T0) is old  # "new" does not exist yet at T0
    assert active_key([old, new], T0 + 2 * DAY) is new
    assert active_key([old, retire(new, T0 + 3 * DAY)], T0 + 3 * DAY) is old
    assert active_key([old, new], T0 + DAY + LIFETIME) is None  # both expired


@pytest.mark.req("engram.context.p3.key-fields")
def test_to_wire_is_the_published_shape() -> None:
    info = _key(T0, "test-key-001")
    assert info.to_wire() == {
        "kid": "test-key-001",
        "alg": "Ed25519",
        "public_key": info.public_key.b64url,
        "created_at": "2026-01-01T10:00:00Z",
        "expires_at": "2026-04-01T10:00:00Z",
        "status": "active",
    }
    assert retire(info, T0 + DAY).to_wire()["status"] == "retired"


@pytest.mark.req("engram.core.keyring-retired-published")
def test_retiring_keeps_the_first_retirement_instant() -> None:
    info = retire(_key(T0), T0 + DAY)
    assert retire(info, T0 + 2 * DAY).retired_at == T0 + DAY


@pytest.mark.req("engram.core.keyring-retired-published")
def test_a_retired_key_stays_published_until_what_it_signed_has_expired() -> None:
    info = _key(T0, "k1")
    info = note_signed(info, T0 + DAY + timedelta(hours=12))
    info = note_signed(info, T0 + DAY)  # an earlier expiry never shortens the window
    retired = retire(info, T0 + DAY)
    assert retired.published_until == T0 + DAY + timedelta(hours=12)
    assert not retired.can_sign(T0 + DAY)
    assert published_keys([retired], T0 + DAY + timedelta(hours=12)) == [retired]
    assert published_keys([retired], T0 + DAY + timedelta(hours=12, seconds=1)) == []


@pytest.mark.req("engram.core.keyring-retired-published")
def test_an_expired_key_stays_published_for_what_it_signed_just_before_expiry() -> None:
    info = note_signed(_key(T0), T0 + LIFETIME + timedelta(hours=24))
    after_expiry = T0 + LIFETIME + timedelta(hours=1)
    assert not info.can_sign(after_expiry)
    assert info.is_published(after_expiry)


@pytest.mark.req("engram.core.keyring-retired-published")
def test_a_retired_key_that_signed_nothing_is_withdrawn_at_once() -> None:
    info = retire(_key(T0), T0 + DAY)
    assert published_keys([info], T0 + DAY) == []


@pytest.mark.req("engram.core.keyring-active-key", "engram.core.keyring-retired-published")
def test_rotation_plan_creates_before_expiry_and_retires_superseded_keys() -> None:
    first = note_signed(_key(T0, "first"), T0 + timedelta(hours=20))
    plan = plan_rotation([first], T0 + DAY, renew_before=timedelta(days=7))
    assert (plan.active, plan.create, plan.retire) == (first, False, ())

    near_expiry = T0 + LIFETIME - timedelta(days=3)
    plan = plan_rotation([first], near_expiry, renew_before=timedelta(days=7))
    assert plan.create
    assert plan.active is first
    assert plan.retire == ()

    second = _key(near_expiry, "second")
    plan = plan_rotation([first, second], near_expiry)
    assert plan.active is second
    assert not plan.create
    assert plan.retire == (first,)
    first = retire(first, near_expiry)
    plan = plan_rotation([first, second], near_expiry)
    assert plan.published == (second,)  # first's signatures expired long ago
    assert plan.withdrawn == (first,)


@pytest.mark.req("engram.core.keyring-active-key")
def test_rotation_plan_with_no_usable_key_asks_for_one() -> None:
    plan = plan_rotation([], T0)
    assert (plan.active, plan.create, plan.published) == (None, True, ())
    expired = _key(T0 - LIFETIME - DAY)
    plan = plan_rotation([expired], T0)
    assert plan.create
    assert plan.retire == (expired,)
