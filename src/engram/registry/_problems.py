"""One finding of the registry gate: where, which rule, what is wrong."""

from __future__ import annotations

from dataclasses import dataclass

from engram.core.canonical import JsonObject
from engram.errors import InputError


@dataclass(frozen=True, order=True)
class Problem:
    path: str
    """The registry-relative file (or ``status.json``, ``index.json``, a git path)."""
    rule: str
    """``registry.<rule>``: the docs/spec/acx-registry.md rule that is broken."""
    message: str

    def __str__(self) -> str:
        return f"{self.path}: [{self.rule}] {self.message}"

    def to_wire(self) -> JsonObject:
        return {"path": self.path, "rule": self.rule, "message": self.message}


class RegistryRefused(InputError):
    """The registry (or one artifact proposed for it) breaks a §17 rule."""

    code = "registry_refused"


__all__ = ["Problem", "RegistryRefused"]
