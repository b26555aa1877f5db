"""Test kit for the ``/memories`` page: the real provider app with a real memory engine over a
store, driven through httpx's ASGI transport (no sockets), a fixed clock, two subjects (Ada, the
demo subject, and Grace) each with a token that may confirm."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from html import unescape
from pathlib import Path

import httpx
from review_kit import hidden

from engram.context import Permission, Subject, create_subject, issue_token
from engram.context.internals import seed_demo
from engram.core.clock import Clock, FixedClock
from engram.memory import MemoryEngine, open_engine, parse_manifest, record, subject_view
from engram.memory import default_manifest_text as _default_manifest
from engram.provider import ProviderConfig, create_app
from engram.store import Store

BASE_URL = "http://provider.test"
# The model-free local-hash-128 seat: these tests are about the page, not the embedding model.
MANIFEST = _default_manifest().replace(
    'embedding_provider = "minilm-l6-v2"', 'embedding_provider = "local-hash-128"'
)


def manifest_engine(store: Store, clock: Clock, folder: Path) -> MemoryEngine:
    spec = parse_manifest(MANIFEST, str(folder / "ote.toml"), folder)
    return open_engine(store, spec, clock, index_folder=folder / "index")


@dataclass
class MemoriesKit:
    store: Store
    clock: FixedClock
    engine: MemoryEngine
    client: httpx.AsyncClient
    ada: Subject
    ada_token: str
    grace: Subject
    grace_token: str

    def remember(self, subject: Subject, text: str, kind: str = "fact") -> str:
        """An agent records ``text`` about ``subject``; returns the memory id."""
        self.clock.advance(timedelta(seconds=1))
        return record(subject_view(self.engine, subject.id), text, kind).memory.id

    async def sign_in(self, token: str) -> httpx.Response:
        """Load /memories signed out and post the sign-in form it shows."""
        self.client.cookies.clear()
        form = await self.client.get("/memories")
        return await self.client.post(
            "/review/signin",
            data={
                "login_csrf": hidden(form.text, "login_csrf"),
                "token": token,
                "next": hidden(form.text, "next"),
            },
        )

    async def page(self, path: str = "/memories") -> str:
        response = await self.client.get(path)
        assert response.status_code == 200, response.text
        return response.text

    async def csrf(self) -> str:
        return hidden(await self.page(), "csrf_token")

    async def act(
        self, memory_id: str, action: str, csrf: str | None = None, **fields: str
    ) -> httpx.Response:
        data = {"csrf_token": csrf if csrf is not None else await self.csrf(), **fields}
        if csrf == "":
            del data["csrf_token"]
        return await self.client.post(f"/memories/{memory_id}/{action}", data=data)


def texts(page: str) -> list[str]:
    """The memories a page lists, in order (their text as a reader sees it)."""
    return [
        unescape(t) for t in re.findall(r'<p class="statement" id="memory-\d+">(.*?)</p>', page)
    ]


def make_memories_kit(store: Store, folder: Path) -> MemoriesKit:
    clock = FixedClock()
    engine = manifest_engine(store, clock, folder)
    app = create_app(ProviderConfig(public_url=BASE_URL), store, clock, memory=engine)
    demo = seed_demo(store, clock)
    grace = create_subject(store, clock, "Grace Hopper", "America/New_York")
    grace_token = issue_token(store, clock, grace.id, [Permission.CONFIRM], timedelta(days=1))
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL)
    return MemoriesKit(store, clock, engine, client, demo.subject, demo.token, grace, grace_token)


__all__ = ["BASE_URL", "MANIFEST", "MemoriesKit", "make_memories_kit", "manifest_engine", "texts"]
