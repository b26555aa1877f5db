"""The independent peers, served on loopback once per test session (per xdist worker).

Each test resets the peer it uses (state and faults) before it starts; tests of one worker run
one after another, so a peer is never shared by two tests at once.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from peer_http import Loopback
from peers import PROFILES, Peer


@pytest.fixture(scope="session")
def peers() -> Iterator[dict[str, Peer]]:
    running = {name: Loopback(Peer(profile)) for name, profile in PROFILES.items()}
    for server in running.values():
        server.__enter__()
    try:
        yield {name: server.peer for name, server in running.items()}
    finally:
        for server in running.values():
            server.__exit__(None, None, None)
