"""Test harness: a provider app over a store, a fixed clock and the demo subject.

Requests go through Starlette's TestClient: the real app in process, no sockets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from starlette.applications import Starlette
from starlette.testclient import TestClient

from engram.context.internals import DemoSubject, seed_demo
from engram.core.clock import FixedClock
from engram.memory import MemoryEngine, default_manifest_text, open_engine, parse_manifest
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


def seat_engine(store: Store, clock: FixedClock, folder: Path) -> MemoryEngine:
    """The default seat's engine on ``store``, pinned to the model-free local-hash-128
    embedder (tests not about the bundled model need not pay its cost)."""
    text = default_manifest_text().replace(
        'embedding_provider = "minilm-l6-v2"', 'embedding_provider = "local-hash-128"'
    )
    spec = parse_manifest(text, str(folder / "ote.toml"), folder)
    return open_engine(store, spec, clock, index_folder=folder / "index")


def make_provider(
    store: Store, config: ProviderConfig | None = None, *, memory_folder: Path | None = None
) -> Provider:
    """A provider over ``store``; with ``memory_folder`` it serves the memory REST API over the
    default seat's engine (index in that folder)."""
    clock = FixedClock()
    config = config or ProviderConfig(public_url="https://provider.test")
    engine = None if memory_folder is None else seat_engine(store, clock, memory_folder)
    app = create_app(config, store, clock, memory=engine)
    demo = seed_demo(store, clock)
    client = TestClient(app, base_url="https://provider.test", raise_server_exceptions=False)
    return Provider(store, clock, app, client, demo, config)


__all__ = ["Provider", "make_provider", "seat_engine"]
