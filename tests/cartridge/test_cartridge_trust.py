"""Trust: the five states in order, public-keys-only registries, publisherId + keyid binding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acx_kit import PUBLISHER, build, check, execute

from engram.cartridge import (
    TRUST_ORDER,
    TrustRegistryError,
    TrustState,
    load_trust_registry,
    write_save,
)
from engram.core.jsonio import dumps_text
from engram.core.keys import PrivateKey


def _registry(key: PrivateKey, publisher: str = PUBLISHER, **proof: str) -> dict[str, Any]:
    public = key.public_key()
    return {
        "schemaVersion": "acx.trust-registry/1",
        "publishers": [
            {
                "publisherId": publisher,
                "namespaceProof": proof or {"method": "github-oidc", "owner": "acme"},
                "keys": [{"keyid": public.key_id, "publicKey": public.b64url, "status": "active"}],
            }
        ],
    }


def _load(document: dict[str, Any]) -> Any:
    return load_trust_registry(dumps_text(document).encode())


@pytest.mark.req("engram.cartridge.trust-order")
def test_states_are_the_five_in_order() -> None:
    assert [s.value for s in TRUST_ORDER] == ["tampered", "legacy", "portable", "trusted", "local"]


@pytest.mark.req("engram.cartridge.trust-order")
def test_each_state_on_real_cartridges(tmp_path: Path, key: PrivateKey, skills: Path) -> None:
    registry = _load(_registry(key))
    unsigned = build(tmp_path / "unsigned.acx", key=None, skills=skills)
    assert check(unsigned).state is TrustState.LEGACY
    stranger = PrivateKey.generate()
    foreign = build(tmp_path / "foreign.acx", key=stranger, skills=skills)
    assert check(foreign, registry=registry).state is TrustState.PORTABLE
    published = build(tmp_path / "published.acx", key=key, skills=skills)
    assert check(published, registry=registry).state is TrustState.TRUSTED
    own = PrivateKey.generate()
    mine = build(tmp_path / "mine.acx", key=own, skills=skills)
    assert check(mine, own_keyids=frozenset({own.public_key().key_id})).state is TrustState.LOCAL


@pytest.mark.req("engram.cartridge.trust-order")
def test_tampered_wins_over_every_other_state(signed: Path, key: PrivateKey) -> None:
    registry = _load(_registry(key))
    assert check(signed, registry=registry).state is TrustState.TRUSTED
    execute(signed, "UPDATE sqlar SET mode = 33261 WHERE name = 'rom/cartridge.json'")
    report = check(signed, registry=registry, own_keyids=frozenset({key.public_key().key_id}))
    assert report.state is TrustState.TAMPERED


@pytest.mark.req("engram.cartridge.trust-order")
def test_unsigned_but_altered_is_tampered_not_legacy(tmp_path: Path) -> None:
    unsigned = build(tmp_path / "u.acx", key=None)
    execute(unsigned, "UPDATE acx_object SET size = 1 WHERE path = 'rom/cartridge.json'")
    assert check(unsigned).state is TrustState.TAMPERED


@pytest.mark.req("engram.cartridge.publisher-binding")
def test_registry_key_for_another_publisher_does_not_make_it_trusted(
    tmp_path: Path, key: PrivateKey
) -> None:
    registry = _load(_registry(key, "io.github.other", method="github-oidc", owner="other"))
    cartridge = build(tmp_path / "c.acx", key=key)
    report = check(cartridge, registry=registry)
    assert report.state is TrustState.PORTABLE
    assert "not bound to io.github.acme" in report.reason


@pytest.mark.req("engram.cartridge.publisher-binding")
def test_instance_id_never_grants_trust(signed: Path, key: PrivateKey) -> None:
    """An instanceId in SAVE that equals a registry publisher changes nothing."""
    stranger = PrivateKey.generate()
    registry = _load(_registry(stranger))
    write_save(signed, {"save/instance.json": b'{"instanceId": "io.github.acme"}'}, mtime=0)
    assert check(signed, registry=registry).state is TrustState.PORTABLE
    document = _registry(key)
    document["publishers"][0]["instanceId"] = "host-1"
    with pytest.raises(TrustRegistryError, match="exactly"):
        _load(document)


@pytest.mark.req("engram.cartridge.publisher-binding")
@pytest.mark.parametrize(
    ("publisher", "proof"),
    [
        ("io.github.acme", {"method": "github-oidc", "owner": "evil"}),
        ("com.example.tools", {"method": "dns-txt", "domain": "example.org"}),
        ("com.example", {"method": "dns-txt", "domain": "tools.example.com"}),
        ("com.example", {"method": "carrier-pigeon"}),
    ],
)
def test_a_namespace_proof_that_does_not_cover_the_publisher_is_refused(
    key: PrivateKey, publisher: str, proof: dict[str, str]
) -> None:
    with pytest.raises(TrustRegistryError):
        _load(_registry(key, publisher, **proof))


@pytest.mark.req("engram.cartridge.publisher-binding")
def test_dns_proof_covers_names_under_its_domain(tmp_path: Path, key: PrivateKey) -> None:
    registry = _load(_registry(key, "com.example.tools", method="dns-txt", domain="example.com"))
    cartridge = build(tmp_path / "c.acx", key=key, publisher="com.example.tools")
    assert check(cartridge, registry=registry).state is TrustState.TRUSTED


@pytest.mark.req("engram.cartridge.publisher-binding")
def test_a_revoked_key_is_not_trusted(signed: Path, key: PrivateKey) -> None:
    document = _registry(key)
    document["publishers"][0]["keys"][0]["status"] = "revoked"
    assert check(signed, registry=_load(document)).state is TrustState.PORTABLE


@pytest.mark.req("engram.cartridge.no-private-keys")
@pytest.mark.parametrize("field", ["privateKey", "private_key", "d", "seed", "secret"])
def test_registry_with_private_key_fields_is_refused(key: PrivateKey, field: str) -> None:
    document = _registry(key)
    document["publishers"][0]["keys"][0][field] = "AAAA"
    with pytest.raises(TrustRegistryError, match="private key material"):
        _load(document)


@pytest.mark.req("engram.cartridge.no-private-keys")
def test_registry_with_a_pem_private_key_anywhere_is_refused(key: PrivateKey) -> None:
    document = _registry(key)
    document["publishers"][0]["keys"][0]["publicKey"] = key.to_pem().decode()
    with pytest.raises(TrustRegistryError, match="private key material"):
        _load(document)


@pytest.mark.req("engram.cartridge.no-private-keys")
def test_registry_keyid_must_be_the_hash_of_its_key(key: PrivateKey) -> None:
    document = _registry(key)
    document["publishers"][0]["keys"][0]["keyid"] = PrivateKey.generate().public_key().key_id
    with pytest.raises(TrustRegistryError, match="not the hash of its key"):
        _load(document)


@pytest.mark.req("engram.cartridge.no-private-keys")
def test_no_private_key_material_inside_a_cartridge(signed: Path, key: PrivateKey) -> None:
    data = signed.read_bytes()
    raw_private = key.to_pem()
    assert b"PRIVATE KEY" not in data
    assert raw_private not in data
    assert key.public_key().raw not in data or key.public_key().b64url.encode() in data
