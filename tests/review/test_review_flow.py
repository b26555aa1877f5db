"""The review page's job: the subject signs in, sees each pending correction beside the belief it
would change, confirms or rejects it, and reads the belief's history; the next signed export
carries the outcome (docs/spec/review-page.md, "Pages")."""

from __future__ import annotations

import hashlib
import html

import pytest
from review_kit import ReviewKit, hidden

from engram.context import (
    CorrectionStatus,
    Permission,
    belief_history,
    create_subject,
    get_belief,
    get_correction,
    propose_correction,
)


@pytest.mark.req("engram.review.sign-in-confirm-token", "engram.review.session-hashed")
async def test_signing_in_with_a_confirm_token_opens_a_session_stored_only_hashed(
    kit: ReviewKit,
) -> None:
    signed_in = await kit.sign_in(kit.token(Permission.CONFIRM))

    assert signed_in.status_code == 303
    assert signed_in.headers["location"] == "/review?notice=signed-in"
    secret = kit.client.cookies["engram_review"]
    with kit.store.read() as tx:
        rows = tx.execute("SELECT * FROM review_sessions")
    assert [r["session_hash"] for r in rows] == [hashlib.sha256(secret.encode()).hexdigest()]
    assert secret not in str(rows)
    page = (await kit.client.get(signed_in.headers["location"])).text
    assert "Hello, Ada Example" in page
    assert "You are signed in." in page


@pytest.mark.req("engram.review.pending-beside-current")
async def test_a_pending_correction_shows_beside_the_current_belief(kit: ReviewKit) -> None:
    correction = kit.propose("Lives in Leeds and walks to work.", runtime="assistant-7")
    await kit.sign_in()

    page = await kit.home()

    card = page[page.index(f'id="correction-{correction.id}"') :]
    card = card[: card.index("</article>")]
    assert "Lives in London and cycles to work." in card  # now
    assert "Lives in Leeds and walks to work." in card  # proposed
    assert card.index("London") < card.index("Leeds")
    assert "assistant-7" in card
    assert "1 proposed correction waits for your decision." in page


@pytest.mark.req("engram.review.confirm-applies")
async def test_confirming_applies_the_value_and_the_next_export_carries_it(
    kit: ReviewKit,
) -> None:
    correction = kit.propose("Lives in Leeds and walks to work.")
    belief_id = correction.belief_id
    await kit.sign_in()

    done = await kit.decide(correction.id, "confirm", await kit.csrf())

    assert done.status_code == 303
    assert done.headers["location"] == "/review?notice=confirmed"
    page = (await kit.client.get(done.headers["location"])).text
    assert "Confirmed." in page
    assert "Nothing is waiting for you." in page
    belief = get_belief(kit.store, kit.subject_id, belief_id)
    assert (belief.statement, belief.version) == ("Lives in Leeds and walks to work.", 2)
    export = await kit.signed_export()
    assert {"id": belief_id, "statement": "Lives in Leeds and walks to work."}.items() <= next(
        b for b in export["beliefs"] if b["id"] == belief_id
    ).items()
    newest = export["evolution"][0]
    assert (newest["belief_id"], newest["change"], newest["correction_id"]) == (
        belief_id,
        "corrected",
        correction.id,
    )
    assert newest["previous"] == "Lives in London and cycles to work."


@pytest.mark.req("engram.review.reject-keeps")
async def test_rejecting_leaves_the_belief_unchanged(kit: ReviewKit) -> None:
    correction = kit.propose("Lives on the moon.")
    await kit.sign_in()

    done = await kit.decide(correction.id, "reject", await kit.csrf())

    assert done.headers["location"] == "/review?notice=rejected"
    assert get_correction(kit.store, kit.subject_id, correction.id).status is (
        CorrectionStatus.REJECTED
    )
    belief = get_belief(kit.store, kit.subject_id, correction.belief_id)
    assert (belief.statement, belief.version) == ("Lives in London and cycles to work.", 1)
    page = (await kit.client.get(done.headers["location"])).text
    assert "Rejected. The belief is unchanged." in page
    assert "Recent decisions" in page


@pytest.mark.req("engram.review.history")
async def test_the_history_page_lists_every_change_newest_first(kit: ReviewKit) -> None:
    correction = kit.propose("Lives in Leeds.", runtime="assistant-7")
    await kit.sign_in()
    await kit.decide(correction.id, "confirm", await kit.csrf())

    page = await kit.client.get(f"/review/beliefs/{correction.belief_id}")

    assert page.status_code == 200
    entries = page.text.split('<li class="entry">')[1:]
    assert len(entries) == len(belief_history(kit.store, kit.subject_id, correction.belief_id))
    assert "Corrected" in entries[0]
    assert "version 2" in entries[0]
    assert "<del>Lives in London and cycles to work.</del>" in entries[0]
    assert "<ins>Lives in Leeds.</ins>" in entries[0]
    assert "assistant-7" in entries[0]
    assert "Created" in entries[1]
    assert "version 1" in entries[1]


@pytest.mark.req("engram.review.history")
async def test_the_history_page_offers_the_corrections_waiting_for_that_belief(
    kit: ReviewKit,
) -> None:
    correction = kit.propose("Lives in York.")
    await kit.sign_in()

    page = await kit.client.get(f"/review/beliefs/{correction.belief_id}")

    assert f"/review/corrections/{correction.id}/confirm" in page.text
    assert hidden(page.text, "csrf_token") == await kit.csrf()


@pytest.mark.req("engram.review.pending-beside-current")
async def test_a_proposal_for_an_unknown_belief_id_is_shown_as_a_new_belief(
    kit: ReviewKit,
) -> None:
    correction = propose_correction(
        kit.store, kit.clock, kit.subject_id, "test", "Speaks Welsh.", "checklist"
    )
    await kit.sign_in()

    page = await kit.home()
    card = page[page.index(f'id="correction-{correction.id}"') :]
    assert "new belief" in card[: card.index("</article>")]

    await kit.decide(correction.id, "confirm", await kit.csrf())
    export = await kit.signed_export()
    assert "Speaks Welsh." in [b["statement"] for b in export["beliefs"]]


async def test_another_subjects_correction_cannot_be_decided(kit: ReviewKit) -> None:
    other = create_subject(kit.store, kit.clock, "Grace", "UTC")
    foreign = propose_correction(kit.store, kit.clock, other.id, "test", "x", "rt")
    await kit.sign_in()

    refused = await kit.decide(foreign.id, "confirm", await kit.csrf())

    assert refused.status_code == 404
    assert get_correction(kit.store, other.id, foreign.id).status is CorrectionStatus.PENDING


async def test_deciding_twice_says_it_was_already_decided(kit: ReviewKit) -> None:
    correction = kit.propose("Lives in Leeds.")
    await kit.sign_in()
    csrf = await kit.csrf()
    await kit.decide(correction.id, "confirm", csrf)

    again = await kit.decide(correction.id, "reject", csrf)

    assert again.status_code == 409
    assert "Already decided" in again.text
    assert get_correction(kit.store, kit.subject_id, correction.id).status is (
        CorrectionStatus.CONFIRMED
    )


@pytest.mark.req("engram.review.pending-beside-current")
async def test_the_dashboard_lists_every_live_belief(kit: ReviewKit) -> None:
    await kit.sign_in()

    page = await kit.home()

    for belief in kit.demo.beliefs:
        assert html.escape(belief.statement) in page
        assert f'href="/review/beliefs/{belief.id}"' in page
