"""``engram.provider.review`` exports a sorted, complete ``__all__`` (as every package does)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import engram.provider.review as review


def _isort_order(name: str) -> tuple[int, str]:
    """The order ruff's RUF022 keeps: CONSTANTS, then Classes, then functions."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


@pytest.mark.req("engram.package.public-api")
def test_the_package_all_is_sorted_and_every_name_exists() -> None:
    assert list(review.__all__) == sorted(review.__all__, key=_isort_order)
    for name in review.__all__:
        assert hasattr(review, name), name


@pytest.mark.req("engram.package.public-api")
def test_every_private_module_has_a_sorted_all_of_real_names() -> None:
    modules = [m.name for m in pkgutil.iter_modules(review.__path__) if m.name.startswith("_")]
    assert modules
    for name in modules:
        module = importlib.import_module(f"{review.__name__}.{name}")
        exported = list(module.__all__)
        assert exported == sorted(exported, key=_isort_order), name
        assert all(hasattr(module, n) for n in exported), name


def test_the_provider_app_mounts_the_review_page() -> None:
    from engram.core.clock import FixedClock
    from engram.provider import ProviderConfig, create_app
    from engram.store import open_store

    store = open_store("memory://")
    try:
        app = create_app(ProviderConfig(), store, FixedClock())
        paths = {getattr(r, "path", "") for r in app.routes}
    finally:
        store.close()
    assert {"/review", "/review/signin", "/review/link", "/review/signout"} <= paths
