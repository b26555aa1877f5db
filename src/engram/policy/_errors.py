"""The errors of the loop-context policy: what is wrong, where, and which rule says so.

A policy is refused as a whole with :class:`PolicyError` (``invalid_policy``), which lists every
problem found rather than the first, so an author fixes a document in one pass. Each
:class:`Problem` names the requirement id of the rule it breaks (``requirements.json``) and a
JSON path into the document. docs/spec/acx-policy.md §2.
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.core.canonical import JsonObject
from engram.core.findings import Finding
from engram.errors import InputError

Problem = Finding
"""One broken rule: the requirement id, a JSON path (``$.loop.cycle``) and a sentence; engram's
one finding type (:class:`engram.core.findings.Finding`) under the name policy errors use."""

PROBLEM_MEMBERS = ("rule", "path", "message")
"""What a policy problem shows in JSON (no severity: every policy problem is an error)."""


class PolicyError(InputError):
    """A loop-context policy or a SAVE rule overlay that must not be run."""

    code = "invalid_policy"

    def __init__(self, what: str, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        shown = "; ".join(str(p) for p in self.problems[:5])
        more = f" (+{len(self.problems) - 5} more)" if len(self.problems) > 5 else ""
        super().__init__(f"{what}: {shown}{more}")

    def problems_wire(self) -> list[JsonObject]:
        """Every problem as ``{rule, path, message}``."""
        return [p.to_wire(*PROBLEM_MEMBERS) for p in self.problems]


class HostLimitsError(InputError):
    """A host ``resource-limits.yaml`` that cannot be read as ceilings: refused, never guessed."""

    code = "invalid_host_limits"


__all__ = ["HostLimitsError", "PolicyError", "Problem"]
