"""The closed registries of belief categories and export scopes (``docs/spec/context-model.md``).

The spec names one scope (``professional``, which "excludes health and financial beliefs") and
says an unknown scope is ``400 invalid_scope``; the rest of both registries is our decision.
Categories marked sensitive are never served outside the ``full`` scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engram.core.context_wire import SENSITIVE_CATEGORIES
from engram.errors import InvalidRequest, InvalidScope

CATEGORIES: tuple[str, ...] = (
    "financial",
    "general",
    "goal",
    "health",
    "personal",
    "preference",
    "professional",
    "relationship",
)
"""Every belief category engram accepts, sorted."""

# SENSITIVE_CATEGORIES (excluded from every scope except ``full``) is the wire's own set
# (engram.core.context_wire): one declaration, so a sensitive category added there is withheld
# by the scopes here too (issue 28).


@dataclass(frozen=True)
class Scope:
    name: str
    description: str
    categories: frozenset[str]

    def admits(self, category: str) -> bool:
        return category in self.categories


_ALL = frozenset(CATEGORIES)

SCOPES: dict[str, Scope] = {
    "full": Scope("full", "identity and every belief, including sensitive categories", _ALL),
    "professional": Scope(
        "professional",
        "identity and every belief except the sensitive categories (health, financial)",
        _ALL - SENSITIVE_CATEGORIES,
    ),
    "identity": Scope("identity", "identity only; no beliefs", frozenset()),
}
"""The closed scope registry; ``full`` is the default when no scope is asked for."""

DEFAULT_SCOPE = "full"

_SCOPE_SYNTAX = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


def resolve_scope(name: str | None) -> Scope:
    """The registered scope called ``name`` (``None`` means the default); else InvalidScope."""
    if name is None:
        return SCOPES[DEFAULT_SCOPE]
    if not _SCOPE_SYNTAX.match(name):
        raise InvalidScope("malformed scope: use one of " + ", ".join(sorted(SCOPES)))
    scope = SCOPES.get(name)
    if scope is None:
        raise InvalidScope(f"unknown scope {name!r}: use one of " + ", ".join(sorted(SCOPES)))
    return scope


def check_category(category: str) -> str:
    """Return ``category`` if registered; else InvalidRequest naming the registry."""
    if category not in _ALL:
        raise InvalidRequest(
            f"unknown belief category {category!r}: use one of " + ", ".join(CATEGORIES)
        )
    return category


__all__ = [
    "CATEGORIES",
    "DEFAULT_SCOPE",
    "SCOPES",
    "SENSITIVE_CATEGORIES",
    "Scope",
    "check_category",
    "resolve_scope",
]
