"""The /memories page through the real app on every backend: sign-in, the list, search, history,
forget, restore and erase (after a second question), and that one subject's session never
reaches another's memories (docs/spec/review-page.md, "Memories")."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from memories_kit import (
    BASE_URL,
    MANIFEST,
    MemoriesKit,
    make_memories_kit,
    manifest_engine,
    texts,
)
from review_kit import hidden

from engram.cli.internals import provider_app_with_mcp
from engram.context import Permission, issue_token
from engram.context.internals import seed_demo
from engram.core.clock import SystemClock
from engram.mcp import SeatSource
from engram.memory import (
    RecordInput,
    get_memory,
    history,
    list_memories,
    outcome,
    record,
    subject_view,
    supersede,
)
from engram.provider import ProviderConfig, create_app
from engram.provider.review import create_review_link
from engram.provider.review.internals import CONTENT_SECURITY_POLICY
from engram.store import Store, open_store


def _path(memory_id: str, *rest: str) -> str:
    return "/".join(["/memories", quote(memory_id, safe=""), *rest])


def _states(kit: MemoriesKit) -> dict[str, str]:
    page = list_memories(subject_view(kit.engine, kit.ada.id), limit=200, own_only=True)
    return {m.memory.id: m.state for m in page.items}


@pytest.mark.req("engram.memory.page.sign-in")
async def test_signed_out_memories_shows_the_sign_in_form_that_lands_back_on_memories(
    mkit: MemoriesKit,
) -> None:
    form = await mkit.client.get("/memories")
    assert form.status_code == 200
    assert "See what your AI tools remember" in form.text
    assert hidden(form.text, "next") == "/memories"

    signed = await mkit.sign_in(mkit.ada_token)

    assert signed.status_code == 303
    assert signed.headers["location"] == "/memories?notice=signed-in"
    page = await mkit.page(signed.headers["location"])
    assert "Hello, Ada Example" in page
    assert 'aria-current="page">Memories</a>' in page
    assert '<a href="/review">Corrections</a>' in page
    # The same session opens the review page, which links back.
    review = await mkit.page("/review")
    assert '<a href="/memories">Memories</a>' in review


@pytest.mark.req("engram.memory.page.sign-in")
async def test_a_sign_in_cannot_be_sent_anywhere_but_the_two_pages(mkit: MemoriesKit) -> None:
    for elsewhere in ("https://evil.example/", "//evil.example", "/v1/context"):
        mkit.client.cookies.clear()
        form = await mkit.client.get("/memories")
        signed = await mkit.client.post(
            "/review/signin",
            data={
                "login_csrf": hidden(form.text, "login_csrf"),
                "token": mkit.ada_token,
                "next": elsewhere,
            },
        )
        assert signed.headers["location"] == "/review?notice=signed-in"


@pytest.mark.req("engram.memory.page.sign-in")
async def test_a_token_without_confirm_is_refused_on_the_memories_sign_in(
    mkit: MemoriesKit,
) -> None:
    reader = issue_token(mkit.store, mkit.clock, mkit.ada.id, [Permission.READ], timedelta(days=1))

    refused = await mkit.sign_in(reader)

    assert refused.status_code == 403
    assert "needs the confirm permission" in refused.text
    assert hidden(refused.text, "next") == "/memories"


@pytest.mark.req("engram.memory.page.list")
async def test_the_list_is_newest_first_in_pages_with_each_state(mkit: MemoriesKit) -> None:
    ids = [
        mkit.remember(mkit.ada, f"Ada's note number {i} about the allotment.") for i in range(23)
    ]
    engine = subject_view(mkit.engine, mkit.ada.id)
    new = supersede(
        engine, ids[0], RecordInput("Ada's allotment moved to plot 12.", "fact"), actor="t"
    )
    await mkit.sign_in(mkit.ada_token)
    await mkit.act(ids[1], "forget")

    first = await mkit.page()
    older = re.search(r'href="(/memories\?cursor=\d+)" rel="next"', first)
    assert older is not None
    second = await mkit.page(older.group(1))

    assert texts(first)[0] == "Ada's allotment moved to plot 12."
    assert texts(first)[1:] == [
        f"Ada's note number {i} about the allotment." for i in range(22, 3, -1)
    ]
    assert texts(second) == [f"Ada's note number {i} about the allotment." for i in (3, 2, 1, 0)]
    assert 'rel="next"' not in second
    assert '<a href="/memories">← Newest</a>' in second
    states = re.findall(r'data-state="(\w+)"', second)
    assert states == ["current", "current", "forgotten", "superseded"]
    assert _path(new.record.memory.id) in first


@pytest.mark.req("engram.memory.page.search")
async def test_search_recalls_the_subjects_own_memories_and_leaves_forgotten_ones_out(
    mkit: MemoriesKit,
) -> None:
    leeds = mkit.remember(mkit.ada, "Ada moved to Leeds in March.")
    mkit.remember(mkit.ada, "Ada prefers green tea in the afternoon.")
    forgotten = mkit.remember(mkit.ada, "Ada once lived near Leeds station.")
    mkit.remember(mkit.grace, "Grace moved to Leeds for a new job.")
    # Shared knowledge of the seat (M2) is not about Ada: it is not on her page either.
    record(mkit.engine, "The team deploys the Leeds office servers on Fridays.", "fact", "M2")
    await mkit.sign_in(mkit.ada_token)
    await mkit.act(forgotten, "forget")

    found = await mkit.page("/memories?q=Leeds")

    assert texts(found) == ["Ada moved to Leeds in March."]
    assert _path(leeds) in found
    assert "Best matches for “Leeds”" in found
    assert 'value="Leeds"' in found
    nothing = await mkit.page("/memories?q=submarine")
    assert texts(nothing) == []
    assert "Nothing you have not forgotten answers that" in nothing
    too_long = await mkit.client.get("/memories", params={"q": "x" * 501})
    assert too_long.status_code == 400


@pytest.mark.req("engram.memory.page.history")
async def test_history_shows_each_event_with_its_time_and_actor(mkit: MemoriesKit) -> None:
    old = mkit.remember(mkit.ada, "Ada lives in London.")
    ada = subject_view(mkit.engine, mkit.ada.id)
    outcome(ada, old, "tests_pass", "decision-1")
    await mkit.sign_in(mkit.ada_token)
    mkit.clock.advance(timedelta(minutes=5))
    await mkit.act(old, "forget")
    mkit.clock.advance(timedelta(minutes=5))
    await mkit.act(old, "restore")
    mkit.clock.advance(timedelta(minutes=5))
    new = supersede(ada, old, RecordInput("Ada lives in Leeds.", "fact"), actor="token:tok_x")
    new_id = new.record.memory.id

    page = await mkit.page(_path(old))

    entries = [
        re.sub(r"<[^>]+>", "", e) for e in re.findall(r'<li class="entry">(.*?)</li>', page, re.S)
    ]
    assert [e.split(" · ")[0].strip() for e in entries] == [
        "Recorded",
        "Outcome reported",
        "Forgotten",
        "Restored",
        f"Superseded by {new_id}",
    ]
    assert "tests_pass" in entries[1]
    assert "by you, on this page" in entries[2]
    assert "by token:tok_x" in entries[4]
    assert '<time datetime="2026-01-01T10:05:01Z">' in page  # Ada's time zone, UTC instant
    assert '<span class="tag superseded">superseded</span>' in page
    assert 'action="' + _path(old, "restore") + '"' not in page  # the newer one is served
    newer = await mkit.page(_path(new_id))
    assert "Replaced an older memory:" in re.sub(r"<[^>]+>", "", newer)
    assert f'href="{_path(old)}"' in newer
    actors = {e.actor for e in history(ada, old).entries if e.event in ("forgotten", "restored")}
    assert actors == {f"page:token:{_token_id(mkit)}"}


def _token_id(kit: MemoriesKit) -> str:
    from engram.context import list_tokens

    return next(t.token_id for t in list_tokens(kit.store, kit.ada.id))


@pytest.mark.req("engram.memory.page.forget-restore")
async def test_forget_and_restore_change_what_recall_serves(mkit: MemoriesKit) -> None:
    mid = mkit.remember(mkit.ada, "Ada is allergic to peanuts.")
    await mkit.sign_in(mkit.ada_token)

    forgot = await mkit.act(mid, "forget", **{"from": "list"})
    assert forgot.status_code == 303
    assert forgot.headers["location"] == "/memories?notice=forgotten"
    assert "Forgotten. Agents no longer recall" in await mkit.page(forgot.headers["location"])
    assert _states(mkit)[mid] == "forgotten"
    assert "Restore" in await mkit.page(_path(mid))

    restored = await mkit.act(mid, "restore")
    assert restored.headers["location"] == _path(mid) + "?notice=restored"
    assert "Restored. Agents recall this memory again." in await mkit.page(
        restored.headers["location"]
    )
    assert _states(mkit)[mid] == "current"


@pytest.mark.req("engram.memory.page.csrf")
@pytest.mark.parametrize("action", ["forget", "restore", "erase"])
async def test_a_post_without_the_sessions_token_or_from_elsewhere_changes_nothing(
    mkit: MemoriesKit, action: str
) -> None:
    mid = mkit.remember(mkit.ada, "Ada's bank is on the high street.")
    await mkit.sign_in(mkit.ada_token)
    if action == "restore":
        await mkit.act(mid, "forget")
    before = _states(mkit)[mid]
    extra = {"confirm": "erase"} if action == "erase" else {}

    missing = await mkit.act(mid, action, "", **extra, **{"from": "list"})
    wrong = await mkit.act(mid, action, "A" * 43, **extra)
    csrf = await mkit.csrf()
    foreign = await mkit.client.post(
        _path(mid, action),
        data={"csrf_token": csrf, **extra},
        headers={"Origin": "https://evil.example"},
    )
    cross_site = await mkit.client.post(
        _path(mid, action),
        data={"csrf_token": csrf, **extra},
        headers={"Sec-Fetch-Site": "cross-site"},
    )

    for refused in (missing, wrong, foreign, cross_site):
        assert refused.status_code == 403
        assert "Back to your memories" in refused.text
    assert _states(mkit)[mid] == before
    assert get_memory(subject_view(mkit.engine, mkit.ada.id), mid) is not None


@pytest.mark.req("engram.memory.page.erase-confirm")
async def test_erase_asks_once_more_and_only_then_erases_for_good(mkit: MemoriesKit) -> None:
    mid = mkit.remember(mkit.ada, "Ada's passport number is X1234567.")
    await mkit.sign_in(mkit.ada_token)

    question = await mkit.page(_path(mid, "erase"))
    assert "Erase this memory for good?" in question
    assert "cannot be undone" in question
    assert hidden(question, "confirm") == "erase"
    unanswered = await mkit.act(mid, "erase")  # the form without the answer: asked again
    assert unanswered.status_code == 200
    assert "Erase this memory for good?" in unanswered.text
    assert _states(mkit)[mid] == "current"

    erased = await mkit.act(mid, "erase", confirm="erase")

    assert erased.headers["location"] == "/memories?notice=erased"
    listing = unescape(await mkit.page(erased.headers["location"]))
    assert "Erased. The memory's words are gone for good." in listing
    assert "X1234567" not in listing
    assert mid not in _states(mkit)
    after = await mkit.page(_path(mid))
    assert '<span class="tag erased">erased</span>' in after
    assert "X1234567" not in after
    assert "Erased</strong>" in after
    again = await mkit.client.get(_path(mid, "erase"))
    assert again.status_code == 303  # nothing left to erase: its history says so


@pytest.mark.req("engram.memory.page.isolation")
async def test_another_subjects_session_never_reaches_adas_memories(mkit: MemoriesKit) -> None:
    secret = mkit.remember(mkit.ada, "Ada's diagnosis is kept private: migraine.")
    mkit.remember(mkit.grace, "Grace writes compilers.")
    await mkit.sign_in(mkit.grace_token)
    never = "mem:" + "0" * 64

    listing = await mkit.page()
    search = await mkit.page("/memories?q=diagnosis migraine private")
    guessed = await mkit.client.get(_path(secret))
    unknown = await mkit.client.get(_path(never))
    asked = await mkit.client.get(_path(secret, "erase"))
    csrf = await mkit.csrf()
    posts = [
        await mkit.act(secret, action, csrf, confirm="erase")
        for action in ("forget", "restore", "erase")
    ]

    assert texts(listing) == ["Grace writes compilers."]
    assert texts(search) == ["Grace writes compilers."]
    assert quote(secret, safe="") not in search
    for response in (guessed, asked, *posts):
        assert response.status_code == 404
        assert "migraine" not in response.text
    # Word for word what an id that never existed gets.
    assert guessed.text.replace(quote(secret, safe=""), "").replace(
        secret, ""
    ) == unknown.text.replace(quote(never, safe=""), "").replace(never, "")
    assert _states(mkit)[secret] == "current"


@pytest.mark.req("engram.memory.page.escaping")
async def test_markup_in_a_memory_is_shown_as_text_and_never_runs(mkit: MemoriesKit) -> None:
    payload = '<script>alert("x")</script><img src=x onerror=alert(1)>"\'&'
    mid = mkit.remember(mkit.ada, payload)
    await mkit.sign_in(mkit.ada_token)

    for path in ("/memories", _path(mid), _path(mid, "erase"), "/memories?q=script alert"):
        response = await mkit.client.get(path)
        assert response.status_code == 200
        assert "<script>" not in response.text
        assert "<img" not in response.text
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in response.text
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["cache-control"] == "no-store"
    assert texts(await mkit.page())[0] == payload


@pytest.mark.req("engram.memory.page.session")
async def test_without_a_session_nothing_is_shown_or_changed(mkit: MemoriesKit) -> None:
    mid = mkit.remember(mkit.ada, "Ada keeps bees.")

    item = await mkit.client.get(_path(mid))
    post = await mkit.client.post(_path(mid, "forget"), data={"csrf_token": "A" * 43})
    mkit.client.cookies.set("engram_review", "B" * 43, domain="provider.test", path="/")
    forged = await mkit.client.post(_path(mid, "forget"), data={"csrf_token": "A" * 43})

    assert item.status_code == 303
    assert item.headers["location"] == "/memories"
    assert post.status_code == 401
    assert forged.status_code == 401
    assert "Please sign in" in forged.text
    assert _states(mkit)[mid] == "current"


@pytest.mark.req("engram.memory.page.session")
async def test_an_idle_session_expires_on_the_memories_page_too(mkit: MemoriesKit) -> None:
    await mkit.sign_in(mkit.ada_token)
    mkit.clock.advance(timedelta(minutes=31))

    page = await mkit.client.get("/memories")

    assert page.status_code == 200
    assert "Your review session has expired" in page.text
    assert hidden(page.text, "next") == "/memories"


@pytest.mark.req("engram.memory.page.session")
async def test_unknown_paths_and_methods_get_html_pages(mkit: MemoriesKit) -> None:
    await mkit.sign_in(mkit.ada_token)

    unknown = await mkit.client.get("/memories/a/b/c/d")
    wrong = await mkit.client.delete("/memories")
    slash = await mkit.client.get("/memories/")
    bad_cursor = await mkit.client.get("/memories?cursor=abc")

    assert unknown.status_code == 404
    assert unknown.headers["content-type"].startswith("text/html")
    assert wrong.status_code == 405
    assert wrong.headers["allow"] == "GET, HEAD"
    assert slash.status_code == 308
    assert bad_cursor.status_code == 400
    assert "That link to older memories was not made by this page" in bad_cursor.text


@pytest.mark.req("engram.memory.page.optional")
async def test_without_a_memory_engine_there_is_no_memories_page_or_link(
    memory_store: Store,
) -> None:
    app = create_app(ProviderConfig(public_url="http://provider.test"), memory_store)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://provider.test"
    ) as client:
        missing = await client.get("/memories")
        review = await client.get("/review")

    assert missing.status_code == 404
    assert "/memories" not in review.text


@pytest.mark.req("engram.memory.page.isolation")
async def test_two_browsers_signed_in_as_two_subjects_see_only_their_own(
    any_store: Store, tmp_path_factory: pytest.TempPathFactory
) -> None:
    kit = make_memories_kit(any_store, tmp_path_factory.mktemp("two"))
    ada_note = kit.remember(kit.ada, "Ada's locker code is 4411.")
    kit.remember(kit.grace, "Grace's locker code is 9922.")
    app = kit.client._transport  # the same app, a second cookie jar
    async with (
        kit.client,
        httpx.AsyncClient(transport=app, base_url=str(kit.client.base_url)) as other,
    ):
        await kit.sign_in(kit.ada_token)
        form = await other.get("/memories")
        await other.post(
            "/review/signin",
            data={
                "login_csrf": hidden(form.text, "login_csrf"),
                "token": kit.grace_token,
                "next": "/memories",
            },
        )
        ada_page, grace_page = await kit.page(), (await other.get("/memories")).text
        grace_guess = await other.get(_path(ada_note))

    assert texts(ada_page) == ["Ada's locker code is 4411."]
    assert texts(grace_page) == ["Grace's locker code is 9922."]
    assert grace_guess.status_code == 404


@pytest.mark.req("engram.memory.page.sign-in")
async def test_signing_out_of_memories_shows_its_sign_in_form_again(mkit: MemoriesKit) -> None:
    await mkit.sign_in(mkit.ada_token)
    page = await mkit.page()

    out = await mkit.client.post(
        "/review/signout",
        data={"csrf_token": hidden(page, "csrf_token"), "next": hidden(page, "next")},
    )

    assert out.headers["location"] == "/memories?notice=signed-out"
    again = await mkit.page(out.headers["location"])
    assert "You are signed out." in again
    assert "See what your AI tools remember" in again


@pytest.mark.req("engram.memory.page.optional")
async def test_engram_serve_with_a_seat_manifest_serves_memories(
    tmp_path: Path, memory_store: Store
) -> None:
    manifest = tmp_path / "repo" / ".engram" / "ote.toml"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(MANIFEST, encoding="utf-8")
    store = open_store(f"sqlite://{tmp_path / 'engram.db'}")
    clock = SystemClock()
    demo = seed_demo(store, clock)
    config = ProviderConfig(public_url=BASE_URL)
    with_seat = provider_app_with_mcp(config, store, clock, SeatSource("--ote", manifest))
    without = provider_app_with_mcp(config, memory_store, clock, None)
    writer = manifest_engine(store, clock, tmp_path / "writer")
    record(subject_view(writer, demo.subject.id), "Ada waters the plants on Sundays.", "fact")
    try:
        async with (
            httpx.AsyncClient(transport=httpx.ASGITransport(app=with_seat), base_url=BASE_URL) as c,
            httpx.AsyncClient(transport=httpx.ASGITransport(app=without), base_url=BASE_URL) as b,
        ):
            form = await c.get("/memories")
            await c.post(
                "/review/signin",
                data={
                    "login_csrf": hidden(form.text, "login_csrf"),
                    "token": demo.token,
                    "next": "/memories",
                },
            )
            listing = await c.get("/memories")
            bare = await b.get("/memories")
    finally:
        store.close()

    assert texts(listing.text) == ["Ada waters the plants on Sundays."]
    assert bare.status_code == 404


@pytest.mark.req("engram.memory.page.sign-in")
async def test_a_one_time_link_with_next_memories_signs_in_to_memories(mkit: MemoriesKit) -> None:
    link = create_review_link(mkit.store, mkit.clock, mkit.grace.id)

    landing = await mkit.client.get("/review/link", params={"code": link.code, "next": "/memories"})
    redeemed = await mkit.client.post(
        "/review/link",
        data={
            "login_csrf": hidden(landing.text, "login_csrf"),
            "code": hidden(landing.text, "code"),
            "next": hidden(landing.text, "next"),
        },
    )

    assert "Sign in to your memories" in landing.text
    assert redeemed.headers["location"] == "/memories?notice=signed-in"
    assert "Hello, Grace Hopper" in await mkit.page(redeemed.headers["location"])
