"""``engram review-link``: a printed single-use link that opens the review page once
(docs/spec/review-page.md, "One-time links")."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from review_kit import hidden

from engram.cli import cli, run_cli
from engram.context import create_subject, ensure_schema
from engram.core.clock import SystemClock
from engram.provider import ProviderConfig, create_app
from engram.store import Store, open_store


@pytest.fixture
def store(any_database_url: str) -> Store:
    opened = open_store(any_database_url)
    ensure_schema(opened)
    return opened


@pytest.fixture
async def client(store: Store) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(ProviderConfig(public_url="http://provider.test"), store, SystemClock())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://provider.test") as c:
        yield c
    store.close()


def _link(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> dict[str, object]:
    code = run_cli(
        cli, ["review-link", "--db", url, "--json", "--url", "http://provider.test", *args]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    value = json.loads(out)
    assert isinstance(value, dict)
    return value


@pytest.mark.req("engram.review.one-time-link")
async def test_the_printed_link_opens_the_review_page_once(
    any_database_url: str,
    store: Store,
    client: httpx.AsyncClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    subject = create_subject(store, SystemClock(), "Grace", "UTC")

    printed = _link(capsys, any_database_url, "--subject", subject.id, "--ttl", "10m")

    assert printed["subject_id"] == subject.id
    assert printed["single_use"] is True
    address = urlsplit(str(printed["url"]))
    assert (address.scheme, address.netloc, address.path) == (
        "http",
        "provider.test",
        "/review/link",
    )
    code = parse_qs(address.query)["code"][0]
    landing = await client.get("/review/link", params={"code": code})
    assert "Grace" in landing.text
    form = {"code": code, "login_csrf": hidden(landing.text, "login_csrf")}
    assert (await client.post("/review/link", data=form)).status_code == 303
    assert "Hello, Grace" in (await client.get("/review")).text
    client.cookies.clear()
    fresh = hidden((await client.get("/review")).text, "login_csrf")
    again = await client.post("/review/link", data={**form, "login_csrf": fresh})
    assert again.status_code == 401
    assert "already used" in again.text


async def test_without_subject_the_only_subject_is_used(
    any_database_url: str, store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    subject = create_subject(store, SystemClock(), "Grace", "UTC")

    assert _link(capsys, any_database_url)["subject_id"] == subject.id
    store.close()


@pytest.mark.req("engram.review.one-time-link")
async def test_bad_ttl_and_ambiguous_subject_are_refused_clearly(
    any_database_url: str, store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    grace = create_subject(store, SystemClock(), "Grace", "UTC")
    create_subject(store, SystemClock(), "Ada", "UTC")
    store.close()
    db = ["--db", any_database_url]

    ambiguous = run_cli(cli, ["review-link", *db])
    too_long = run_cli(cli, ["review-link", *db, "--subject", grace.id, "--ttl", "25h"])
    errors = capsys.readouterr().err

    assert (ambiguous, too_long) == (2, 2)
    assert "there are 2 subjects: name one with --subject" in errors
    assert "at most 24 hours" in errors


@pytest.mark.req("engram.memory.page.sign-in")
async def test_a_link_for_the_memories_page_leads_there(
    any_database_url: str,
    store: Store,
    client: httpx.AsyncClient,
    capsys: pytest.CaptureFixture[str],
) -> None:
    create_subject(store, SystemClock(), "Grace", "UTC")

    printed = _link(capsys, any_database_url, "--page", "memories")

    query = parse_qs(urlsplit(str(printed["url"])).query)
    assert query["next"] == ["/memories"]
    landing = await client.get(
        "/review/link", params={"code": query["code"][0], "next": "/memories"}
    )
    form = {
        "code": query["code"][0],
        "login_csrf": hidden(landing.text, "login_csrf"),
        "next": hidden(landing.text, "next"),
    }
    redeemed = await client.post("/review/link", data=form)
    assert redeemed.headers["location"] == "/memories?notice=signed-in"
