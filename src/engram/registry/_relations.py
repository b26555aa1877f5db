"""The lineage relations a remix draft may name (SPEC §17.5), in a module that imports nothing,
so that ``engram registry remix --help`` lists them without loading the registry (issue 33)."""

from __future__ import annotations

RELATIONS = ("fork", "remix", "derived-from", "supersedes")

__all__ = ["RELATIONS"]
