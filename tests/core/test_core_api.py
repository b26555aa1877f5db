"""engram.core's public surface: a sorted, complete __all__, and a pure package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import engram.core
from engram.core import canonical, clock, dsse, encoding, jsonio, keyring, keys, signing

CORE = Path(engram.core.__file__).resolve().parent
PUBLIC_MODULES = [canonical, clock, dsse, encoding, jsonio, keyring, keys, signing]


def _isort_key(name: str) -> tuple[int, str]:
    # ruff RUF022 order: SCREAMING_CASE constants, then CamelCase classes, then the rest.
    if name.isupper():
        return (0, name)
    if name[:1].isupper():
        return (1, name)
    return (2, name)


@pytest.mark.req("engram.package.public-api")
def test_package_all_is_sorted_and_re_exports_what_a_user_calls_from_the_public_modules() -> None:
    # engram.core's __all__ is what an integrator calls (canonical JSON, keys, signatures,
    # envelopes, clocks: docs/concepts/packages.md "What is public"); the rest of each public
    # module's names stay in that module, importable by name, not re-exported here.
    exported = engram.core.__all__
    assert exported == sorted(exported, key=_isort_key)
    everything = {name for module in PUBLIC_MODULES for name in module.__all__}
    assert set(exported) <= everything
    for name in exported:
        assert getattr(engram.core, name) is not None
        homes = [m for m in PUBLIC_MODULES if name in m.__all__]
        assert all(getattr(m, name) is getattr(engram.core, name) for m in homes), name


@pytest.mark.req("engram.package.public-api")
def test_every_module_all_is_sorted_and_names_real_objects() -> None:
    for module in PUBLIC_MODULES:
        assert module.__all__ == sorted(module.__all__, key=_isort_key), module.__name__
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_core_imports_nothing_from_higher_layers_or_network_libraries() -> None:
    forbidden = ("engram.store", "engram.context", "engram.provider", "httpx", "sqlite3")
    for path in CORE.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(forbidden), f"{path.name}: {node.module}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith(forbidden), f"{path.name}: {alias.name}"
