"""Harness requirements: one signed manifest, and an activation handshake that spares SAVE."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acx_kit import CLOCK, PUBLISHER, build, digest, execute, rows

from engram.cartridge import (
    ACTIVATION_FILE,
    ROLES,
    ActivationRefused,
    Cartridge,
    HostCapabilities,
    TrustState,
    UntrustedCartridge,
    activate,
    default_requirements,
    load_rom,
)
from engram.cartridge._harness import check_requirements
from engram.core.keys import PrivateKey
from engram.errors import CartridgeFormatError

FULL_HOST = HostCapabilities.of(
    roles=ROLES,
    scopes=["memory.read", "memory.write", "fs.read"],
    protocol_revisions=["2025-03-26", "2025-06-18", "2025-11-25"],
)


def _own(key: PrivateKey) -> frozenset[str]:
    return frozenset({key.public_key().key_id})


@pytest.mark.req("engram.cartridge.harness-manifest")
def test_exactly_one_signed_harness_manifest(signed: Path) -> None:
    with Cartridge.open(signed) as cartridge:
        rom = load_rom(cartridge)
    assert rom.harness == default_requirements()
    assert set(ROLES) == {"acx:execute", "acx:dispatch", "acx:memory.write", "acx:search"}
    paths = [o["path"] for o in rom.manifest["objects"] if "harness" in o["path"]]
    assert paths == ["rom/harness", "rom/harness/requirements.json"]


@pytest.mark.req("engram.cartridge.harness-manifest")
def test_a_second_harness_manifest_is_refused(signed: Path) -> None:
    execute(
        signed, "INSERT INTO sqlar VALUES ('rom/harness/requirements-2.json', 33188, 0, 2, x'7b7d')"
    )
    with (
        Cartridge.open(signed) as cartridge,
        pytest.raises(CartridgeFormatError, match="no package role"),
    ):
        load_rom(cartridge)


@pytest.mark.req("engram.cartridge.harness-manifest")
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"requiredRoles": ["acx:root"]}, "non-empty subset"),
        ({"requiredRoles": []}, "non-empty subset"),
        ({"requiredRoles": ["acx:search", "acx:execute"]}, "sorted"),
        ({"capabilityScopes": ["fs.everything"]}, "x-prefixed"),
        ({"mcp": {"minProtocolRevision": "latest"}}, "YYYY-MM-DD"),
        ({"mcp": {}}, "exactly"),
        ({"env": {"OPENAI_API_KEY": "x"}}, "keys must be exactly"),
    ],
)
def test_harness_schema_is_closed(change: dict[str, Any], message: str) -> None:
    with pytest.raises(CartridgeFormatError, match=message):
        check_requirements({**default_requirements(), **change})


@pytest.mark.req("engram.cartridge.harness-manifest")
def test_extension_scopes_are_x_prefixed() -> None:
    document = {**default_requirements(), "capabilityScopes": ["memory.read", "x-acme.deploy"]}
    assert check_requirements(document) == document


@pytest.mark.req("engram.cartridge.activation-handshake")
def test_activation_succeeds_and_records_in_save(signed: Path, key: PrivateKey) -> None:
    rom_hash = None
    with Cartridge.open(signed) as cartridge:
        rom_hash = load_rom(cartridge).manifest_hash
    result = activate(signed, FULL_HOST, instance_id="host-7", clock=CLOCK, own_keyids=_own(key))
    assert result.agreement.protocol_revision == "2025-11-25"
    assert result.report.state is TrustState.LOCAL
    with Cartridge.open(signed) as cartridge:
        record = json.loads(cartridge.read(ACTIVATION_FILE))
        assert load_rom(cartridge).manifest_hash == rom_hash
    assert record["instanceId"] == "host-7"
    assert record["mcpProtocolRevision"] == "2025-11-25"


@pytest.mark.req("engram.cartridge.activation-handshake")
@pytest.mark.parametrize(
    ("host", "message"),
    [
        (
            HostCapabilities.of(ROLES[:3], ["memory.read", "memory.write"], ["2025-06-18"]),
            "acx:search",
        ),
        (HostCapabilities.of(ROLES, ["memory.read"], ["2025-06-18"]), "memory.write"),
        (
            HostCapabilities.of(ROLES, ["memory.read", "memory.write"], ["2024-11-05"]),
            "2025-06-18 or newer",
        ),
        (HostCapabilities.of([], [], []), "lacks role"),
    ],
)
def test_activation_is_refused_without_touching_save(
    signed: Path, key: PrivateKey, host: HostCapabilities, message: str
) -> None:
    before = digest(signed)
    with pytest.raises(ActivationRefused, match=message):
        activate(signed, host, instance_id="host-7", clock=CLOCK, own_keyids=_own(key))
    assert digest(signed) == before
    assert rows(signed, "SELECT count(*) FROM sqlar WHERE name = 'save/activation.json'") == [(0,)]


@pytest.mark.req("engram.cartridge.activation-handshake")
def test_activation_refuses_required_tools_the_host_lacks(tmp_path: Path, key: PrivateKey) -> None:
    harness = {**default_requirements(), "requiredTools": ["engram_recall"]}
    path = build(tmp_path / "tools.acx", key=key, harness=harness)
    before = digest(path)
    with pytest.raises(ActivationRefused, match="engram_recall"):
        activate(path, FULL_HOST, instance_id="h", clock=CLOCK, own_keyids=_own(key))
    assert digest(path) == before
    with_tools = HostCapabilities.of(
        ROLES, FULL_HOST.scopes, ["2025-06-18"], tools=["engram_recall"]
    )
    assert activate(path, with_tools, instance_id="h", clock=CLOCK, own_keyids=_own(key))


@pytest.mark.req("engram.cartridge.activation-handshake", "engram.cartridge.trust-order")
def test_untrusted_or_tampered_cartridges_do_not_activate(signed: Path, key: PrivateKey) -> None:
    before = digest(signed)
    with pytest.raises(UntrustedCartridge, match="portable"):
        activate(signed, FULL_HOST, instance_id="h", clock=CLOCK)
    assert digest(signed) == before
    execute(signed, "UPDATE acx_object SET oid = 'ff' WHERE path = 'rom/cartridge.json'")
    tampered = digest(signed)
    with pytest.raises(UntrustedCartridge, match="tampered"):
        activate(
            signed,
            FULL_HOST,
            instance_id="h",
            clock=CLOCK,
            own_keyids=_own(key),
            accept=set(TrustState),
        )
    assert digest(signed) == tampered
    assert PUBLISHER
