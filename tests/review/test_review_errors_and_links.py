"""Error pages that help without leaking internals, and one-time sign-in links
(docs/spec/review-page.md, "Errors" and "One-time links")."""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from review_kit import ReviewKit, hidden

from engram.errors import InvalidRequest, UserNotFound
from engram.provider.review import create_review_link
from engram.provider.review.internals import MAX_LINK_TTL

INTERNALS = ("Traceback", "sqlite", "psycopg", "SELECT", "review_sessions", ".py", "StoreError")


async def _follow_link(kit: ReviewKit, code: str) -> str:
    landing = await kit.client.get("/review/link", params={"code": code})
    assert landing.status_code == 200
    return landing.text


async def _redeem(kit: ReviewKit, code: str, login: str) -> int:
    posted = await kit.client.post("/review/link", data={"code": code, "login_csrf": login})
    return posted.status_code


@pytest.mark.req("engram.review.errors-html")
async def test_an_unknown_review_address_gets_a_helpful_html_404(kit: ReviewKit) -> None:
    missing = await kit.client.get("/review/no/such/page")

    assert missing.status_code == 404
    assert missing.headers["content-type"] == "text/html; charset=utf-8"
    assert "<h1>Not found</h1>" in missing.text
    assert 'href="/review"' in missing.text


@pytest.mark.req("engram.review.errors-html")
async def test_a_wrong_method_gets_an_html_405_naming_the_allowed_ones(kit: ReviewKit) -> None:
    wrong = await kit.client.put("/review")
    get_signin = await kit.client.get("/review/signin")

    assert wrong.status_code == 405
    assert wrong.headers["allow"] == "GET, HEAD"
    assert get_signin.status_code == 405
    assert get_signin.headers["allow"] == "POST"
    assert "Not possible here" in wrong.text


@pytest.mark.req("engram.review.errors-html")
async def test_a_post_that_is_not_a_form_is_a_400_page(kit: ReviewKit) -> None:
    await kit.sign_in()

    as_json = await kit.client.post("/review/signout", json={"csrf_token": "x"})
    too_big = await kit.client.post("/review/signout", data={"csrf_token": "x" * 9000})

    for refused in (as_json, too_big):
        assert refused.status_code == 400
        assert "That request could not be used" in refused.text


@pytest.mark.req("engram.review.errors-html")
async def test_a_store_failure_is_a_500_page_that_leaks_nothing(
    kit: ReviewKit, caplog: pytest.LogCaptureFixture
) -> None:
    await kit.sign_in()
    with kit.store.transaction() as tx:
        tx.execute("DROP TABLE review_sessions")

    with caplog.at_level(logging.ERROR, logger="engram.provider"):
        failed = await kit.client.get("/review")

    assert failed.status_code == 500
    assert "Something went wrong on our side" in failed.text
    assert failed.headers["x-request-id"] in failed.text  # a reference for the administrator
    for secret in INTERNALS:
        assert secret not in failed.text
    assert failed.headers["x-request-id"] in caplog.text


@pytest.mark.req("engram.review.errors-html")
async def test_a_notice_parameter_is_never_echoed(kit: ReviewKit) -> None:
    page = await kit.client.get("/review", params={"notice": "<b>you won</b>"})

    assert "you won" not in page.text


@pytest.mark.req("engram.review.one-time-link")
async def test_a_one_time_link_signs_in_once_and_is_stored_hashed(kit: ReviewKit) -> None:
    link = create_review_link(kit.store, kit.clock, kit.subject_id)

    landing = await _follow_link(kit, link.code)
    assert "Ada Example" in landing
    login = hidden(landing, "login_csrf")
    assert await _redeem(kit, link.code, login) == 303
    assert "Hello, Ada Example" in await kit.home()

    with kit.store.read() as tx:
        rows = tx.execute("SELECT * FROM review_links")
    assert [r["link_hash"] for r in rows] == [hashlib.sha256(link.code.encode()).hexdigest()]
    assert link.code not in str(rows)

    kit.client.cookies.clear()
    again = await kit.client.get("/review/link", params={"code": link.code})
    assert again.status_code == 401
    assert "already used" in again.text
    form = await kit.client.get("/review")
    assert await _redeem(kit, link.code, hidden(form.text, "login_csrf")) == 401


@pytest.mark.req("engram.review.one-time-link")
async def test_following_a_link_does_not_spend_it(kit: ReviewKit) -> None:
    link = create_review_link(kit.store, kit.clock, kit.subject_id)

    await _follow_link(kit, link.code)  # e.g. a mail client's link preview
    landing = await _follow_link(kit, link.code)

    assert await _redeem(kit, link.code, hidden(landing, "login_csrf")) == 303


@pytest.mark.req("engram.review.one-time-link")
async def test_an_expired_link_is_refused_with_a_way_forward(kit: ReviewKit) -> None:
    link = create_review_link(kit.store, kit.clock, kit.subject_id, timedelta(minutes=5))
    landing = await _follow_link(kit, link.code)
    kit.clock.advance(timedelta(minutes=5))

    late_view = await kit.client.get("/review/link", params={"code": link.code})
    late_post = await _redeem(kit, link.code, hidden(landing, "login_csrf"))

    assert late_view.status_code == 401
    assert "expired" in late_view.text
    assert late_post == 401


@pytest.mark.req("engram.review.one-time-link")
async def test_a_forged_or_malformed_link_is_refused(kit: ReviewKit) -> None:
    for code in ("rl_" + "A" * 43, "nonsense", "", "rl_<script>"):
        refused = await kit.client.get("/review/link", params={"code": code})
        assert refused.status_code == 401
        assert "<script>" not in refused.text


@pytest.mark.req("engram.review.one-time-link")
async def test_link_lifetimes_are_bounded_and_subjects_must_exist(kit: ReviewKit) -> None:
    with pytest.raises(InvalidRequest):
        create_review_link(kit.store, kit.clock, kit.subject_id, MAX_LINK_TTL + timedelta(1))
    with pytest.raises(InvalidRequest):
        create_review_link(kit.store, kit.clock, kit.subject_id, timedelta(0))
    with pytest.raises(UserNotFound):
        create_review_link(kit.store, kit.clock, "no-such-subject")


@pytest.mark.req("engram.review.one-time-link")
async def test_the_link_landing_page_shows_the_expiry_in_the_subjects_zone(
    kit: ReviewKit,
) -> None:
    link = create_review_link(kit.store, kit.clock, kit.subject_id, timedelta(hours=2))

    landing = await _follow_link(kit, link.code)

    assert '<time datetime="2026-01-01T12:00:00Z">1 Jan 2026, 12:00 GMT</time>' in landing
    assert urlsplit(kit.base_url).netloc not in landing  # forms post to relative paths
