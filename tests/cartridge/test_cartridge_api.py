"""The public surface of engram.cartridge: a sorted, resolvable ``__all__`` and clean layering."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import engram.cartridge as cartridge
import engram.transfer as transfer

PACKAGE = Path(cartridge.__file__).resolve().parent


@pytest.mark.req("engram.cartridge.verbatim-ddl")
def test_all_is_sorted_and_every_name_resolves() -> None:
    for module in (cartridge, transfer):
        names = module.__all__
        assert names == sorted(names, key=lambda n: (not n.isupper(), n))
        assert len(set(names)) == len(names)
        for name in names:
            assert getattr(module, name) is not None, name


@pytest.mark.req("engram.cartridge.store-round-trip")
def test_cartridge_never_imports_sibling_domains_or_adapters() -> None:
    """Domain packages are siblings (the layer contracts in pyproject.toml): memory meets cartridge
    only in engram.transfer."""
    forbidden = (
        "engram.memory",
        "engram.context",
        "engram.transfer",
        "engram.cli",
        "engram.provider",
        "engram.mcp",
    )
    for module in PACKAGE.glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(forbidden), f"{module.name}: {node.module}"
            if isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith(forbidden), f"{module.name}: {alias.name}"
