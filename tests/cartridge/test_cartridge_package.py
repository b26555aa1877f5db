"""The closed eight-role package spec, identity/engine binding, JSON baseline and vectors."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from acx_kit import CLOCK, build, check, execute, rows

from engram.cartridge import (
    BASELINE_ENGINE,
    PACKAGE_ROLES,
    Cartridge,
    TrustState,
    load_rom,
    verify,
)
from engram.cartridge import build as build_cartridge
from engram.cartridge._manifest import check_package_spec, package_spec
from engram.core.keys import PrivateKey
from engram.errors import CartridgeFormatError


@pytest.mark.req("engram.cartridge.package-spec")
def test_the_package_spec_has_exactly_eight_roles(signed: Path) -> None:
    assert [r["role"] for r in PACKAGE_ROLES] == [
        "identity",
        "rom-manifest",
        "skills",
        "skill-index",
        "harness-requirements",
        "memory-baseline",
        "vectors",
        "save",
    ]
    with Cartridge.open(signed) as cartridge:
        rom = load_rom(cartridge)
    assert rom.manifest["packageSpec"] == package_spec()


def _spec_with(change: Any) -> dict[str, Any]:
    spec = package_spec()
    change(spec["roles"])
    return spec


@pytest.mark.req("engram.cartridge.package-spec")
@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda roles: roles.append({"role": "plugins"}), "unknown role"),
        (lambda roles: roles.append(dict(roles[0])), "duplicate role"),
        (lambda roles: roles.pop(), "missing role"),
        (lambda roles: roles[2].update(signed=False), "altered"),
        (lambda roles: roles.reverse(), "altered or out of order"),
    ],
)
def test_package_spec_closure(change: Any, message: str) -> None:
    with pytest.raises(CartridgeFormatError, match=message):
        check_package_spec(_spec_with(change))


@pytest.mark.req("engram.cartridge.package-spec")
def test_identity_metadata_drift_is_tampered(signed: Path) -> None:
    execute(
        signed, "UPDATE acx_meta SET value = 'io.github.mallory' WHERE key = 'acx.publisher_id'"
    )
    report = check(signed)
    assert report.state is TrustState.TAMPERED
    assert "mirror" in report.reason


@pytest.mark.req("engram.cartridge.package-spec")
def test_identity_is_bound_into_the_signed_manifest(signed: Path) -> None:
    with Cartridge.open(signed) as cartridge:
        manifest = load_rom(cartridge).manifest
    assert (manifest["publisherId"], manifest["artifactId"], manifest["artifactVersion"]) == (
        "io.github.acme",
        "git-helper",
        "1.0.0",
    )
    assert dict(rows(signed, "SELECT key, value FROM acx_meta"))["acx.embedding_engine"] == (
        '{"dim":128,"id":"local-hash-128"}'
    )


@pytest.mark.req("engram.cartridge.package-spec")
def test_a_publisher_that_is_not_reverse_dns_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CartridgeFormatError, match="reverse-DNS"):
        build(tmp_path / "c.acx", key=None, publisher="acme")


@pytest.mark.req("engram.cartridge.memory-baseline")
def test_json_baseline_is_present_even_without_memories(tmp_path: Path) -> None:
    empty = build(tmp_path / "empty.acx", key=None, records=[])
    assert rows(empty, "SELECT sz FROM sqlar WHERE name = 'rom/memory/records.jsonl'") == [(0,)]
    execute(empty, "DELETE FROM sqlar WHERE name = 'rom/memory/records.jsonl'")
    with (
        Cartridge.open(empty) as cartridge,
        pytest.raises(CartridgeFormatError, match=r"no rom/memory/records\.jsonl"),
    ):
        load_rom(cartridge)


@pytest.mark.req("engram.cartridge.memory-baseline")
def test_vectors_are_engine_tagged_and_outside_the_signature(
    tmp_path: Path, key: PrivateKey
) -> None:
    assert BASELINE_ENGINE == {"id": "local-hash-128", "dim": 128}
    out = tmp_path / "v.acx"
    build_cartridge(
        out,
        publisher_id="io.github.acme",
        artifact_id="v",
        artifact_version="1.0.0",
        clock=CLOCK,
        records=[{"id": "a", "kind": "invariant", "text": "alpha", "tier": "transferable"}],
        key=key,
        embed=lambda text: [float(len(text))] * 128,
    )
    assert rows(out, "SELECT memory_id, engine, dim, length(vector) FROM acx_vectors") == [
        ("a", "local-hash-128", 128, 512)
    ]
    before = check(out)
    # Vectors are derived and never signed: rewriting them changes no trust state...
    execute(out, "UPDATE acx_vectors SET vector = ?", (struct.pack("<128f", *([9.0] * 128)),))
    assert check(out).manifest_hash == before.manifest_hash
    assert check(out).state is before.state
    # ...but a row tagged with another engine is refused rather than trusted.
    execute(out, "UPDATE acx_vectors SET engine = 'other-engine'")
    with Cartridge.open(out) as cartridge, pytest.raises(CartridgeFormatError, match="not tagged"):
        verify(cartridge)


@pytest.mark.req("engram.cartridge.memory-baseline")
def test_the_engine_tag_is_part_of_the_identity_document(signed: Path) -> None:
    with Cartridge.open(signed) as cartridge:
        document = json.loads(cartridge.read("rom/cartridge.json"))
    assert document["embeddingEngine"] == {"id": "local-hash-128", "dim": 128}
