"""One finding of any check engram runs: which rule, where, what, and how much it matters.

Issue 28: policy lint, the registry gate, workflow and graph lint, the level verifier, the
cartridge scrubber and the workflow secret scan each had their own type for this one idea. They
now all report :class:`Finding` (the scrubber through a subclass that keeps its positional
constructor). Each keeps the JSON and text it has always published (a
report's shape is part of its spec), by naming the members it shows with :meth:`Finding.to_wire`
and formatting its own lines; the default shape is workflow lint's ``{rule, path, message,
severity}`` and ``path: message [rule]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engram.core.canonical import Json, JsonObject

Severity = Literal["error", "warning", "unchecked", "passed"]
"""``error``: a rule is broken. ``warning``: a fact a person should see that no rule forbids.
``unchecked``: the check could not be run (a key or a list it needs is missing). ``passed``: the
check ran and held (reports that list every check, such as a level verification)."""

_OK: dict[str, bool | None] = {"error": False, "unchecked": None}


@dataclass(frozen=True)
class Finding:
    """One verdict of one rule at one place (never the offending value itself)."""

    rule: str
    """The rule's id: a requirement id (``engram.policy.schema``), a registry rule
    (``registry.site-paths``), a scrub rule (``high-entropy``) or a level check (``proof``)."""
    path: str
    """Where: a JSON path (``$.nodes[2].agent``), a file relative to what was checked, or both."""
    message: str = ""
    severity: Severity = "error"
    line: int = 0
    """For a finding in a text file: its 1-based line (0: not a position in a file)."""
    offset: int = 0
    """For a finding in a file: the byte offset of the match."""

    @property
    def ok(self) -> bool | None:
        """False when a rule is broken, None when it could not be checked, True otherwise."""
        return _OK.get(self.severity, True)

    @property
    def check(self) -> str:
        """The rule, under the name a verification report gives it (``check``)."""
        return self.rule

    def to_wire(self, *members: str, **renamed: str) -> JsonObject:
        """The finding as a JSON object: ``members`` are attributes shown under their own
        names, ``renamed`` maps a published name to an attribute (``ruleId="rule"``), in the
        order given; with neither, ``{rule, path, message, severity}``."""
        if not members and not renamed:
            members = ("rule", "path", "message", "severity")
        out: JsonObject = {name: self._member(name) for name in members}
        out.update({name: self._member(attribute) for name, attribute in renamed.items()})
        return out

    def _member(self, name: str) -> Json:
        value: Json = getattr(self, name)
        return value

    def __str__(self) -> str:
        return f"{self.path}: {self.message} [{self.rule}]"


def verdict(rule: str, ok: bool | None, path: str, message: str) -> Finding:
    """A check's verdict as a finding: held (True), broken (False) or not checked (None)."""
    severity: Severity = "passed" if ok else "error" if ok is False else "unchecked"
    return Finding(rule, path, message, severity)


__all__ = ["Finding", "Severity", "verdict"]
