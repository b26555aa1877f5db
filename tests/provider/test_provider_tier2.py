"""Tier 2 (Writer): corrections wait for the subject; diffs carry changes and tombstones."""

from __future__ import annotations

from datetime import timedelta

import pytest
from provider_harness import Provider

from engram.context import delete_belief, list_pending_corrections
from engram.core.clock import format_instant

CHECKLIST_BODY = {
    "belief_id": "test",
    "new_value": "test",
    "runtime_id": "test",
    "timestamp": "2026-01-01T00:00:00Z",
}


def _belief(provider: Provider, category: str) -> str:
    return next(b.id for b in provider.demo.beliefs if b.category == category)


@pytest.mark.req("engram.context.p2.correct-pending")
def test_a_correction_is_accepted_as_pending_user_confirmation(provider: Provider) -> None:
    belief_id = _belief(provider, "preference")

    response = provider.client.post(
        "/v1/context/correct",
        headers=provider.headers(),
        json={"belief_id": belief_id, "new_value": "Prefers Rust examples.", "runtime_id": "rt-1"},
    )

    assert response.status_code == 202
    answer = response.json()
    assert answer["status"] == "pending_user_confirmation"
    assert answer["correction_id"] == answer["id"]
    assert answer["belief_id"] == belief_id
    pending = list_pending_corrections(provider.store, provider.demo.subject.id)
    assert [c.id for c in pending] == [answer["id"]]


