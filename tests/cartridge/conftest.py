"""Fixtures for the cartridge tests: a signing key, a skills folder and a signed cartridge."""

from __future__ import annotations

from pathlib import Path

import pytest
from acx_kit import build, write_skills

from engram.core.keys import PrivateKey


@pytest.fixture(scope="session")
def key() -> PrivateKey:
    return PrivateKey.generate()


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    return write_skills(tmp_path)


@pytest.fixture
def signed(tmp_path: Path, key: PrivateKey, skills: Path) -> Path:
    """A signed cartridge with one skill and three memory records."""
    return build(tmp_path / "git-helper.acx", key=key, skills=skills)
