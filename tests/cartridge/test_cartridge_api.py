"""The public surface of engram.cartridge: a sorted, resolvable ``__all__`` and clean layering."""

from __future__ import annotations

import ast
from pathlib import Path

import engram.cartridge as cartridge

PACKAGE = Path(cartridge.__file__).resolve().parent


def test_all_is_sorted_and_every_name_resolves() -> None:
    names = cartridge.__all__
    assert names == sorted(names, key=lambda n: (not n.isupper(), n))
    assert len(set(names)) == len(names)
    for name in names:
        assert getattr(cartridge, name) is not None


def test_cartridge_never_imports_sibling_domains_or_adapters() -> None:
    """Domain packages are siblings (import-linter layers): memory meets cartridge in the CLI."""
    forbidden = ("engram.memory", "engram.context", "engram.cli", "engram.provider", "engram.mcp")
    for module in PACKAGE.glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith(forbidden), f"{module.name}: {node.module}"
