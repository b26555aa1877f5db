"""The review page's defences: permissions, CSRF, cross-origin posts, cookie flags, escaping, the
Content-Security-Policy and session expiry (docs/spec/review-page.md, "Security")."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from review_kit import ReviewKit, hidden, make_kit

from engram.context import (
    CorrectionStatus,
    Permission,
    add_belief,
    get_correction,
    list_tokens,
    propose_correction,
    revoke_token,
)
from engram.provider.review.internals import CONTENT_SECURITY_POLICY
from engram.store import Store

XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _session_rows(kit: ReviewKit) -> int:
    with kit.store.read() as tx:
        return int(tx.scalar("SELECT COUNT(*) FROM review_sessions"))


@pytest.mark.req("engram.review.sign-in-confirm-token")
async def test_a_token_without_the_confirm_permission_cannot_sign_in(kit: ReviewKit) -> None:
    refused = await kit.sign_in(kit.token(Permission.READ, Permission.CORRECT))

    assert refused.status_code == 403
    assert "needs the confirm" in refused.text
    assert 'name="token"' in refused.text  # the form again, to try another token
    assert _session_rows(kit) == 0


@pytest.mark.req("engram.review.sign-in-confirm-token")
async def test_unknown_and_expired_tokens_cannot_sign_in(kit: ReviewKit) -> None:
    short = kit.token(Permission.CONFIRM, ttl=timedelta(minutes=1))
    unknown = await kit.sign_in("eng_" + "A" * 43)
    kit.clock.advance(timedelta(minutes=2))
    expired = await kit.sign_in(short)

    assert unknown.status_code == 401
    assert "not recognised" in unknown.text
    assert expired.status_code == 401
    assert "has expired" in expired.text
    assert _session_rows(kit) == 0


@pytest.mark.req("engram.review.session-hashed")
async def test_cookies_are_httponly_and_samesite_strict_and_not_secure_over_http(
    kit: ReviewKit,
) -> None:
    form = await kit.client.get("/review")
    signed_in = await kit.sign_in()

    for response, name in ((form, "engram_review_login"), (signed_in, "engram_review")):
        cookie = next(
            c for c in response.headers.get_list("set-cookie") if c.startswith(name + "=")
        )
        flags = [f.strip().lower() for f in cookie.split(";")[1:]]
        assert "httponly" in flags
        assert "samesite=strict" in flags
        assert "path=/" in flags  # one session serves /review and /memories
        assert "secure" not in flags


@pytest.mark.req("engram.review.session-hashed")
async def test_over_https_the_session_cookie_is_secure_and_host_bound(
    https_kit: ReviewKit,
) -> None:
    signed_in = await https_kit.sign_in()

    cookie = next(
        c for c in signed_in.headers.get_list("set-cookie") if c.startswith("__Host-engram_review=")
    )
    flags = [f.strip().lower() for f in cookie.split(";")[1:]]
    assert {"httponly", "secure", "samesite=strict", "path=/"} <= set(flags)
    assert "Hello, Ada Example" in await https_kit.home()


@pytest.mark.req("engram.review.csrf")
async def test_a_decision_without_or_with_a_wrong_csrf_token_is_refused(kit: ReviewKit) -> None:
    correction = kit.propose("Lives in Leeds.")
    await kit.sign_in()
    good = await kit.csrf()

    missing = await kit.decide(correction.id, "confirm", None)
    wrong = await kit.decide(correction.id, "confirm", good[:-2] + "xx")
    non_ascii = await kit.decide(correction.id, "reject", "é" * 43)

    for refused in (missing, wrong, non_ascii):
        assert refused.status_code == 403
        assert "security token" in refused.text
    assert get_correction(kit.store, kit.subject_id, correction.id).status is (
        CorrectionStatus.PENDING
    )
    assert "Hello, Ada Example" in await kit.home()  # a refusal does not end the session


@pytest.mark.req("engram.review.csrf")
async def test_a_csrf_token_from_another_session_is_refused(any_store: Store) -> None:
    first, second = make_kit(any_store), make_kit(any_store)
    async with first.client, second.client:
        await first.sign_in()
        await second.sign_in()
        correction = second.propose("Lives in Leeds.")
        others = await first.csrf()

        refused = await second.decide(correction.id, "confirm", others)

        assert refused.status_code == 403
        assert others != await second.csrf()
        status = get_correction(any_store, second.subject_id, correction.id).status
        assert status is CorrectionStatus.PENDING


@pytest.mark.req("engram.review.csrf")
async def test_sign_in_and_sign_out_forms_are_csrf_protected(kit: ReviewKit) -> None:
    await kit.client.get("/review")
    no_login_token = await kit.client.post("/review/signin", data={"token": kit.demo.token})
    assert no_login_token.status_code == 403
    assert _session_rows(kit) == 0

    await kit.sign_in()
    no_csrf = await kit.client.post("/review/signout", data={"csrf_token": ""})
    assert no_csrf.status_code == 403
    assert _session_rows(kit) == 1


@pytest.mark.req("engram.review.cross-origin-refused")
async def test_posts_from_another_origin_are_refused(kit: ReviewKit) -> None:
    correction = kit.propose("Lives in Leeds.")
    await kit.sign_in()
    csrf = await kit.csrf()

    foreign_origin = await kit.decide(correction.id, "confirm", csrf, origin="https://evil.example")
    cross_site = await kit.decide(
        correction.id, "confirm", csrf, **{"sec-fetch-site": "cross-site"}
    )
    same_origin = await kit.decide(
        correction.id,
        "confirm",
        csrf,
        origin="http://provider.test",
        **{"sec-fetch-site": "same-origin"},
    )

    assert foreign_origin.status_code == 403
    assert cross_site.status_code == 403
    assert same_origin.status_code == 303


@pytest.mark.req("engram.review.escaping")
async def test_html_in_beliefs_and_corrections_renders_as_inert_text(kit: ReviewKit) -> None:
    belief = add_belief(kit.store, kit.clock, kit.subject_id, "general", XSS)
    propose_correction(kit.store, kit.clock, kit.subject_id, belief.id, XSS + "2", XSS[:60])
    await kit.sign_in()

    page = await kit.home()
    history = (await kit.client.get(f"/review/beliefs/{belief.id}")).text

    for text in (page, history):
        assert "<script" not in text
        assert "<img" not in text
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text
        assert "onerror=alert(1)&gt;" in text


@pytest.mark.req("engram.review.no-third-party")
async def test_every_page_has_a_strict_csp_and_loads_nothing_from_elsewhere(
    kit: ReviewKit,
) -> None:
    kit.propose("Lives in Leeds.")
    signed_out = await kit.client.get("/review")
    await kit.sign_in()
    pages = [
        signed_out,
        await kit.client.get("/review"),
        await kit.client.get(f"/review/beliefs/{kit.demo.beliefs[0].id}"),
        await kit.client.get("/review/no-such-page"),
    ]

    assert "default-src 'none'" in CONTENT_SECURITY_POLICY
    assert "script-src" not in CONTENT_SECURITY_POLICY  # no script may run at all
    for page in pages:
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert page.headers["x-frame-options"] == "DENY"
        assert page.headers["x-content-type-options"] == "nosniff"
        assert page.headers["referrer-policy"] == "same-origin"
        assert page.headers["cache-control"] == "no-store"
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert "<script" not in page.text
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", page.text)
        assert ' style="' not in page.text  # inline style attributes would break the CSP


@pytest.mark.req("engram.review.session-expiry")
async def test_an_idle_session_expires_and_asks_to_sign_in_again(kit: ReviewKit) -> None:
    correction = kit.propose("Lives in Leeds.")
    await kit.sign_in()
    csrf = await kit.csrf()
    kit.clock.advance(timedelta(minutes=31))

    page = await kit.client.get("/review")
    late = await kit.decide(correction.id, "confirm", csrf)

    assert "Your review session has expired" in page.text
    assert 'name="token"' in page.text
    assert late.status_code == 401
    assert get_correction(kit.store, kit.subject_id, correction.id).status is (
        CorrectionStatus.PENDING
    )
    assert _session_rows(kit) == 0


@pytest.mark.req("engram.review.session-expiry")
async def test_activity_keeps_a_session_alive_until_its_lifetime_ends(kit: ReviewKit) -> None:
    await kit.sign_in()
    for _ in range(16):  # 7 h 44 min of activity, never idle for 30 minutes
        kit.clock.advance(timedelta(minutes=29))
        assert "Hello, Ada Example" in await kit.home()
    kit.clock.advance(timedelta(minutes=17))  # 8 h 1 min after signing in

    page = await kit.client.get("/review")

    assert "Your review session has expired" in page.text


@pytest.mark.req("engram.review.session-expiry")
async def test_revoking_the_token_ends_its_sessions(kit: ReviewKit) -> None:
    token = kit.token(Permission.CONFIRM)
    await kit.sign_in(token)
    token_id = next(t.token_id for t in list_tokens(kit.store, kit.subject_id) if not t.label)
    # the demo token has the label "demo"; ours has none
    revoke_token(kit.store, kit.clock, kit.subject_id, token_id)

    page = await kit.client.get("/review")

    assert 'name="token"' in page.text
    assert "Hello, Ada Example" not in page.text
    assert _session_rows(kit) == 0


@pytest.mark.req("engram.review.sign-out")
async def test_signing_out_ends_the_session_at_once(kit: ReviewKit) -> None:
    correction = kit.propose("Lives in Leeds.")
    await kit.sign_in()
    csrf = await kit.csrf()
    old_cookie = kit.client.cookies["engram_review"]

    out = await kit.client.post("/review/signout", data={"csrf_token": csrf})

    assert out.status_code == 303
    assert "You are signed out." in (await kit.client.get(out.headers["location"])).text
    assert _session_rows(kit) == 0
    kit.client.cookies.set("engram_review", old_cookie, domain="provider.test", path="/review")
    replayed = await kit.decide(correction.id, "confirm", csrf)
    assert replayed.status_code == 401
    assert hidden((await kit.client.get("/review")).text, "login_csrf")
