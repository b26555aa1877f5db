"""Test harness: a provider app over a store, a fixed clock and the demo subject.

Requests go through Starlette's TestClient: the real app in process, no sockets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.testclient import TestClient

from engram.context import DemoSubject, seed_demo
from engram.core.clock import FixedClock
from engram.provider import ProviderConfig, create_app
from engram.store import Store


@dataclass
class Provider:
    store: Store
    clock: FixedClock
    app: Starlette
    client: TestClient
    demo: DemoSubject
    config: ProviderConfig = field(default_factory=ProviderConfig)

    def headers(self, token: str | None = None, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.demo.token}", **extra}


def make_provider(store: Store, config: ProviderConfig | None = None) -> Provider:
    clock = FixedClock()
    config = config or ProviderConfig(public_url="https://provider.test")
    app = create_app(config, store, clock)
    demo = seed_demo(store, clock)
    client = TestClient(app, base_url="https://provider.test", raise_server_exceptions=False)
    return Provider(store, clock, app, client, demo, config)


__all__ = ["Provider", "make_provider"]
