"""The host descriptor: a JSON file in which a host states what it offers at handshake time
(§8.5 steps 2-3: MCP revisions, tools with their scopes and input schemas, the model's tool use
and context window, filesystem and network reach), read into a :class:`Host`.

engram's own format (docs/spec/acx.md §8, "Host descriptor"); ``engram cartridge check`` and
``activate`` take it with ``--host-descriptor``. The library parses it so that every caller
refuses the same documents the same way (the CLI chooses the file, the library reads it).
"""

from __future__ import annotations

from engram.cartridge._harness import Host, HostTool
from engram.core.canonical import Json, JsonObject, parse_object
from engram.errors import InvalidRequest


def load_host_descriptor(data: bytes, what: str) -> Host:
    """The host descriptor in ``data`` (``what`` names it in errors): a member that is absent or
    null takes its default; one of the wrong type is refused (InvalidRequest, naming it) rather
    than coerced."""
    doc = parse_object(data, what=what, error=InvalidRequest)

    def member(parent: JsonObject, name: str, kind: type[object], where: str) -> Json:
        value = parent.get(name)
        # bool is an int to isinstance; JSON keeps true/false and numbers apart.
        fits = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
        if value is not None and not fits:
            raise InvalidRequest(f"{what}: {where} must be {_KINDS[kind]}")
        return value

    def section(name: str) -> JsonObject:
        value = member(doc, name, dict, name)
        return value if isinstance(value, dict) else {}

    def strings(parent: JsonObject, name: str, where: str) -> tuple[str, ...]:
        value = member(parent, name, list, where)
        items = value if isinstance(value, list) else []
        if not all(isinstance(item, str) for item in items):
            raise InvalidRequest(f"{what}: {where} must be an array of strings")
        return tuple(str(item) for item in items)

    tools: list[HostTool] = []
    listed = member(doc, "tools", list, "tools")
    for index, tool in enumerate(listed if isinstance(listed, list) else []):
        where = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise InvalidRequest(f"{what}: {where} must be an object")
        name = tool.get("name")
        if not isinstance(name, str):
            raise InvalidRequest(f"{what}: {where}.name must be a string")
        schema = member(tool, "inputSchema", dict, f"{where}.inputSchema")
        tools.append(
            HostTool(
                name,
                frozenset(strings(tool, "scopes", f"{where}.scopes")),
                schema if isinstance(schema, dict) else None,
            )
        )
    model, network = section("model"), section("network")
    tool_use = member(model, "toolUse", bool, "model.toolUse")
    window = member(model, "contextWindowTokens", int, "model.contextWindowTokens")
    egress = member(network, "egress", str, "network.egress")
    filesystem = section("filesystem")
    return Host(
        protocol_revisions=strings(doc, "protocolRevisions", "protocolRevisions"),
        tools=tuple(tools),
        tool_use=tool_use if isinstance(tool_use, bool) else True,
        context_window_tokens=window if isinstance(window, int) else 200000,
        filesystem={name: strings(filesystem, name, f"filesystem.{name}") for name in filesystem},
        network_egress=egress if isinstance(egress, str) else "none",
    )


_KINDS: dict[type[object], str] = {
    bool: "true or false",
    dict: "an object",
    int: "an integer",
    list: "an array",
    str: "a string",
}


__all__ = ["load_host_descriptor"]
