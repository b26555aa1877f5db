"""Fixtures for the memory engine tests: seat manifests, engines on every backend, ssh keys."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from memory_kit import manifest_text, ssh_keygen_key

from engram.core.clock import FixedClock
from engram.memory import MemoryEngine, OteSpec, open_engine, parse_manifest
from engram.store import Store


@pytest.fixture
def spec(tmp_path: Path) -> OteSpec:
    return parse_manifest(manifest_text(), str(tmp_path / "ote.toml"), tmp_path)


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def engine(any_store: Store, spec: OteSpec, clock: FixedClock) -> MemoryEngine:
    return open_engine(any_store, spec, clock)


@pytest.fixture
def make_engine(
    any_store: Store, clock: FixedClock, tmp_path: Path
) -> Callable[[str], MemoryEngine]:
    """An engine on the test's store with the default manifest plus ``extra`` TOML."""

    def make(extra: str = "", **kwargs: object) -> MemoryEngine:
        path = tmp_path / "ote.toml"
        spec = parse_manifest(manifest_text(extra), str(path), tmp_path)
        return open_engine(any_store, spec, clock, **kwargs)  # type: ignore[arg-type]

    return make


@pytest.fixture
def attestor(tmp_path: Path) -> tuple[Path, str]:
    """Alice's key, and an allowed_signers file at tmp_path/attestors that trusts it."""
    keys = tmp_path / "keys"
    keys.mkdir()
    key, public = ssh_keygen_key(keys, "alice")
    (tmp_path / "attestors").write_text(
        f'alice@example.org namespaces="engram-outcome@v1" {public}\n'
    )
    return key, public
