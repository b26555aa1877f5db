"""Fixtures for the OCI tests: one real docker-registry per module (see ``oci_kit``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from oci_kit import RunningRegistry, docker_registry


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    with docker_registry(tmp_path_factory.mktemp("registry")) as running:
        yield running


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path
