"""Test kit for the review page: the real provider app over a store, driven through httpx's ASGI
transport (no sockets), with a fixed clock and the demo subject."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
from starlette.applications import Starlette

from engram.context import Correction, Permission, issue_token, propose_correction
from engram.context.internals import DemoSubject, seed_demo
from engram.core.canonical import parse_strict
from engram.core.clock import FixedClock
from engram.core.keys import PublicKey
from engram.core.signing import verify_document
from engram.provider import ProviderConfig, create_app
from engram.store import Store


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


_HIDDEN = r'name="{name}"\s+value="([^"]*)"'


def hidden(page: str, name: str) -> str:
    """The value of the hidden form field ``name`` on a page (the first one)."""
    match = re.search(_HIDDEN.format(name=re.escape(name)), page)
    assert match is not None, f"no hidden field {name!r} on the page"
    return match.group(1)


def verified_export(export_body: bytes, keys_body: bytes) -> dict[str, Any]:
    """The export after its signature verifies under the published key its ``kid`` names."""
    export, keys = _parsed(export_body), _parsed(keys_body)
    assert isinstance(export, dict)
    assert isinstance(keys, dict)
    assert isinstance(keys["keys"], list)
    published = {k["kid"]: PublicKey.from_b64url(k["public_key"]) for k in keys["keys"]}
    verify_document(export, published[str(export["kid"])])
    return export


@dataclass
class ReviewKit:
    store: Store
    clock: FixedClock
    app: Starlette
    client: httpx.AsyncClient
    demo: DemoSubject
    base_url: str
    config: ProviderConfig = field(default_factory=ProviderConfig)

    @property
    def subject_id(self) -> str:
        return self.demo.subject.id

    def token(self, *permissions: Permission, ttl: timedelta = timedelta(days=1)) -> str:
        return issue_token(self.store, self.clock, self.subject_id, permissions, ttl)

    def propose(self, value: str, belief_index: int = 3, runtime: str = "rt-test") -> Correction:
        """A runtime proposes ``value`` for one of the demo beliefs (default: where they live)."""
        belief = self.demo.beliefs[belief_index]
        return propose_correction(
            self.store, self.clock, self.subject_id, belief.id, value, runtime
        )

    async def sign_in(self, token: str | None = None) -> httpx.Response:
        """Load the sign-in form and post ``token`` (default: the demo's all-permissions token)."""
        form = await self.client.get("/review")
        return await self.client.post(
            "/review/signin",
            data={"login_csrf": hidden(form.text, "login_csrf"), "token": token or self.demo.token},
        )

    async def signed_export(self) -> dict[str, Any]:
        """GET /v1/context with the demo token, its signature verified."""
        auth = {"Authorization": f"Bearer {self.demo.token}"}
        export = await self.client.get("/v1/context", headers=auth)
        keys = await self.client.get("/.well-known/engram-keys")
        assert export.status_code == 200
        assert keys.status_code == 200
        return verified_export(export.content, keys.content)

    async def home(self) -> str:
        page = await self.client.get("/review")
        assert page.status_code == 200
        return page.text

    async def csrf(self) -> str:
        return hidden(await self.home(), "csrf_token")

    async def decide(
        self, correction_id: str, action: str, csrf: str | None, **headers: str
    ) -> httpx.Response:
        data = {"decision": action} if csrf is None else {"decision": action, "csrf_token": csrf}
        return await self.client.post(
            f"/review/corrections/{correction_id}/{action}", data=data, headers=headers
        )


def make_kit(store: Store, base_url: str = "http://provider.test") -> ReviewKit:
    clock = FixedClock()
    config = ProviderConfig(public_url=base_url)
    app = create_app(config, store, clock)
    demo = seed_demo(store, clock)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url)
    return ReviewKit(store, clock, app, client, demo, base_url, config)


__all__ = ["ReviewKit", "hidden", "make_kit", "verified_export"]
