"""Harness requirements (§8): one signed manifest, four required roles, and a §8.5 handshake
whose refusal never touches the file.

SPEC §8.1-§8.6 and §12 item 11 (lboel/acx@85f1358). The compliance descriptor is checked
against the published schema's ``harnessCompliance`` definition with ``jsonschema``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cartridge_kit import NOW, SCHEMAS, build, digest, execute, registry_for, rows, write_package
from jsonschema import Draft202012Validator

from engram.cartridge import (
    ActivationRefused,
    Cartridge,
    ExportOptions,
    Host,
    HostTool,
    UntrustedCartridge,
    activate,
    check_host,
    load_rom,
    package_contents,
    write,
)
from engram.cartridge.internals import (
    COMPLIANCE_FILE,
    REQUIRED_ROLES,
    accepts,
    default_requirements,
    harness_problems,
    negotiate,
    preflight,
)
from engram.core.canonical import canonicalize
from engram.core.keys import PrivateKey
from engram.errors import CartridgeFormatError
from engram.trust import TrustState

HARNESS = "rom/manifest/harness-requirements.json"
TOOLS = (
    ("execute", {"exec", "fs.read"}),
    ("dispatch", {"dispatch"}),
    ("add_memory", {"memory.write"}),
    ("search_memory", {"search", "memory.read"}),
)
FULL_HOST = Host(
    protocol_revisions=("2025-03-26", "2025-06-18", "2025-11-25"),
    tools=tuple(HostTool(n, frozenset(s)) for n, s in TOOLS),
    filesystem={"read": ["**"]},
)


def _compliance() -> Draft202012Validator:
    schema = json.loads((SCHEMAS / "harness-requirements.schema.json").read_text())
    return Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/harnessCompliance"})


@pytest.fixture
def key() -> PrivateKey:
    return PrivateKey.generate()


@pytest.fixture
def signed(tmp_path: Path, key: PrivateKey) -> Path:
    return build(tmp_path / "c.acx", key=key, package=write_package(tmp_path / "pkg"))


def _registry(key: PrivateKey) -> Any:
    return registry_for(key.public_key())


@pytest.mark.req("engram.cartridge.harness-manifest")
def test_exactly_one_signed_harness_manifest(signed: Path) -> None:
    with Cartridge.open(signed) as cartridge:
        rom = load_rom(cartridge)
    assert json.loads(rom.files[HARNESS]) == default_requirements()
    assert set(REQUIRED_ROLES) == {"acx:execute", "acx:dispatch", "acx:memory.write", "acx:search"}
    harness = [e for e in rom.manifest if "harness" in str(e["sourceRef"])]
    assert [e["sourceRef"] for e in harness] == [HARNESS]
    schema = json.loads((SCHEMAS / "harness-requirements.schema.json").read_text())
    assert not list(Draft202012Validator(schema).iter_errors(json.loads(rom.files[HARNESS])))


def _without_role(role: str) -> dict[str, Any]:
    doc: dict[str, Any] = copy.deepcopy(default_requirements())
    doc["requiredTools"] = [t for t in doc["requiredTools"] if t["role"] != role]
    return doc


def _changed(path: list[object], value: object) -> dict[str, Any]:
    doc: Any = copy.deepcopy(default_requirements())
    target = doc
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return dict(doc)


@pytest.mark.req("engram.cartridge.harness-manifest", "engram.cartridge.harness-floors")
@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (_without_role("acx:search"), "required role acx:search is missing"),
        (_without_role("acx:execute"), "required role acx:execute is missing"),
        (_changed(["requiredTools", 0, "tier"], "optional"), "tier must be 'required'"),
        (_changed(["requiredTools", 1, "capabilityScopes"], ["fs.everything"]), "§8.3 vocabulary"),
        (_changed(["requiredTools", 1, "capabilityScopes"], []), "non-empty list"),
        (_changed(["requiredTools", 3, "capabilityScopes"], ["search"]), "must carry the scopes"),
        (_changed(["mcp", "minProtocolRevision"], "latest"), "YYYY-MM-DD"),
        (_changed(["model", "minContextWindowTokens"], "claude-opus"), "integer token floor"),
        (_changed(["schemaVersion"], "acx.harness.v2"), "is not acx.harness.v1"),
        (_changed(["optionalTools", 0, "tier"], "required"), "tier must be 'optional'"),
        (_changed(["requiredTools", 0, "inputSchema"], "object"), "inputSchema must be"),
    ],
)
def test_the_harness_rules(doc: dict[str, Any], message: str) -> None:
    problems = harness_problems(doc, strict=True)
    assert any(message in p for p in problems), problems


@pytest.mark.req("engram.cartridge.harness-manifest")
def test_a_duplicate_role_is_refused() -> None:
    doc: Any = copy.deepcopy(default_requirements())
    doc["requiredTools"].append(copy.deepcopy(doc["requiredTools"][0]))
    assert any("declared twice" in p for p in harness_problems(doc))


@pytest.mark.req("engram.cartridge.harness-manifest")
def test_extension_scopes_are_x_prefixed() -> None:
    doc = _changed(["requiredTools", 0, "capabilityScopes"], ["exec", "x-acme.deploy"])
    assert harness_problems(doc) == []
    assert harness_problems(
        _changed(["requiredTools", 0, "capabilityScopes"], ["exec", "acme.deploy"])
    )


@pytest.mark.req("engram.cartridge.activation-handshake")
def test_activation_succeeds_and_records_the_descriptor_in_save(
    signed: Path, key: PrivateKey
) -> None:
    with Cartridge.open(signed) as cartridge:
        rom_hash = load_rom(cartridge).manifest_hash
    done = activate(signed, FULL_HOST, registry=_registry(key), now=NOW)
    assert done.report.state is TrustState.TRUSTED
    assert done.descriptor["verdict"] == "accept"
    assert done.descriptor["protocolRevision"] == "2025-11-25"
    assert not list(_compliance().iter_errors(done.descriptor))
    ((manifest_bytes,),) = rows(signed, "SELECT data FROM sqlar WHERE name = ?", (HARNESS,))
    assert (
        done.descriptor["requirementsHash"]
        == "sha256:" + hashlib.sha256(manifest_bytes).hexdigest()
    )
    with Cartridge.open(signed) as cartridge:
        persisted = json.loads(cartridge.read(COMPLIANCE_FILE))
        assert load_rom(cartridge).manifest_hash == rom_hash
    assert persisted == done.descriptor
    assert [b["satisfied"] for b in persisted["bindings"]] == [True] * 5


def _host(**change: Any) -> Host:
    fields: dict[str, Any] = {
        "protocol_revisions": FULL_HOST.protocol_revisions,
        "tools": FULL_HOST.tools,
        "filesystem": FULL_HOST.filesystem,
    }
    fields.update(change)
    return Host(**fields)


@pytest.mark.req("engram.cartridge.activation-handshake", "engram.cartridge.harness-floors")
@pytest.mark.parametrize(
    ("host", "message"),
    [
        (_host(tools=FULL_HOST.tools[:3]), "acx:search: unbound"),
        (
            _host(tools=(*FULL_HOST.tools[:3], HostTool("search_memory", frozenset({"search"})))),
            "acx:search",
        ),
        (_host(protocol_revisions=("2024-10-07",)), "floor is 2024-11-05"),
        (_host(protocol_revisions=()), "mcp.minProtocolRevision"),
        (_host(tool_use=False), "model.toolUse"),
        (_host(context_window_tokens=8000), "model.minContextWindowTokens"),
        (_host(filesystem={}), "filesystem.read"),
        (
            _host(
                tools=(
                    *FULL_HOST.tools[:3],
                    HostTool(
                        "search_memory",
                        frozenset({"search", "memory.read"}),
                        {
                            "type": "object",
                            "required": ["q"],
                            "properties": {"q": {"type": "string"}},
                        },
                    ),
                )
            ),
            "acx:search",
        ),
    ],
)
def test_a_refused_handshake_leaves_every_byte(
    signed: Path, key: PrivateKey, host: Host, message: str
) -> None:
    before = digest(signed)
    with pytest.raises(ActivationRefused, match=message) as refused:
        activate(signed, host, registry=_registry(key), now=NOW)
    assert digest(signed) == before
    descriptor, error = refused.value.descriptor, refused.value.error
    assert descriptor is not None
    assert descriptor["verdict"] == "refuse"
    assert descriptor["unmet"]
    assert not list(_compliance().iter_errors(descriptor))
    assert error is not None
    assert (error["code"], error["message"]) == (-32602, "Unsupported harness")
    data = error["data"]
    assert isinstance(data, dict)
    assert set(data) == {"unmet", "supported", "requested"}
    assert rows(signed, "SELECT count(*) FROM sqlar WHERE name = ?", (COMPLIANCE_FILE,)) == [(0,)]


@pytest.mark.req("engram.cartridge.harness-floors")
def test_optional_inventory_tools_never_block_activation(tmp_path: Path, key: PrivateKey) -> None:
    """§8.4: an optional tool the host lacks stays unbound and the cartridge runs degraded."""
    contents, _ = package_contents(
        write_package(tmp_path / "pkg"), ExportOptions("io.github.acme", NOW)
    )
    doc: Any = copy.deepcopy(default_requirements())
    doc["optionalTools"][0]["capabilityScopes"] = ["x-acme.inventory"]
    contents.files[HARNESS] = (canonicalize(doc), 0o100644, 0)
    path = tmp_path / "inventory.acx"
    write(path, contents, key=key, signed_at=NOW)
    done = activate(path, FULL_HOST, registry=_registry(key), now=NOW)
    assert done.descriptor["verdict"] == "accept"
    descriptor: dict[str, Any] = done.descriptor
    optional = [b for b in descriptor["bindings"] if b["role"] == "acx:list_agents"]
    assert optional == [
        {"role": "acx:list_agents", "boundTool": None, "scopesGranted": [], "satisfied": False}
    ]


@pytest.mark.req("engram.cartridge.activation-handshake")
def test_tools_are_bound_by_scopes_and_structural_acceptance(signed: Path) -> None:
    """A host tool with another name binds when its scopes and inputSchema accept the role."""
    tools = (
        HostTool(
            "sh",
            frozenset({"exec", "fs.read"}),
            {
                "type": "object",
                "properties": {"command": {"type": "string"}, "cwd": {"type": "string"}},
            },
        ),
        HostTool("spawn", frozenset({"dispatch"})),
        HostTool(
            "remember",
            frozenset({"memory.write"}),
            {
                "type": "object",
                "required": ["summary"],
                "properties": {"summary": {"type": ["string", "null"]}},
            },
        ),
        HostTool("recall", frozenset({"search", "memory.read", "x-acme.fast"})),
    )
    with Cartridge.open(signed) as cartridge:
        descriptor: dict[str, Any] = check_host(load_rom(cartridge), _host(tools=tools))
    assert descriptor["verdict"] == "accept", descriptor["unmet"]
    bound = {b["role"]: b["boundTool"] for b in descriptor["bindings"]}
    assert bound == {
        "acx:execute": "sh",
        "acx:dispatch": "spawn",
        "acx:memory.write": "remember",
        "acx:search": "recall",
        "acx:list_agents": "recall",  # any tool with the role's scopes and an accepting schema
    }


@pytest.mark.req("engram.cartridge.activation-handshake")
@pytest.mark.parametrize(
    ("host_schema", "accepting"),
    [
        (None, True),
        ({"type": "object", "properties": {"command": {"type": "string"}}}, True),
        ({"type": "object", "properties": {"command": {"type": "number"}}}, False),
        ({"type": "object", "properties": {}}, False),
        (
            {
                "type": "object",
                "required": ["command", "env"],
                "properties": {"command": {}, "env": {}},
            },
            False,
        ),
    ],
)
def test_structural_acceptance(host_schema: dict[str, Any] | None, accepting: bool) -> None:
    contract = {
        "type": "object",
        "required": ["command"],
        "properties": {"command": {"type": "string"}},
    }
    assert accepts(host_schema, contract) is accepting


@pytest.mark.req("engram.cartridge.activation-handshake")
def test_the_preflight_self_check_reads_the_persisted_descriptor() -> None:
    doc = default_requirements()
    descriptor: dict[str, Any] = negotiate(doc, canonicalize(doc), FULL_HOST)
    assert preflight(descriptor, doc) == []
    bindings = copy.deepcopy(descriptor["bindings"])
    bindings[1]["satisfied"] = False
    assert preflight({**descriptor, "bindings": bindings}, doc) == ["acx:dispatch"]


@pytest.mark.req("engram.cartridge.activation-handshake", "engram.cartridge.trust-order")
def test_untrusted_or_tampered_cartridges_do_not_activate(signed: Path, key: PrivateKey) -> None:
    before = digest(signed)
    with pytest.raises(UntrustedCartridge, match="portable"):
        activate(signed, FULL_HOST)  # trusted and local only, by default
    assert digest(signed) == before
    execute(signed, "UPDATE objects SET oid = 'sha256:ff' WHERE source_ref = ?", (HARNESS,))
    tampered = digest(signed)
    with pytest.raises(UntrustedCartridge, match="tampered"):
        activate(signed, FULL_HOST, registry=_registry(key), accept=set(TrustState), now=NOW)
    assert digest(signed) == tampered


@pytest.mark.req("engram.cartridge.harness-manifest", "engram.cartridge.activation-handshake")
@pytest.mark.parametrize("version", ["acx.harness.v2", None])
def test_an_unrecognised_harness_version_is_refused_at_activation(
    tmp_path: Path, key: PrivateKey, version: str | None
) -> None:
    """§8.1: a host refuses activation when the signed manifest's schemaVersion is unknown."""
    contents, _ = package_contents(
        write_package(tmp_path / "pkg"), ExportOptions("io.github.acme", NOW)
    )
    doc = {**default_requirements(), "schemaVersion": version}
    contents.files[HARNESS] = (canonicalize(doc), 0o100644, 0)
    path = tmp_path / "odd.acx"
    write(path, contents, key=key, signed_at=NOW)
    before = digest(path)
    with pytest.raises(CartridgeFormatError, match="schemaVersion"):
        activate(path, FULL_HOST, registry=_registry(key), now=NOW)
    assert digest(path) == before


@pytest.mark.req("engram.cartridge.harness-manifest")
def test_a_cartridge_without_its_harness_manifest_is_refused_at_activation(
    tmp_path: Path, key: PrivateKey
) -> None:
    contents, _ = package_contents(
        write_package(tmp_path / "pkg"), ExportOptions("io.github.acme", NOW)
    )
    del contents.files[HARNESS]
    path = tmp_path / "bare.acx"
    write(path, contents, key=key, signed_at=NOW)
    with pytest.raises(
        CartridgeFormatError, match=r"has no rom/manifest/harness-requirements\.json"
    ):
        activate(path, FULL_HOST, registry=_registry(key), now=NOW)
