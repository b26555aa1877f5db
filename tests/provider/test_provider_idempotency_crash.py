"""An idempotent POST is one write transaction: its claim, the correction and the stored answer
commit together, so a provider process killed at any point leaves all of it or none of it
(docs/spec/context-provider.md "Production profile"; storage.md "Idempotency records").

Each case kills a real provider process (``os._exit``: no clean-up, no rollback by us) at one
point of the request, then retries the same ``Idempotency-Key`` against a fresh process on the
same database. Before the single transaction, dying after the correction was committed and
before the answer was stored left the key claimed without an answer: every retry was
``409 conflict`` for the whole 24 h retention although the correction existed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from engram.context import Permission, ensure_schema, issue_token, list_corrections
from engram.context.internals import seed_demo
from engram.core.clock import SystemClock
from engram.store import Store, open_store

# The provider in a child process; ``DIE`` says where it kills itself during the POST.
CHILD = textwrap.dedent(
    """
    import os, sys
    from contextlib import contextmanager
    from starlette.testclient import TestClient
    from engram.provider import ProviderConfig, create_app
    from engram.store import open_store
    from engram.store.idempotency import IdempotencyStore

    url, token, belief_id, die = sys.argv[1:5]
    store = open_store(url)
    app = create_app(ProviderConfig(public_url="https://provider.test"), store)
    if die == "after-commit":
        # The transaction commits, then the process dies before the answer leaves it.
        real = store.transaction

        @contextmanager
        def dying():
            with real() as tx:
                yield tx
            os._exit(137)

        store.transaction = dying
    elif die == "before-answer":
        # The correction is written in the transaction; the process dies before it commits.
        def answer(*_args):
            os._exit(137)

        IdempotencyStore.answer = answer
    client = TestClient(app, base_url="https://provider.test")
    response = client.post(
        "/v1/context/correct",
        headers={"Authorization": "Bearer " + token, "Idempotency-Key": "crash-1"},
        json={"belief_id": belief_id, "new_value": "Prefers Go.", "runtime_id": "rt-crash"},
    )
    print(response.status_code, response.headers.get("idempotent-replayed"), flush=True)
    """
)


def _post_in_child(
    url: str, token: str, belief_id: str, die: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, url, token, belief_id, die],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def seeded(any_database_url: str) -> tuple[str, str, str]:
    store: Store = open_store(any_database_url)
    try:
        ensure_schema(store)
        demo = seed_demo(store, SystemClock())
        token = issue_token(store, SystemClock(), demo.subject.id, [Permission.CORRECT])
        belief = next(b for b in demo.beliefs if b.category == "preference")
        return any_database_url, token, belief.id
    finally:
        store.close()


def _corrections(url: str) -> int:
    store = open_store(url)
    try:
        subject = store_subject(store)
        return len(list_corrections(store, subject))
    finally:
        store.close()


def store_subject(store: Store) -> str:
    with store.read() as tx:
        return str(tx.scalar("SELECT id FROM context_subjects"))


@pytest.mark.req("engram.provider.idempotency-one-transaction")
def test_killed_after_the_commit_a_retry_gets_the_stored_answer(
    seeded: tuple[str, str, str],
) -> None:
    url, token, belief_id = seeded
    killed = _post_in_child(url, token, belief_id, "after-commit")
    assert killed.returncode == 137, killed.stderr
    assert _corrections(url) == 1  # the correction was committed, the client never heard

    retry = _post_in_child(url, token, belief_id, "no")
    assert retry.returncode == 0, retry.stderr
    assert retry.stdout.split() == ["202", "true"]  # the stored answer, replayed; not 409
    assert _corrections(url) == 1


@pytest.mark.req("engram.provider.idempotency-one-transaction")
def test_killed_before_the_commit_nothing_stays_and_the_retry_runs_once(
    seeded: tuple[str, str, str],
) -> None:
    url, token, belief_id = seeded
    killed = _post_in_child(url, token, belief_id, "before-answer")
    assert killed.returncode == 137, killed.stderr
    assert _corrections(url) == 0  # neither the correction nor the claim survived

    retry = _post_in_child(url, token, belief_id, "no")
    assert retry.stdout.split() == ["202", "None"], retry.stderr  # run afresh, not replayed
    again = _post_in_child(url, token, belief_id, "no")
    assert again.stdout.split() == ["202", "true"]
    assert _corrections(url) == 1
