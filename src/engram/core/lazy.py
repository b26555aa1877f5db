"""Package attributes bound on first use (PEP 562), so a command imports only what it uses.

A package ``__init__`` lists ``name -> module`` for the names it exports without importing their
modules at start-up (a cold ``engram recall`` must not pay for signing or the context domain;
issue 16, cold CLI start), keeps the real imports under ``TYPE_CHECKING`` for type checkers, and
sets ``__getattr__ = lazy_attributes(__name__, names, globals())``. A value ``"module:attr"``
exports the module's ``attr`` under another name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(
    package: str, names: Mapping[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``names[name]`` on first use and caches the value
    in ``namespace`` (the package's globals), so later lookups never come back here."""

    def attribute(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = where.partition(":")
        value = getattr(importlib.import_module(module), attr or name)
        namespace[name] = value
        return value

    return attribute


__all__ = ["lazy_attributes"]
