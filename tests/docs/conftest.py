"""The site built once per test session (per xdist worker), strictly, as CI builds it."""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_kit import REPO, Site, build


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    out = tmp_path_factory.mktemp("site") / "site"
    result = build(REPO, out)
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr[-6000:]}"
    return Site(Path(out))
