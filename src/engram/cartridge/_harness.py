"""The signed harness-requirements manifest and the activation handshake (capability negotiation).

Spec: acx-cartridge-conformance §12 item 11 (§8, §8.5); docs/spec/acx.md §8. A cartridge has
exactly one ``rom/harness/requirements.json`` (``acx.harness.v1``), signed with the rest of ROM:

- ``requiredRoles``: a non-empty, sorted subset of the four host roles ``acx:execute``,
  ``acx:dispatch``, ``acx:memory.write``, ``acx:search``;
- ``capabilityScopes``: sorted scopes from the closed registry :data:`SCOPES`, or ``x-``
  prefixed extension scopes;
- ``requiredTools``: sorted MCP tool names the host must expose (may be empty);
- ``mcp.minProtocolRevision``: the oldest MCP protocol revision (``YYYY-MM-DD``) that works.

No other key is allowed (the object is closed, so a secret or a host-specific knob cannot hide
in it). :func:`negotiate` is the pure half of the §8.5 handshake: it returns the agreed terms or
raises :class:`ActivationRefused` naming every gap; it never touches the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engram.cartridge._errors import ActivationRefused
from engram.core.canonical import JsonValue
from engram.errors import CartridgeFormatError

HARNESS_SCHEMA_VERSION = "acx.harness.v1"
ROLES = ("acx:dispatch", "acx:execute", "acx:memory.write", "acx:search")
SCOPES = frozenset(
    {"fs.read", "fs.write", "memory.read", "memory.write", "net.egress", "proc.exec"}
)
_KEYS = frozenset({"schemaVersion", "requiredRoles", "capabilityScopes", "requiredTools", "mcp"})
_REVISION = re.compile(r"\d{4}-\d{2}-\d{2}")
_EXTENSION_SCOPE = re.compile(r"x-[a-z0-9][a-z0-9.-]{0,62}")
_TOOL = re.compile(r"[A-Za-z0-9_-]{1,64}")
DEFAULT_MIN_PROTOCOL_REVISION = "2025-06-18"


def default_requirements() -> dict[str, JsonValue]:
    """What ``engram cartridge build`` signs when no harness file is given."""
    return {
        "schemaVersion": HARNESS_SCHEMA_VERSION,
        "requiredRoles": list(ROLES),
        "capabilityScopes": ["memory.read", "memory.write"],
        "requiredTools": [],
        "mcp": {"minProtocolRevision": DEFAULT_MIN_PROTOCOL_REVISION},
    }


def check_requirements(
    document: object, where: str = "rom/harness/requirements.json"
) -> dict[str, Any]:
    """Return ``document`` if it is a valid ``acx.harness.v1`` manifest; else refuse it."""
    if not isinstance(document, dict):
        raise CartridgeFormatError(f"{where} must be a JSON object")
    keys = set(document)
    if keys != _KEYS:
        raise CartridgeFormatError(
            f"{where}: keys must be exactly {sorted(_KEYS)} (unexpected {sorted(keys - _KEYS)}, "
            f"missing {sorted(_KEYS - keys)})"
        )
    if document["schemaVersion"] != HARNESS_SCHEMA_VERSION:
        raise CartridgeFormatError(f"{where}: schemaVersion must be {HARNESS_SCHEMA_VERSION!r}")
    roles = _sorted_strings(document["requiredRoles"], where, "requiredRoles")
    if not roles or any(r not in ROLES for r in roles):
        raise CartridgeFormatError(
            f"{where}: requiredRoles must be a non-empty subset of {list(ROLES)}"
        )
    for scope in _sorted_strings(document["capabilityScopes"], where, "capabilityScopes"):
        if scope not in SCOPES and not _EXTENSION_SCOPE.fullmatch(scope):
            raise CartridgeFormatError(
                f"{where}: capability scope {scope!r} is not in {sorted(SCOPES)} and not x-prefixed"
            )
    for tool in _sorted_strings(document["requiredTools"], where, "requiredTools"):
        if not _TOOL.fullmatch(tool):
            raise CartridgeFormatError(f"{where}: tool name {tool!r} is not valid")
    mcp = document["mcp"]
    if not isinstance(mcp, dict) or set(mcp) != {"minProtocolRevision"}:
        raise CartridgeFormatError(f"{where}: mcp must be exactly {{minProtocolRevision}}")
    revision = mcp["minProtocolRevision"]
    if not isinstance(revision, str) or not _REVISION.fullmatch(revision):
        raise CartridgeFormatError(f"{where}: minProtocolRevision must be a YYYY-MM-DD revision")
    return document


def _sorted_strings(value: object, where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CartridgeFormatError(f"{where}: {key} must be a list of strings")
    if value != sorted(set(value)):
        raise CartridgeFormatError(f"{where}: {key} must be sorted and without duplicates")
    return list(value)


@dataclass(frozen=True)
class HostCapabilities:
    """What a host offers: roles it implements, scopes it grants, MCP revisions and tools."""

    roles: frozenset[str]
    scopes: frozenset[str]
    protocol_revisions: frozenset[str]
    tools: frozenset[str] = frozenset()

    @classmethod
    def of(
        cls,
        roles: Iterable[str],
        scopes: Iterable[str],
        protocol_revisions: Iterable[str],
        tools: Iterable[str] = (),
    ) -> HostCapabilities:
        return cls(
            frozenset(roles), frozenset(scopes), frozenset(protocol_revisions), frozenset(tools)
        )


@dataclass(frozen=True)
class Agreement:
    """The terms both sides accepted: activation proceeds on these."""

    roles: tuple[str, ...]
    scopes: tuple[str, ...]
    protocol_revision: str


def negotiate(requirements: dict[str, Any], host: HostCapabilities) -> Agreement:
    """The §8.5 handshake: agree on roles, scopes and an MCP revision, or refuse with every gap.

    The agreed revision is the newest one the host speaks that is not older than the
    cartridge's ``minProtocolRevision``.
    """
    gaps: list[str] = []
    missing_roles = sorted(set(requirements["requiredRoles"]) - host.roles)
    if missing_roles:
        gaps.append(f"host lacks role(s) {missing_roles}")
    missing_scopes = sorted(set(requirements["capabilityScopes"]) - host.scopes)
    if missing_scopes:
        gaps.append(f"host does not grant scope(s) {missing_scopes}")
    missing_tools = sorted(set(requirements["requiredTools"]) - host.tools)
    if missing_tools:
        gaps.append(f"host lacks tool(s) {missing_tools}")
    floor = requirements["mcp"]["minProtocolRevision"]
    usable = sorted(r for r in host.protocol_revisions if _REVISION.fullmatch(r) and r >= floor)
    if not usable:
        newest = max(host.protocol_revisions, default="none")
        gaps.append(f"MCP protocol revision {floor} or newer required, host speaks up to {newest}")
    if gaps:
        raise ActivationRefused("activation refused: " + "; ".join(gaps))
    return Agreement(
        roles=tuple(requirements["requiredRoles"]),
        scopes=tuple(requirements["capabilityScopes"]),
        protocol_revision=usable[-1],
    )


__all__ = [
    "DEFAULT_MIN_PROTOCOL_REVISION",
    "HARNESS_SCHEMA_VERSION",
    "ROLES",
    "SCOPES",
    "Agreement",
    "HostCapabilities",
    "check_requirements",
    "default_requirements",
    "negotiate",
]
