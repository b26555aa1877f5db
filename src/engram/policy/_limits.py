"""Host ``resource-limits.yaml`` and the precedence rule: host policy > cartridge default.

SPEC §9.5 (lboel/acx@85f1358): a policy's ``budget`` reuses ``ResourceLimits`` verbatim as
cartridge-authored *defaults*; "at runtime the host's ``meta/game/resource-limits.yaml`` MUST take
precedence; enforcement order is host policy > cartridge default, so a shared cartridge can
never raise a consuming org's ceilings". The YAML layout is left to the host; engram's (in
docs/spec/acx-policy.md §5) is the ResourceLimits shape itself, with every part optional:

.. code-block:: yaml

    tokenSpend: {dailyPerProject: 5000000, dailyPerAgent: 1000000, dailyGlobal: 20000000}
    concurrency: {maxCommandsPerStation: 2, maxStationsPerProject: 8, maxGlobalInFlightCommands: 16}
    timeouts: {defaultCommandSec: 900, maxCommandSec: 3600}
    killSwitch: {enabled: false, reason: null, pausedProjectIds: [], pausedStationIds: []}

A host file is read with PyYAML's safe loader, refusing duplicate keys, unknown keys, wrong
types and anything over 64 KiB: a typo must never silently drop a ceiling. Each leaf of the
effective limits records where it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from engram.core.bounds import check_shape, check_yaml_text
from engram.core.canonical import Json, JsonObject
from engram.errors import InvalidRequest
from engram.policy._errors import HostLimitsError

MAX_HOST_LIMITS_BYTES = 64 * 1024
HOST_LIMITS_FILE = "meta/game/resource-limits.yaml"

LeafKind = Literal["number", "integer", "boolean", "text", "list"]
LEAVES: dict[tuple[str, str], LeafKind] = {
    ("tokenSpend", "dailyPerProject"): "number",
    ("tokenSpend", "dailyPerAgent"): "number",
    ("tokenSpend", "dailyGlobal"): "number",
    ("concurrency", "maxCommandsPerStation"): "integer",
    ("concurrency", "maxStationsPerProject"): "integer",
    ("concurrency", "maxGlobalInFlightCommands"): "integer",
    ("timeouts", "defaultCommandSec"): "integer",
    ("timeouts", "maxCommandSec"): "integer",
    ("killSwitch", "enabled"): "boolean",
    ("killSwitch", "reason"): "text",
    ("killSwitch", "pausedProjectIds"): "list",
    ("killSwitch", "pausedStationIds"): "list",
}
_PARTS = tuple(dict.fromkeys(part for part, _ in LEAVES))

Source = Literal["host", "cartridge", "unset"]


@dataclass(frozen=True)
class HostLimits:
    """The leaves a host file sets (``("timeouts", "maxCommandSec") -> 3600``)."""

    values: Mapping[tuple[str, str], Json]

    @classmethod
    def empty(cls) -> HostLimits:
        return cls({})


@dataclass(frozen=True)
class Limit:
    """One effective leaf: its value (None when nobody set it) and where it came from."""

    value: Json
    source: Source
    cartridge_value: Json = None
    """What the cartridge asked for, kept when the host's value overrode it."""


