"""Bearer tokens: shown once, stored hashed, bound to a subject and permissions, expiring."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engram.context import (
    Permission,
    authenticate_token,
    create_subject,
    issue_token,
    list_tokens,
    revoke_token,
)
from engram.core.clock import FixedClock
from engram.errors import InvalidRequest, TokenExpired, Unauthorized
from engram.store import Store


@pytest.mark.req("engram.provider.tokens-hashed")
def test_only_a_hash_of_the_token_is_stored(any_store: Store) -> None:
    clock = FixedClock()
    subject = create_subject(any_store, clock, "Ada", "UTC")

    token = issue_token(any_store, clock, subject.id, ["read"])

    with any_store.read() as tx:
        rows = tx.execute("SELECT * FROM context_tokens")
    stored = " ".join(str(v) for row in rows for v in row.values())
    assert token not in stored
    assert token[4:] not in stored
    assert len(rows) == 1
    assert len(rows[0]["token_hash"]) == 64
    assert [t.token_id for t in list_tokens(any_store, subject.id)] == [rows[0]["token_id"]]


@pytest.mark.req("engram.provider.token-permissions")
def test_a_token_grants_its_subject_and_permissions_until_it_expires(any_store: Store) -> None:
    clock = FixedClock()
    subject = create_subject(any_store, clock, "Ada", "UTC")
    token = issue_token(any_store, clock, subject.id, ["read", "correct"], timedelta(hours=1))

    grant = authenticate_token(any_store, clock, token)
    clock.advance(timedelta(hours=1))

    assert grant.subject_id == subject.id
    assert grant.allows(Permission.READ)
    assert grant.allows(Permission.CORRECT)
    assert not grant.allows(Permission.CONFIRM)
    assert not grant.allows(Permission.ADMIN)
    with pytest.raises(TokenExpired):
        authenticate_token(any_store, clock, token)


@pytest.mark.req("engram.provider.token-permissions")
def test_admin_implies_every_permission_and_revoked_tokens_are_refused(any_store: Store) -> None:
    clock = FixedClock()
    subject = create_subject(any_store, clock, "Ada", "UTC")
    token = issue_token(any_store, clock, subject.id, [Permission.ADMIN])
    grant = authenticate_token(any_store, clock, token)

    revoke_token(any_store, clock, subject.id, grant.token_id)

    assert all(grant.allows(p) for p in Permission)
    with pytest.raises(Unauthorized):
        authenticate_token(any_store, clock, token)
    with pytest.raises(Unauthorized):
        authenticate_token(any_store, clock, "eng_" + "A" * 43)


@pytest.mark.req("engram.provider.token-permissions")
@pytest.mark.parametrize(
    ("permissions", "ttl", "complaint"),
    [
        (["write"], timedelta(days=1), "permission"),
        ([], timedelta(days=1), "at least one"),
        (["read"], timedelta(0), "ttl"),
        (["read"], timedelta(days=400), "ttl"),
    ],
)
def test_bad_token_requests_are_refused(
    any_store: Store, permissions: list[str], ttl: timedelta, complaint: str
) -> None:
    clock = FixedClock()
    subject = create_subject(any_store, clock, "Ada", "UTC")

    with pytest.raises(InvalidRequest, match=complaint):
        issue_token(any_store, clock, subject.id, permissions, ttl)