@pytest.mark.req("engram.context.p2.runtime-id-required", "engram.context.error-shape")
@pytest.mark.parametrize("runtime_id", [None, "", "   ", 7])
def test_a_correction_without_a_runtime_id_is_refused(
    provider: Provider, runtime_id: object
) -> None:
    body: dict[str, object] = {"belief_id": _belief(provider, "goal"), "new_value": "x"}
    if runtime_id is not None:
        body["runtime_id"] = runtime_id

    response = provider.client.post("/v1/context/correct", headers=provider.headers(), json=body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert "runtime_id" in error["message"]
    assert list_pending_corrections(provider.store, provider.demo.subject.id) == []


@pytest.mark.req("engram.context.p2.correction-not-applied", "engram.provider.confirm-applies")
def test_a_correction_changes_nothing_until_the_subject_confirms_it(provider: Provider) -> None:
    belief_id = _belief(provider, "professional")
    before = provider.client.get("/v1/context", headers=provider.headers()).json()
    proposed = provider.client.post(
        "/v1/context/correct",
        headers=provider.headers(),
        json={"belief_id": belief_id, "new_value": "Works as an SRE.", "runtime_id": "rt"},
    ).json()

    provider.clock.advance(timedelta(minutes=5))
    pending = provider.client.get("/v1/context", headers=provider.headers()).json()

    assert pending["beliefs"] == before["beliefs"]
    assert pending["system_prompt_injection"] == before["system_prompt_injection"]
    assert [c["status"] for c in pending["corrections"]] == ["pending_user_confirmation"]
    assert "SRE" not in pending["system_prompt_injection"]

    confirmed = provider.client.post(
        f"/v1/corrections/{proposed['id']}/confirm", headers=provider.headers()
    )
    after = provider.client.get("/v1/context", headers=provider.headers()).json()

    assert confirmed.status_code == 200
    assert confirmed.json()["status"] == "confirmed"
    belief = next(b for b in after["beliefs"] if b["id"] == belief_id)
    assert belief["statement"] == "Works as an SRE."
    assert belief["version"] == 2
    assert "Works as an SRE." in after["system_prompt_injection"]
    newest = after["evolution"][0]
    assert newest["belief_id"] == belief_id
    assert newest["change"] == "corrected"
    assert newest["value"] == "Works as an SRE."
    assert newest["previous"] == "Works as a data engineer at a logistics company."
    assert newest["correction_id"] == proposed["id"]
    assert newest["runtime_id"] == "rt"


@pytest.mark.req("engram.provider.confirm-applies")
def test_a_rejected_correction_leaves_the_belief_as_it_was(provider: Provider) -> None:
    belief_id = _belief(provider, "goal")
    proposed = provider.client.post(
        "/v1/context/correct",
        headers=provider.headers(),
        json={"belief_id": belief_id, "new_value": "No talk.", "runtime_id": "rt"},
    ).json()

    rejected = provider.client.post(
        f"/v1/corrections/{proposed['id']}/reject", headers=provider.headers()
    )
    again = provider.client.post(
        f"/v1/corrections/{proposed['id']}/confirm", headers=provider.headers()
    )

    assert rejected.json()["status"] == "rejected"
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "conflict"
    beliefs = provider.client.get("/v1/beliefs", headers=provider.headers()).json()["beliefs"]
    assert next(b for b in beliefs if b["id"] == belief_id)["version"] == 1


@pytest.mark.req("engram.context.p2.diff-tombstones", "engram.provider.admin-delete")
def test_the_diff_carries_changed_beliefs_and_tombstones_since_the_instant(
    provider: Provider,
) -> None:
    since = format_instant(provider.clock.now())
    provider.clock.advance(timedelta(seconds=10))
    added = provider.client.post(
        "/v1/beliefs",
        headers=provider.headers(),
        json={"category": "preference", "statement": "Likes dark mode.", "confidence": 0.6},
    )
    gone_id = _belief(provider, "goal")
    deleted = provider.client.delete(f"/v1/beliefs/{gone_id}", headers=provider.headers())

    response = provider.client.get(
        "/v1/context/diff", params={"since": since}, headers=provider.headers()
    )

    assert added.status_code == 201
    assert deleted.status_code == 200
    assert deleted.json()["deleted"] is True
    assert response.status_code == 200
    diff = response.json()
    assert [c["id"] for c in diff["changes"]] == [added.json()["id"]]
    assert [t["id"] for t in diff["tombstones"]] == [gone_id]
    assert diff["tombstones"][0]["deleted"] is True
    assert diff["since"] == since
    assert diff["until"] == diff["issued_at"]
    later = provider.client.get(
        "/v1/context/diff", params={"since": diff["until"]}, headers=provider.headers()
    ).json()
    assert later["changes"] == []
    assert later["tombstones"] == []
    export = provider.client.get("/v1/context", headers=provider.headers()).json()
    assert gone_id not in {b["id"] for b in export["beliefs"]}


@pytest.mark.req("engram.context.p2.diff-tombstones", "engram.context.error-shape")
@pytest.mark.parametrize("since", ["yesterday", "2026-13-01T00:00:00Z", "2026-01-01", ""])
def test_a_malformed_since_is_400_invalid_request(provider: Provider, since: str) -> None:
    response = provider.client.get(
        "/v1/context/diff", params={"since": since}, headers=provider.headers()
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert response.json()["error"]["status"] == 400


@pytest.mark.req("engram.provider.unknown-belief-proposal", "engram.context.checklist")
def test_a_correction_of_a_never_issued_id_is_pending_and_creates_a_belief_on_confirmation(
    provider: Provider,
) -> None:
    proposed = provider.client.post(
        "/v1/context/correct", headers=provider.headers(), json=CHECKLIST_BODY
    )
    assert proposed.status_code == 202
    assert proposed.json()["status"] == "pending_user_confirmation"

    confirmed = provider.client.post(
        f"/v1/corrections/{proposed.json()['id']}/confirm", headers=provider.headers()
    ).json()

    new_id = confirmed["applied_belief_id"]
    assert new_id not in (None, "test")
    export = provider.client.get("/v1/context", headers=provider.headers()).json()
    created = next(b for b in export["beliefs"] if b["id"] == new_id)
    assert created["category"] == "general"
    assert created["statement"] == "test"


@pytest.mark.req("engram.provider.deleted-belief-not-found", "engram.context.error-shape")
def test_a_correction_of_a_deleted_belief_is_404_belief_not_found(provider: Provider) -> None:
    belief_id = _belief(provider, "personal")
    delete_belief(provider.store, provider.clock, provider.demo.subject.id, belief_id)

    response = provider.client.post(
        "/v1/context/correct",
        headers=provider.headers(),
        json={"belief_id": belief_id, "new_value": "Moved.", "runtime_id": "rt"},
    )
    unknown_path = provider.client.delete("/v1/beliefs/no-such-belief", headers=provider.headers())

    assert response.status_code == 404
    assert response.json()["error"] == {
        "code": "belief_not_found",
        "message": response.json()["error"]["message"],
        "status": 404,
    }
    assert unknown_path.status_code == 404
    assert unknown_path.json()["error"]["code"] == "belief_not_found"
