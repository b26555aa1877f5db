"""Harness requirements (§8) and the §8.5 handshake with its compliance descriptor.

Spec: lboel/acx@85f1358 SPEC.md §8.1-§8.6 and §12 item 11; the published
``harness-requirements.schema.json``; docs/spec/acx.md §10.

The manifest is ``rom/manifest/harness-requirements.json`` (``acx.harness.v1``): tool-role
contracts (MCP ``{name, description, inputSchema}`` plus ``role``, ``tier``,
``capabilityScopes``), the required four roles, an MCP ``minProtocolRevision`` floor and model
floors. engram writes it schema-valid; it reads the reference's looser spellings too (a
``filesystem``/``network`` list of scopes, ``externalTools``) because the rules that matter
(the four roles, scopes in the closed vocabulary, a date floor) are checked by
:func:`harness_problems` whatever the shape.

:func:`negotiate` is the pure §8.5 handshake: it binds one host tool per role (``inputSchema``
structurally accepting: every contract-required property present with a compatible type; granted
scopes a superset of the contract's), applies every refusal rule and returns the compliance
descriptor. It never touches a file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engram.cartridge._records import array
from engram.cartridge._schemas import issues
from engram.core.canonical import Json, JsonObject

HARNESS_FILE = "rom/manifest/harness-requirements.json"
HARNESS_SCHEMA_VERSION = "acx.harness.v1"
COMPLIANCE_SCHEMA_VERSION = "acx.harness.compliance.v1"
COMPLIANCE_MEDIA_TYPE = "application/vnd.acx.harness-compliance.v1+json"
SCOPES = frozenset(
    {"exec", "dispatch", "memory.write", "memory.read", "search", "knowledge.write", "fs.read",
     "fs.write", "net.fetch"}
)  # fmt: skip
REQUIRED_ROLES: dict[str, frozenset[str]] = {
    "acx:execute": frozenset({"exec"}),
    "acx:dispatch": frozenset({"dispatch"}),
    "acx:memory.write": frozenset({"memory.write"}),
    "acx:search": frozenset({"search", "memory.read"}),
}
"""The required minimal contract (§8.4): each role and the scopes it must at least carry."""
MIN_PROTOCOL_FLOOR = "2024-11-05"
PREFERRED_REVISION = "2025-11-25"
_REVISION = re.compile(r"\d{4}-\d{2}-\d{2}")
_X_SCOPE = re.compile(r"x-[a-z0-9][a-z0-9._-]*")


def _tool(role: str, scopes: list[str], name: str, description: str, prop: str) -> dict[str, Any]:
    return {
        "role": role,
        "tier": "required",
        "capabilityScopes": scopes,
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "required": [prop],
            "properties": {prop: {"type": "string"}},
        },
    }


def default_requirements() -> JsonObject:
    """What export signs when the agent package brings no harness manifest (schema-valid)."""
    return {
        "schemaVersion": HARNESS_SCHEMA_VERSION,
        "mcp": {
            "minProtocolRevision": MIN_PROTOCOL_FLOOR,
            "preferredProtocolRevision": PREFERRED_REVISION,
        },
        "model": {"toolUse": True, "minContextWindowTokens": 100000, "structuredOutput": False},
        "requiredTools": [
            _tool(
                "acx:execute",
                ["exec", "fs.read"],
                "execute",
                "Run commands/code in a sandbox.",
                "command",
            ),
            _tool(
                "acx:dispatch",
                ["dispatch"],
                "dispatch",
                "Spawn/route a sub-agent unit of work.",
                "task",
            ),
            _tool(
                "acx:memory.write",
                ["memory.write"],
                "add_memory",
                "Append a durable SAVE-zone record.",
                "summary",
            ),
            _tool(
                "acx:search",
                ["search", "memory.read"],
                "search_memory",
                "Retrieval over memory + knowledge.",
                "query",
            ),
        ],
        "optionalTools": [
            {
                "role": "acx:list_agents",
                "tier": "optional",
                "capabilityScopes": ["memory.read"],
                "name": "list_agents",
                "description": "Inventory of available agents (nice-to-have).",
                "inputSchema": {"type": "object", "properties": {}},
            }
        ],
        "filesystem": {"read": ["**"]},
        "network": {"egress": "none"},
    }


def harness_problems(doc: Json, *, strict: bool = False) -> list[str]:
    """Every rule of §8.1-§8.4 ``doc`` breaks; ``strict`` adds the published schema."""
    where = HARNESS_FILE
    if not isinstance(doc, dict):
        return [f"{where} is not a JSON object"]
    if doc.get("schemaVersion") != HARNESS_SCHEMA_VERSION:
        return [
            f"{where}: schemaVersion {doc.get('schemaVersion')!r} is not {HARNESS_SCHEMA_VERSION}"
        ]
    found = issues("harness-requirements", doc, where) if strict else []
    mcp = doc.get("mcp")
    floor = mcp.get("minProtocolRevision") if isinstance(mcp, dict) else None
    if not isinstance(floor, str) or not _REVISION.fullmatch(floor):
        found.append(f"{where}: mcp.minProtocolRevision must be a YYYY-MM-DD floor")
    model = doc.get("model")
    if (
        not isinstance(model, dict)
        or not isinstance(model.get("minContextWindowTokens"), int)
        or isinstance(model.get("minContextWindowTokens"), bool)
    ):
        found.append(f"{where}: model.minContextWindowTokens must be an integer token floor")
    roles: dict[str, JsonObject] = {}
    for key, tier in (("requiredTools", "required"), ("optionalTools", "optional")):
        tools = doc.get(key, [])
        if not isinstance(tools, list):
            found.append(f"{where}: {key} must be a list")
            continue
        for index, tool in enumerate(tools):
            at = f"{where}: {key}[{index}]"
            role = tool.get("role") if isinstance(tool, dict) else None
            if not isinstance(tool, dict) or not isinstance(role, str):
                found.append(f"{at} is not a tool-role contract")
                continue
            if tool.get("tier") != tier:
                found.append(f"{at}: tier must be {tier!r}")
            scopes = tool.get("capabilityScopes")
            if not isinstance(scopes, list) or not scopes:
                found.append(f"{at}: capabilityScopes must be a non-empty list")
                scopes = []
            for scope in scopes:
                if scope not in SCOPES and not (
                    isinstance(scope, str) and _X_SCOPE.fullmatch(scope)
                ):
                    found.append(f"{at}: scope {scope!r} is not in the §8.3 vocabulary")
            if not isinstance(tool.get("inputSchema"), dict):
                found.append(f"{at}: inputSchema must be a JSON Schema object")
            if role in roles:
                found.append(f"{at}: role {role} is declared twice")
            roles[role] = tool
    for role, needed in REQUIRED_ROLES.items():
        tool = roles.get(role)
        if tool is None or tool.get("tier") != "required":
            found.append(f"{where}: the required role {role} is missing (§8.4)")
        elif not needed <= {s for s in array(tool.get("capabilityScopes")) if isinstance(s, str)}:
            found.append(f"{where}: {role} must carry the scopes {sorted(needed)}")
    return found


@dataclass(frozen=True)
class HostTool:
    name: str
    scopes: frozenset[str]
    input_schema: Mapping[str, Any] | None = None
    """None: the host does not advertise a schema; taken as accepting (documented)."""


@dataclass(frozen=True)
class Host:
    """What a host offers at handshake time (§8.5 steps 2-3)."""

    protocol_revisions: tuple[str, ...]
    tools: tuple[HostTool, ...]
    tool_use: bool = True
    context_window_tokens: int = 200_000
    structured_output: bool = False
    filesystem: Mapping[str, Sequence[str]] = field(default_factory=dict)
    network_egress: str = "none"
    bindings: Mapping[str, str] = field(default_factory=dict)
    """role -> host tool name, when the host chooses; else bound by contract name, then scan."""


def _type_ok(contract: Json, host: Json) -> bool:
    if not isinstance(contract, dict) or not isinstance(host, dict):
        return True
    want, have = contract.get("type"), host.get("type")
    if want is None or have is None:
        return True
    want_set = set(want) if isinstance(want, list) else {want}
    have_set = set(have) if isinstance(have, list) else {have}
    if "number" in have_set:
        have_set.add("integer")
    return want_set <= have_set


def accepts(host_schema: Mapping[str, Any] | None, contract: Mapping[str, Any]) -> bool:
    """§8.5 structural acceptance: every contract-required property present, types compatible."""
    if host_schema is None:
        return True
    props = host_schema.get("properties") or {}
    contract_props = contract.get("properties") or {}
    for name in contract.get("required") or []:
        if name not in props or not _type_ok(contract_props.get(name), props[name]):
            return False
    host_required = set(host_schema.get("required") or [])
    return host_required <= set(contract.get("required") or []) | set(contract_props)


def requirements_hash(manifest_bytes: bytes) -> str:
    return "sha256:" + hashlib.sha256(manifest_bytes).hexdigest()


def negotiate(doc: Mapping[str, Any], manifest_bytes: bytes, host: Host) -> JsonObject:
    """The compliance descriptor (``verdict`` accept or refuse, with every unmet requirement)."""
    unmet: list[str] = []
    floor = str(doc["mcp"]["minProtocolRevision"])
    revisions = sorted(r for r in host.protocol_revisions if _REVISION.fullmatch(r))
    negotiated = revisions[-1] if revisions else "0000-00-00"
    if negotiated < floor:
        unmet.append(f"mcp.minProtocolRevision: host speaks {negotiated}, floor is {floor}")
    model = doc.get("model") or {}
    if model.get("toolUse") and not host.tool_use:
        unmet.append("model.toolUse: tool use is required")
    if host.context_window_tokens < int(model.get("minContextWindowTokens") or 0):
        unmet.append(
            f"model.minContextWindowTokens: host has {host.context_window_tokens}, "
            f"needs {model.get('minContextWindowTokens')}"
        )
    bindings: list[Json] = []
    by_name = {t.name: t for t in host.tools}
    for key in ("requiredTools", "optionalTools"):
        for contract in doc.get(key) or []:
            role, wanted = contract["role"], set(contract["capabilityScopes"])
            schema = contract.get("inputSchema") or {}
            chosen = by_name.get(host.bindings.get(role, contract.get("name", "")))
            if chosen is None or not accepts(chosen.input_schema, schema):
                chosen = next(
                    (
                        t
                        for t in host.tools
                        if wanted <= t.scopes and accepts(t.input_schema, schema)
                    ),
                    None,
                )
            satisfied = (
                chosen is not None
                and wanted <= chosen.scopes
                and accepts(chosen.input_schema, schema)
            )
            bindings.append(
                {
                    "role": role,
                    "boundTool": None if chosen is None else chosen.name,
                    "scopesGranted": list[Json](
                        sorted(s for s in (chosen.scopes if chosen else ()) if s in SCOPES)
                    ),
                    "satisfied": satisfied,
                }
            )
            if contract.get("tier") == "required" and not satisfied:
                why = "unbound" if chosen is None else "scope-denied or schema not accepting"
                unmet.append(f"{role}: {why}")
    fs = doc.get("filesystem")
    wanted_fs = fs if isinstance(fs, dict) else {"read": ["**"]} if fs else {}
    for mode in ("read", "write"):
        for glob in wanted_fs.get(mode, []) if isinstance(wanted_fs, dict) else []:
            if glob not in host.filesystem.get(mode, ()) and "**" not in host.filesystem.get(
                mode, ()
            ):
                unmet.append(f"filesystem.{mode}: {glob} not granted")
    net = doc.get("network")
    egress = net.get("egress", "none") if isinstance(net, dict) else "none"
    order = ["none", "allowlist", "any"]
    if order.index(egress if egress in order else "any") > order.index(
        host.network_egress if host.network_egress in order else "none"
    ):
        unmet.append(f"network.egress: {egress} not granted")
    descriptor: JsonObject = {
        "schemaVersion": COMPLIANCE_SCHEMA_VERSION,
        "requirementsHash": requirements_hash(manifest_bytes),
        "protocolRevision": negotiated if revisions else "0000-01-01",
        "model": {
            "toolUse": host.tool_use,
            "contextWindowTokens": max(1, host.context_window_tokens),
            "structuredOutput": host.structured_output,
        },
        "bindings": bindings,
        "filesystemGranted": {
            k: list(v) for k, v in host.filesystem.items() if k in ("read", "write")
        },
        "networkGranted": {"egress": host.network_egress},
        "verdict": "refuse" if unmet else "accept",
        "unmet": list[Json](unmet),
    }
    return descriptor


def unsupported_harness_error(descriptor: Mapping[str, Any], host: Host) -> JsonObject:
    """The JSON-RPC error of a refusal, in MCP's exact form (§8.5 step 5)."""
    return {
        "code": -32602,
        "message": "Unsupported harness",
        "data": {
            "unmet": list(descriptor["unmet"]),
            "supported": list[Json](sorted(host.protocol_revisions)),
            "requested": [b["role"] for b in descriptor["bindings"]],
        },
    }


def preflight(descriptor: Mapping[str, Any], doc: Mapping[str, Any]) -> list[str]:
    """§8.5 step 6: the roles a persisted descriptor shows unsatisfied (activation aborts)."""
    required = {t["role"] for t in doc.get("requiredTools") or []}
    return [
        str(b["role"])
        for b in descriptor.get("bindings") or []
        if b.get("role") in required and not b.get("satisfied")
    ]


__all__ = [
    "COMPLIANCE_MEDIA_TYPE",
    "COMPLIANCE_SCHEMA_VERSION",
    "HARNESS_FILE",
    "HARNESS_SCHEMA_VERSION",
    "REQUIRED_ROLES",
    "SCOPES",
    "Host",
    "HostTool",
    "accepts",
    "default_requirements",
    "harness_problems",
    "negotiate",
    "preflight",
    "requirements_hash",
    "unsupported_harness_error",
]
