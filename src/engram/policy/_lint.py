"""The policy rules no JSON Schema can state (SPEC §9.2-§9.5, docs/spec/acx-policy.md §3).

- vendor specifics (reasoning effort, KV-cache or prefix-stability signals, summarization
  algorithms, vendor context-editing strategy ids, beta headers) appear only under ``hints``
  (§9.3, §9.5): a key that names one, or a string that carries one, anywhere else is refused;
- a ``cycle`` without ``verify`` justifies the omission in ``hints.verifyOmitted`` (§9.2);
- ``cycle`` keeps the canonical order of its phases ("an ordered subset", §9.2, §9.6);
- a sub-agent that can write is ``single_threaded`` (§9.2): ``parallel`` is allowed only when
  every tool it lists is read-only, and the only read-only role of §8.4 is ``acx:search``;
- each stop condition ``when`` is listed once, and rule and sub-agent ids are unique, so a
  policy never says two things about one event;
- ``hints`` cannot carry the outcome contract's members (§9.5: no field under hints may alter
  the §9.4 outcome contracts);
- a budget's ``defaultCommandSec`` is within its own ``maxCommandSec``.

Every function here is pure: a JSON value in, a list of :class:`Problem` out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, TypeAlias

from engram.core.canonical import Json
from engram.policy._errors import Problem

Accepted: TypeAlias = dict[str, Any]
"""A policy document (or overlay rule) that has passed its schema. Any on purpose: the schema
has shaped every member the semantic rules and resolvers read, and restating it as isinstance
checks would only add noise. Unchecked JSON is :data:`Json` until it gets here."""

CANONICAL_CYCLE = ("plan", "gather_context", "act", "verify", "reflect")
READ_ONLY_TOOLS = frozenset({"acx:search"})
"""Tools a ``parallel`` sub-agent may hold. §8.4's other required roles (execute, dispatch,
memory.write) write or decide; a host-specific tool name says nothing about its effects, so it
counts as writing (fail closed)."""

VERIFY_OMITTED_HINT = "verifyOmitted"
CONTRACT_MEMBERS = frozenset(
    {"outcomeReport", "outcome", "guardrailContract", "stopConditions", "handoff"}
)

# Key names that are vendor mechanics, wherever they appear outside hints (case-insensitive).
_VENDOR_KEY = re.compile(
    r"^(effort|reasoning_?effort|thinking(_?budget)?|budget_?tokens|kv_?cache.*|prefix_?stab.*|"
    r"prompt_?cach.*|cache_?control|summari[sz].*|compaction_?(mechanism|algorithm|strategy)|"
    r"context_?(editing|management)|clear_?tool_?uses|beta_?headers?|anthropic_?beta)$",
    re.IGNORECASE,
)
# Vendor strategy identifiers and beta headers inside strings: clear_tool_uses_20250919,
# compact_20260112, context-management-2025-06-27, interleaved-thinking-2025-05-14, ...
_VENDOR_VALUE = re.compile(
    r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)*_20\d{6}\b|\b[a-z][a-z0-9]*(?:-[a-z0-9]+)*-20\d{2}-\d{2}-\d{2}\b"
)


def vendor_problems(document: Mapping[str, Json]) -> list[Problem]:
    """Vendor specifics outside ``hints`` (engram.policy.vendor-only-in-hints)."""
    problems = []
    for path, key, value in _walk(document, "$"):
        if path == "$.hints":
            continue
        if key is not None and _VENDOR_KEY.match(key):
            problems.append(
                Problem(
                    "engram.policy.vendor-only-in-hints",
                    path,
                    f"{key!r} is a vendor/model-specific setting: it may appear only under hints",
                )
            )
        if isinstance(value, str):
            found = _VENDOR_VALUE.search(value)
            if found:
                problems.append(
                    Problem(
                        "engram.policy.vendor-only-in-hints",
                        path,
                        f"{found.group(0)!r} looks like a vendor strategy id or beta header: "
                        "it may appear only under hints",
                    )
                )
    return problems


def _walk(
    node: Json | Mapping[str, Json], path: str, key: str | None = None
) -> Iterator[tuple[str, str | None, Json | Mapping[str, Json]]]:
    yield path, key, node
    if path == "$.hints":
        return
    if isinstance(node, Mapping):
        for name, member in node.items():
            yield from _walk(member, _join(path, str(name)), str(name))
    elif isinstance(node, list):
        for index, member in enumerate(node):
            yield from _walk(member, f"{path}[{index}]")


def _join(path: str, name: str) -> str:
    return (
        f"{path}.{name}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else f"{path}[{name!r}]"
    )


def semantic_problems(document: Accepted) -> list[Problem]:
    """The semantic rules, for a document that already matches its schema."""
    loop = document["loop"]
    hints = document.get("hints") or {}
    problems: list[Problem] = []
    cycle = loop["cycle"]
    if "verify" not in cycle:
        reason = hints.get(VERIFY_OMITTED_HINT)
        if not isinstance(reason, str) or not reason.strip():
            problems.append(
                Problem(
                    "engram.policy.verify-justified",
                    "$.loop.cycle",
                    "cycle omits verify: justify it with a non-empty string in "
                    f"hints.{VERIFY_OMITTED_HINT}",
                )
            )
    positions = [CANONICAL_CYCLE.index(phase) for phase in cycle]
    if positions != sorted(positions):
        problems.append(
            Problem(
                "engram.policy.cycle-order",
                "$.loop.cycle",
                f"cycle {cycle} is not in the canonical order {list(CANONICAL_CYCLE)}",
            )
        )
    seen: dict[str, int] = {}
    for index, condition in enumerate(loop["stopConditions"]):
        when = condition["when"]
        if when in seen:
            problems.append(
                Problem(
                    "engram.policy.unambiguous",
                    f"$.loop.stopConditions[{index}].when",
                    f"{when!r} is already listed at stopConditions[{seen[when]}]",
                )
            )
        seen.setdefault(when, index)
    problems += _duplicates(loop.get("subAgents") or [], "$.loop.subAgents", "sub-agent")
    problems += _duplicates(document.get("rules") or [], "$.rules", "rule")
    for index, agent in enumerate(loop.get("subAgents") or []):
        if agent.get("concurrency", "single_threaded") != "parallel":
            continue
        writers = [tool for tool in agent["tools"] if tool not in READ_ONLY_TOOLS]
        if writers:
            problems.append(
                Problem(
                    "engram.policy.writer-single-threaded",
                    f"$.loop.subAgents[{index}].concurrency",
                    f"sub-agent {agent['id']!r} may write or decide (tools {writers}): it must be "
                    "single_threaded; only read-only fan-out may be parallel",
                )
            )
    problems += [
        Problem(
            "engram.policy.hints-ignorable",
            f"$.hints.{name}",
            f"hints cannot carry {name!r}: no hint may alter the outcome contract",
        )
        for name in sorted(set(hints) & CONTRACT_MEMBERS)
    ]
    timeouts = (document.get("budget") or {}).get("timeouts")
    if timeouts and timeouts["defaultCommandSec"] > timeouts["maxCommandSec"]:
        problems.append(
            Problem(
                "engram.policy.budget-consistent",
                "$.budget.timeouts.defaultCommandSec",
                f"defaultCommandSec {timeouts['defaultCommandSec']} exceeds maxCommandSec "
                f"{timeouts['maxCommandSec']}",
            )
        )
    return problems


def _duplicates(items: list[Accepted], path: str, what: str) -> list[Problem]:
    first: dict[str, int] = {}
    problems = []
    for index, item in enumerate(items):
        ident = item["id"]
        if ident in first:
            problems.append(
                Problem(
                    "engram.policy.unambiguous",
                    f"{path}[{index}].id",
                    f"{what} id {ident!r} is already used at {path}[{first[ident]}]",
                )
            )
        first.setdefault(ident, index)
    return problems


__all__ = [
    "CANONICAL_CYCLE",
    "CONTRACT_MEMBERS",
    "READ_ONLY_TOOLS",
    "VERIFY_OMITTED_HINT",
    "semantic_problems",
    "vendor_problems",
]
