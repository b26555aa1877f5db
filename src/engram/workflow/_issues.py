"""What lint says: one :class:`Issue` per broken rule, named by its requirement id.

Spec: lboel/acx@85f1358 SPEC.md §14.3 and §16.1 ("every rule ... MUST"); docs/spec/acx-workflows.md
§"Lint". Every issue carries the ``engram.workflow.*`` or ``engram.graph.*`` id of the rule it
breaks (the row in requirements.json), the path of the offending member (``$.nodes[2].agent``)
and one sentence. Errors make a document invalid; warnings (``severity="warning"``) are facts a
person should see that no rule forbids, such as an exclusive gateway without a default branch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from engram.core.canonical import JsonObject
from engram.core.findings import Finding, Severity

Accepted: TypeAlias = dict[str, Any]
"""A workflow document (or a part of one) that its JSON Schema has accepted. Any on purpose: the
lint rules and the readiness check run only once the schema has shaped every member they read,
and restating the schema as isinstance checks would only add noise. Unchecked JSON is
:data:`Json` until it gets here."""


Issue = Finding
"""One broken rule (or one warning) at one place in a document: engram's one finding type
(:class:`engram.core.findings.Finding`), under the name lint reports have always used."""


@dataclass(frozen=True)
class LintReport:
    """Every issue lint found, errors and warnings, in document order within each rule."""

    issues: tuple[Issue, ...] = field(default_factory=tuple)

    @classmethod
    def of(cls, issues: Iterable[Issue]) -> LintReport:
        seen: set[Issue] = set()
        unique: list[Issue] = []
        for issue in issues:
            if issue not in seen:
                seen.add(issue)
                unique.append(issue)
        return cls(tuple(unique))

    @property
    def errors(self) -> tuple[Issue, ...]:
        return tuple(i for i in self.issues if i.severity == "error")

    @property
    def warnings(self) -> tuple[Issue, ...]:
        return tuple(i for i in self.issues if i.severity == "warning")

    @property
    def ok(self) -> bool:
        """True when no rule is broken (warnings do not count)."""
        return not self.errors

    @property
    def rules(self) -> frozenset[str]:
        """The ids of the rules the document breaks."""
        return frozenset(i.rule for i in self.errors)

    def to_wire(self) -> JsonObject:
        return {
            "ok": self.ok,
            "errors": [i.to_wire() for i in self.errors],
            "warnings": [i.to_wire() for i in self.warnings],
        }


def member_path(base: str, *parts: str | int) -> str:
    """``$.nodes[2].agent`` from ``("$", "nodes", 2, "agent")``."""
    out = base
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def duplicates(values: Sequence[str]) -> list[str]:
    """Each value that occurs more than once, in order of its second occurrence."""
    seen: set[str] = set()
    repeated: list[str] = []
    for value in values:
        if value in seen and value not in repeated:
            repeated.append(value)
        seen.add(value)
    return repeated


__all__ = ["Issue", "LintReport", "Severity", "duplicates", "member_path"]
