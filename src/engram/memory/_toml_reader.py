"""Typed, range-checked access to one TOML table, for the seat-manifest parser.

Spec: engram.ote.v1 & MCP contract (Part V, Plate 03, §3.1). Every read names the key; an error
names the file, the key path and what was expected
(``<file>: <key>: expected <what>, got <value>``); ``done()`` refuses keys nobody asked for.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from engram.errors import ManifestError


class TableReader:
    """Typed access to one TOML table, refusing unknown keys; errors name file and key."""

    def __init__(self, source: str, table: Mapping[str, Any], prefix: str) -> None:
        self.source, self.table, self.prefix = source, table, prefix
        self.seen: set[str] = set()

    def fail(self, key: str, expected: str, got: object = None) -> ManifestError:
        shown = "" if got is None else f", got {got!r}"
        return ManifestError(f"{self.source}: {self.prefix}{key}: expected {expected}{shown}")

    def raw(self, key: str, required: bool) -> Any:
        self.seen.add(key)
        if key not in self.table:
            if required:
                raise self.fail(key, "a value (the key is required)")
            return None
        return self.table[key]

    def string(
        self,
        key: str,
        *,
        pattern: re.Pattern[str] | None = None,
        required: bool = True,
        what: str = "a non-empty string",
        default: str = "",
    ) -> str:
        value = self.raw(key, required)
        if value is None:
            return default
        if not isinstance(value, str) or not value or (pattern and not pattern.match(value)):
            raise self.fail(key, what, value)
        return value

    def choice(
        self, key: str, options: tuple[str, ...], *, required: bool = True, default: str = ""
    ) -> str:
        value = self.raw(key, required)
        if value is None:
            return default
        if value not in options:
            raise self.fail(key, "one of " + ", ".join(repr(o) for o in options), value)
        return str(value)

    def integer(
        self, key: str, low: int, high: int, *, required: bool = True, default: int = 0
    ) -> int:
        value = self.raw(key, required)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(key, f"an integer from {low} to {high}", value)
        return value

    def number(
        self,
        key: str,
        low: float,
        high: float,
        *,
        required: bool = True,
        default: float = 0.0,
        open_low: bool = False,
        open_high: bool = False,
    ) -> float:
        value = self.raw(key, required)
        if value is None:
            return default
        ok = not isinstance(value, bool) and isinstance(value, int | float)
        if ok:
            v = float(value)
            ok = (v > low if open_low else v >= low) and (v < high if open_high else v <= high)
        if not ok:
            lo = "(" if open_low else "["
            hi = ")" if open_high else "]"
            raise self.fail(key, f"a number in {lo}{low}, {high}{hi}", value)
        return float(value)

    def boolean(self, key: str, *, required: bool = True, default: bool = False) -> bool:
        value = self.raw(key, required)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, "true or false", value)
        return value

    def strings(
        self,
        key: str,
        *,
        pattern: re.Pattern[str] | None = None,
        nonempty: bool,
        what: str,
        required: bool = True,
    ) -> tuple[str, ...]:
        value = self.raw(key, required)
        if value is None:
            return ()
        if not isinstance(value, list) or (nonempty and not value):
            raise self.fail(key, f"a {'non-empty ' if nonempty else ''}list of {what}", value)
        for item in value:
            if not isinstance(item, str) or not item or (pattern and not pattern.match(item)):
                raise self.fail(key, f"a list of {what}", item)
        if len(set(value)) != len(value):
            raise self.fail(key, f"a list of distinct {what}", value)
        return tuple(value)

    def table_of(self, key: str, *, required: bool) -> Mapping[str, Any] | None:
        value = self.raw(key, required)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(key, "a table", value)
        return value

    def done(self) -> None:
        extra = sorted(set(self.table) - self.seen)
        if extra:
            raise self.fail(extra[0], "no such key in engram.ote.v1 (unknown keys are refused)")


__all__ = ["TableReader"]