@dataclass(frozen=True)
class EffectiveLimits:
    leaves: Mapping[tuple[str, str], Limit]

    def value(self, part: str, name: str) -> Json:
        return self.leaves[(part, name)].value

    def to_wire(self) -> JsonObject:
        out: dict[str, JsonObject] = {}
        for (part, name), limit in self.leaves.items():
            entry: JsonObject = {"value": limit.value, "source": limit.source}
            if limit.source == "host" and limit.cartridge_value is not None:
                entry["cartridgeDefault"] = limit.cartridge_value
            out.setdefault(part, {})[name] = entry
        return dict(out)


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that names one key twice."""


# Any: PyYAML constructs untyped objects; load_host_limits narrows what comes out of it.
def _unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise HostLimitsError(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
        seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    _unique_mapping,
)


def load_host_limits(data: bytes, *, what: str = HOST_LIMITS_FILE) -> HostLimits:
    """Parse a host ``resource-limits.yaml``; :class:`HostLimitsError` names what is wrong."""
    if len(data) > MAX_HOST_LIMITS_BYTES:
        raise HostLimitsError(f"{what}: {len(data)} bytes > {MAX_HOST_LIMITS_BYTES}")
    try:
        text = bytes(data).decode("utf-8")
        # PyYAML's composer recurses per nesting level and its int constructor calls int():
        # the text's shape is checked first, the composed value (aliases expanded) after.
        check_yaml_text(text, what)
        document = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader
        check_shape(document, what)
    except InvalidRequest as e:
        raise HostLimitsError(e.message) from e
    except HostLimitsError as e:
        raise HostLimitsError(f"{what}: {e.message}") from e
    except (UnicodeDecodeError, yaml.YAMLError) as e:
        # PyYAML's message spans lines (a caret under the column): one line here.
        raise HostLimitsError(f"{what}: not YAML: {' '.join(str(e).split())[:300]}") from e
    if document is None:
        return HostLimits.empty()
    if not isinstance(document, dict):
        raise HostLimitsError(f"{what}: the top level is a mapping of {', '.join(_PARTS)}")
    values: dict[tuple[str, str], Json] = {}
    for part, body in document.items():
        if part not in _PARTS:
            raise HostLimitsError(f"{what}: unknown key {part!r} (known: {', '.join(_PARTS)})")
        if body is None:
            continue
        if not isinstance(body, dict):
            raise HostLimitsError(f"{what}: {part} is a mapping")
        for name, value in body.items():
            kind = LEAVES.get((part, name))
            if kind is None:
                known = ", ".join(n for p, n in LEAVES if p == part)
                raise HostLimitsError(f"{what}: unknown key {part}.{name} (known: {known})")
            if value is None:
                continue
            values[(part, name)] = _leaf(value, kind, f"{what}: {part}.{name}")
    return HostLimits(values)


def _leaf(value: object, kind: LeafKind, where: str) -> Json:
    if kind == "boolean":
        if not isinstance(value, bool):
            raise HostLimitsError(f"{where} is true or false")
        return value
    if kind == "text":
        if not isinstance(value, str):
            raise HostLimitsError(f"{where} is a string")
        return value
    if kind == "list":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise HostLimitsError(f"{where} is a list of strings")
        return list(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise HostLimitsError(f"{where} is a number")
    if kind == "integer" and not (isinstance(value, int) or float(value).is_integer()):
        raise HostLimitsError(f"{where} is a whole number")
    if value != value or value in (float("inf"), float("-inf")):
        raise HostLimitsError(f"{where} is a finite number")
    minimum = 0 if kind == "number" else 1
    if value < minimum:
        raise HostLimitsError(f"{where} is at least {minimum}")
    return int(value) if kind == "integer" else value


def effective_limits(
    host: HostLimits | None, cartridge_budget: Mapping[str, Json] | None
) -> EffectiveLimits:
    """Every ResourceLimits leaf: the host's value when it sets one, else the cartridge's.

    Host policy > cartridge default, leaf by leaf: where the host file names a ceiling the
    cartridge cannot move it, up or down; where the host is silent the cartridge's default
    applies; where neither speaks the leaf is ``unset`` (no limit from either side).
    """
    host_values = host.values if host is not None else {}
    budget = cartridge_budget or {}
    leaves: dict[tuple[str, str], Limit] = {}
    for part, name in LEAVES:
        section = budget.get(part)
        ours = section.get(name) if isinstance(section, dict) else None
        if (part, name) in host_values:
            leaves[(part, name)] = Limit(host_values[(part, name)], "host", ours)
        elif ours is not None:
            leaves[(part, name)] = Limit(ours, "cartridge")
        else:
            leaves[(part, name)] = Limit(None, "unset")
    return EffectiveLimits(leaves)


__all__ = [
    "HOST_LIMITS_FILE",
    "LEAVES",
    "MAX_HOST_LIMITS_BYTES",
    "EffectiveLimits",
    "HostLimits",
    "Limit",
    "effective_limits",
    "load_host_limits",
]
