"""One finding of the registry gate: where, which rule, what is wrong.

A registry problem is engram's one finding type (:class:`engram.core.findings.Finding`, issue
28); the gate keeps the order, text and JSON it has always published: sorted by path, then rule;
``path: [rule] message``; ``{path, rule, message}``.
"""

from __future__ import annotations

from engram.core.canonical import JsonObject
from engram.core.findings import Finding
from engram.errors import InputError

Problem = Finding
"""A registry problem: ``path`` is the registry-relative file (or ``status.json``,
``index.json``, a git path), ``rule`` the broken ``registry.<rule>`` of
docs/spec/acx-registry.md."""


def problem(path: str, rule: str, message: str) -> Finding:
    """The finding that ``path`` breaks ``rule``, saying ``message``."""
    return Finding(rule, path, message)


def problem_order(found: Finding) -> tuple[str, str, str]:
    """How the gate sorts its problems: by path, then rule, then message."""
    return found.path, found.rule, found.message


def problem_line(found: Finding) -> str:
    return f"{found.path}: [{found.rule}] {found.message}"


def problem_wire(found: Finding) -> JsonObject:
    return found.to_wire("path", "rule", "message")


class RegistryRefused(InputError):
    """The registry (or one artifact proposed for it) breaks a §17 rule."""

    code = "registry_refused"


__all__ = [
    "Problem",
    "RegistryRefused",
    "problem",
    "problem_line",
    "problem_order",
    "problem_wire",
]
