"""The effective policy: every value a host runs with, and where each one came from.

What ``engram cartridge policy`` prints (SPEC §9; docs/spec/acx-policy.md §7). Sources:

- ``rom``: the signed policy document;
- ``host``: the host's ``resource-limits.yaml`` (it wins over the cartridge budget, §9.5);
- ``cartridge``: the policy's ``budget`` default, where the host is silent;
- ``save-overlay``: a field-learned rule from ``save/policy/rule-overlay.json``;
- ``engram-default``: a value the policy leaves out and engram fills in (listed in §4);
- ``unset``: nobody sets it (no such limit);
- ``hint (ignored)``: a ``hints`` member, shown so nothing is hidden, never acted on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engram.core.canonical import Json, JsonObject
from engram.policy._document import LoopContextPolicy
from engram.policy._evaluator import DEFAULT_ACTIONS
from engram.policy._limits import EffectiveLimits, HostLimits, effective_limits
from engram.policy._lint import Accepted
from engram.policy._overlay import RuleOverlay

SUBAGENT_SUMMARY_TOKENS = 1500
"""§9.2: contextReturnBudgetTokens SHOULD default to 1000-2000; engram takes the middle."""


@dataclass(frozen=True)
class Entry:
    path: str
    value: Json
    source: str


@dataclass(frozen=True)
class EffectivePolicy:
    schema_version: str
    policy_digest: str
    entries: tuple[Entry, ...]
    limits: EffectiveLimits
    rules: tuple[tuple[JsonObject, str], ...]

    def value(self, path: str) -> Json:
        for entry in self.entries:
            if entry.path == path:
                return entry.value
        raise KeyError(path)

    def source(self, path: str) -> str:
        for entry in self.entries:
            if entry.path == path:
                return entry.source
        raise KeyError(path)

    def to_wire(self) -> JsonObject:
        return {
            "schemaVersion": self.schema_version,
            "policyDigest": self.policy_digest,
            "values": [
                {"path": e.path, "value": e.value, "source": e.source} for e in self.entries
            ],
            "rules": [{"rule": rule, "source": source} for rule, source in self.rules],
        }


def effective_policy(
    policy: LoopContextPolicy,
    host: HostLimits | None = None,
    overlay: RuleOverlay | None = None,
) -> EffectivePolicy:
    """Resolve ``policy`` against the host's limits and the SAVE overlay; nothing is mutated."""
    document: Accepted = policy.document()
    entries: list[Entry] = []
    loop = document["loop"]
    entries.append(Entry("loop.maxTurns", loop["maxTurns"], "rom"))
    entries.append(Entry("loop.cycle", loop["cycle"], "rom"))
    verification = loop.get("verification")
    if verification is not None:
        entries += _leaves("loop.verification", verification, "rom")
        if "maxAttempts" not in verification:
            entries.append(Entry("loop.verification.maxAttempts", 1, "engram-default"))
        if "blockOnFailure" not in verification:
            entries.append(Entry("loop.verification.blockOnFailure", True, "engram-default"))
    listed = {c["when"]: c["action"] for c in loop["stopConditions"]}
    for when, default in DEFAULT_ACTIONS.items():
        if when in listed:
            entries.append(Entry(f"loop.stopConditions.{when}", listed[when], "rom"))
        else:
            entries.append(Entry(f"loop.stopConditions.{when}", default, "engram-default"))
    if "handoff" in loop:
        entries += _leaves("loop.handoff", loop["handoff"], "rom")
    for agent in loop.get("subAgents") or []:
        base = f"loop.subAgents[{agent['id']}]"
        entries += _leaves(base, agent, "rom")
        if "concurrency" not in agent:
            entries.append(Entry(f"{base}.concurrency", "single_threaded", "engram-default"))
        if "contextReturnBudgetTokens" not in agent:
            entries.append(
                Entry(
                    f"{base}.contextReturnBudgetTokens", SUBAGENT_SUMMARY_TOKENS, "engram-default"
                )
            )
        if policy.schema_version.endswith("/1.1") and "mode" not in agent:
            entries.append(Entry(f"{base}.mode", "sync", "engram-default"))
    entries += _leaves("context", document["context"], "rom")
    for name in ("guardrailContract", "observability"):
        if name in document:
            entries += _leaves(name, document[name], "rom")
    limits = effective_limits(host, document.get("budget"))
    for (part, name), limit in limits.leaves.items():
        entries.append(Entry(f"budget.{part}.{name}", limit.value, limit.source))
    for name, value in (document.get("hints") or {}).items():
        entries.append(Entry(f"hints.{name}", value, "hint (ignored)"))
    rules = [(rule, "rom") for rule in document.get("rules") or []]
    rules += [(rule, "save-overlay") for rule in (overlay.rules if overlay else [])]
    return EffectivePolicy(
        schema_version=policy.schema_version,
        policy_digest=policy.digest,
        entries=tuple(entries),
        limits=limits,
        rules=tuple(rules),
    )


def _leaves(prefix: str, node: Mapping[str, Json], source: str) -> list[Entry]:
    out = []
    for key, value in node.items():
        if isinstance(value, dict):
            out += _leaves(f"{prefix}.{key}", value, source)
        else:
            out.append(Entry(f"{prefix}.{key}", value, source))
    return out


__all__ = ["SUBAGENT_SUMMARY_TOKENS", "EffectivePolicy", "Entry", "effective_policy"]
