"""The ACX trust registry (SPEC §4.4) and the registry half of the §4.5 taxonomy.

Registries here are written by hand as JSON text, with key ids computed by ``hashlib`` over the
DER SubjectPublicKeyInfo from ``cryptography``, so loading is checked against bytes engram did not
produce; what engram writes is checked against the published schema with ``jsonschema``.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from engram.core.keys import PublicKey
from engram.trust import (
    TrustRegistry,
    TrustRegistryError,
    TrustState,
    evaluate_signer,
    load_trust_registry,
)
from engram.trust.internals import TRUST_ORDER

SCHEMA = (
    Path(__file__).parent.parent / "vectors/acx-spec/schemas/identity-signing-trust.schema.json"
)
NOW = datetime(2026, 9, 1, tzinfo=UTC)
SIGNED = datetime(2026, 8, 1, tzinfo=UTC)


def _keypair() -> tuple[Ed25519PrivateKey, str, str]:
    private = Ed25519PrivateKey.generate()
    public = private.public_key()
    der = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    pem = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()
    return private, "ed25519:" + hashlib.sha256(der).hexdigest(), pem


def _entry(keyid: str, pem: str, **overrides: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "keyid": keyid,
        "publisherId": "io.github.alice",
        "algorithm": "ed25519",
        "publicKeyPem": pem,
        "status": "active",
        "notBefore": "2026-01-01T00:00:00Z",
        "notAfter": "2027-01-01T00:00:00.000Z",
        "namespaceProof": {
            "method": "github-oidc",
            "oidcSubject": "repo:Alice/agents:ref:refs/heads/main",
            "oidcIssuer": "https://token.actions.githubusercontent.com",
            "verifiedAt": "2026-01-01T00:00:00Z",
        },
    }
    entry.update(overrides)
    return entry


def _document(document: dict[str, Any]) -> bytes:
    # Written with the stdlib, not engram's writer, so loading is checked on independent bytes.
    return json.dumps(document).encode()  # noqa: TID251


def _registry(*entries: dict[str, Any]) -> bytes:
    return _document({"schemaVersion": "acx.trust-registry/1", "keys": list(entries)})


def _public(pem: str) -> PublicKey:
    return PublicKey.from_pem(pem.encode())


def _judge(registry: TrustRegistry, pem: str, keyid: str, **kw: Any) -> TrustState:
    args: dict[str, Any] = {
        "publisher_id": "io.github.alice",
        "keyid": keyid,
        "verified_with": _public(pem),
        "signed_at": SIGNED,
        "now": NOW,
    }
    args.update(kw)
    return evaluate_signer(registry, **args).state


@pytest.mark.req("engram.trust.registry-format")
def test_a_hand_written_registry_loads_and_what_engram_writes_passes_the_published_schema() -> None:
    _, keyid, pem = _keypair()
    _, other_id, other_pem = _keypair()
    dns = _entry(
        other_id,
        other_pem,
        publisherId="com.example.teamx",
        status="revoked",
        revokedAt="2026-06-01T00:00:00Z",
        revocationReason="superseded",
        rotatedTo=keyid,
        namespaceProof={
            "method": "dns-txt",
            "txtRecord": "_acx-challenge.example.com",
            "verifiedAt": "2026-01-01T00:00:00Z",
        },
    )
    registry = load_trust_registry(_registry(_entry(keyid, pem), dns))
    assert [k.keyid for k in registry.keys] == [keyid, other_id]
    written = json.loads(registry.to_bytes())
    validator = jsonschema.Draft202012Validator(
        json.loads(SCHEMA.read_text()), format_checker=jsonschema.FormatChecker()
    )
    assert list(validator.iter_errors(written)) == []
    assert load_trust_registry(registry.to_bytes()) == registry


@pytest.mark.req("engram.trust.registry-format")
@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda e: e.pop("namespaceProof"), "lacks namespaceProof"),
        (lambda e: e.update(comment="x"), "unknown member 'comment'"),
        (lambda e: e.update(algorithm="rsa"), "algorithm"),
        (lambda e: e.update(keyid="ed25519:" + "0" * 64), "not the hash"),
        (lambda e: e.update(keyid="alice-key"), "keyid must be"),
        (lambda e: e.update(status="paused"), "status"),
        (lambda e: e.update(publisherId="Alice"), "reverse-DNS"),
        (lambda e: e.update(notAfter="next year"), "notAfter"),
        (lambda e: e.update(revocationReason="lost"), "revocationReason"),
        (lambda e: e["namespaceProof"].update(oidcIssuer="https://evil"), "oidcIssuer"),
        (lambda e: e["namespaceProof"].update(method="email"), "dns-txt or github-oidc"),
    ],
)
def test_a_malformed_entry_is_refused_naming_what_is_wrong(mutate: Any, message: str) -> None:
    _, keyid, pem = _keypair()
    entry = _entry(keyid, pem)
    mutate(entry)
    with pytest.raises(TrustRegistryError, match=message):
        load_trust_registry(_registry(entry))


@pytest.mark.req("engram.trust.registry-format")
def test_a_keyid_listed_twice_and_another_schema_version_are_refused() -> None:
    _, keyid, pem = _keypair()
    with pytest.raises(TrustRegistryError, match="listed twice"):
        load_trust_registry(_registry(_entry(keyid, pem), _entry(keyid, pem)))
    with pytest.raises(TrustRegistryError, match="schemaVersion"):
        load_trust_registry(_document({"schemaVersion": "acx.trust-registry/2", "keys": []}))
    with pytest.raises(TrustRegistryError, match="not valid JSON"):
        load_trust_registry(b'{"schemaVersion": "acx.trust-registry/1", "keys": [], "keys": []}')


@pytest.mark.req("engram.trust.public-keys-only")
@pytest.mark.parametrize("where", ["file", "member", "value"])
def test_private_key_material_anywhere_is_refused(where: str) -> None:
    private, keyid, pem = _keypair()
    private_pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    if where == "file":
        data = private_pem.encode()
    elif where == "member":
        data = _registry(_entry(keyid, pem, privateKeyPem="x"))
    else:
        data = _registry(_entry(keyid, pem, publicKeyPem=private_pem))
    with pytest.raises(TrustRegistryError, match="private key material") as caught:
        load_trust_registry(data)
    assert "BEGIN" not in caught.value.message


@pytest.mark.req("engram.trust.taxonomy-order")
def test_the_taxonomy_is_evaluated_in_the_spec_order() -> None:
    assert [s.value for s in TRUST_ORDER] == ["tampered", "legacy", "portable", "trusted", "local"]


@pytest.mark.req("engram.trust.trusted-conditions")
def test_an_active_listed_key_with_a_covering_proof_is_trusted_and_local_when_it_is_ours() -> None:
    _, keyid, pem = _keypair()
    registry = load_trust_registry(_registry(_entry(keyid, pem)))
    assert _judge(registry, pem, keyid) is TrustState.TRUSTED
    assert _judge(registry, pem, keyid, publisher_id="io.github.alice/tools") is TrustState.TRUSTED
    assert _judge(registry, pem, keyid, local_keyids={keyid}) is TrustState.LOCAL


@pytest.mark.req("engram.trust.trusted-conditions")
def test_an_unlisted_key_is_portable_even_with_a_keyid_hint_naming_a_trusted_key() -> None:
    _, keyid, pem = _keypair()
    _, stranger_id, stranger_pem = _keypair()
    registry = load_trust_registry(_registry(_entry(keyid, pem)))
    assert _judge(registry, stranger_pem, stranger_id) is TrustState.PORTABLE
    # The envelope claims the trusted keyid, but the signature verified under another key.
    assert _judge(registry, stranger_pem, keyid) is TrustState.PORTABLE
    assert _judge(TrustRegistry.empty(), pem, keyid) is TrustState.PORTABLE


@pytest.mark.req("engram.trust.namespace-proof")
def test_a_key_is_trusted_only_for_the_namespace_its_proof_covers() -> None:
    _, keyid, pem = _keypair()
    registry = load_trust_registry(_registry(_entry(keyid, pem)))
    assert _judge(registry, pem, keyid, publisher_id="io.github.mallory") is TrustState.PORTABLE
    wrong_owner = _entry(keyid, pem)
    wrong_owner["namespaceProof"]["oidcSubject"] = "repo:mallory/agents:ref:refs/heads/main"
    assert _judge(load_trust_registry(_registry(wrong_owner)), pem, keyid) is TrustState.PORTABLE
    dns_for_github = _entry(
        keyid,
        pem,
        namespaceProof={
            "method": "dns-txt",
            "txtRecord": "_acx-challenge.alice.github.io",
            "verifiedAt": "2026-01-01T00:00:00Z",
        },
    )
    assert _judge(load_trust_registry(_registry(dns_for_github)), pem, keyid) is TrustState.PORTABLE
    dns = _entry(
        keyid,
        pem,
        publisherId="com.example",
        namespaceProof={
            "method": "dns-txt",
            "txtRecord": "_acx-challenge.example.com",
            "verifiedAt": "2026-01-01T00:00:00Z",
        },
    )
    dns_registry = load_trust_registry(_registry(dns))
    assert _judge(dns_registry, pem, keyid, publisher_id="com.example.teamx") is TrustState.PORTABLE
    assert _judge(dns_registry, pem, keyid, publisher_id="com.example") is TrustState.TRUSTED
    assert _judge(dns_registry, pem, keyid, publisher_id="com.examplex") is TrustState.PORTABLE


@pytest.mark.req("engram.trust.expiry")
def test_an_expired_or_not_yet_valid_key_never_grants_trust() -> None:
    _, keyid, pem = _keypair()
    registry = load_trust_registry(_registry(_entry(keyid, pem)))
    assert _judge(registry, pem, keyid, now=datetime(2027, 1, 2, tzinfo=UTC)) is TrustState.PORTABLE
    marked = load_trust_registry(_registry(_entry(keyid, pem, status="expired")))
    assert _judge(marked, pem, keyid) is TrustState.PORTABLE
    early = load_trust_registry(_registry(_entry(keyid, pem, notBefore="2026-08-15T00:00:00Z")))
    assert _judge(early, pem, keyid) is TrustState.PORTABLE


@pytest.mark.req("engram.trust.revocation")
def test_compromise_is_never_trusted_and_other_revocations_cut_at_revoked_at() -> None:
    _, keyid, pem = _keypair()
    compromised = _entry(
        keyid,
        pem,
        status="revoked",
        revokedAt="2026-12-01T00:00:00Z",
        revocationReason="key-compromise",
    )
    assert _judge(load_trust_registry(_registry(compromised)), pem, keyid) is TrustState.PORTABLE
    retired = _entry(
        keyid, pem, status="revoked", revokedAt="2026-08-15T00:00:00Z", revocationReason="retired"
    )
    retired_registry = load_trust_registry(_registry(retired))
    verdict = evaluate_signer(
        retired_registry,
        publisher_id="io.github.alice",
        keyid=keyid,
        verified_with=_public(pem),
        signed_at=SIGNED,
        now=NOW,
    )
    assert verdict.state is TrustState.TRUSTED
    assert any("revoked" in w for w in verdict.warnings)
    late = SIGNED + timedelta(days=20)
    assert _judge(retired_registry, pem, keyid, signed_at=late) is TrustState.PORTABLE
    no_instant = _entry(keyid, pem, status="revoked")
    assert _judge(load_trust_registry(_registry(no_instant)), pem, keyid) is TrustState.PORTABLE


@pytest.mark.req("engram.trust.rotation")
def test_a_rotated_predecessor_still_vouches_for_what_it_signed_within_its_validity() -> None:
    _, old_id, old_pem = _keypair()
    _, new_id, new_pem = _keypair()
    registry = load_trust_registry(
        _registry(
            _entry(old_id, old_pem, rotatedTo=new_id, notAfter="2026-10-01T00:00:00Z"),
            _entry(new_id, new_pem, rotatedFrom=old_id, notBefore="2026-08-20T00:00:00Z"),
        )
    )
    verdict = evaluate_signer(
        registry,
        publisher_id="io.github.alice",
        keyid=old_id,
        verified_with=_public(old_pem),
        signed_at=SIGNED,
        now=NOW,
    )
    assert verdict.state is TrustState.TRUSTED
    assert any("rotated" in w for w in verdict.warnings)
    after_overlap = datetime(2026, 10, 2, tzinfo=UTC)
    assert _judge(registry, old_pem, old_id, now=after_overlap) is TrustState.PORTABLE
    assert _judge(registry, new_pem, new_id, signed_at=SIGNED) is TrustState.PORTABLE
    assert (
        _judge(registry, new_pem, new_id, signed_at=datetime(2026, 8, 21, tzinfo=UTC))
        is TrustState.TRUSTED
    )


@pytest.mark.req("engram.trust.registry-format")
def test_keys_are_added_and_removed_by_keyid() -> None:
    _, keyid, pem = _keypair()
    registry = load_trust_registry(_registry(_entry(keyid, pem)))
    entry = registry.keys[0]
    with pytest.raises(TrustRegistryError, match="already"):
        registry.with_key(entry)
    emptied = registry.without_key(keyid)
    assert emptied.keys == ()
    with pytest.raises(TrustRegistryError, match="not in the trust registry"):
        emptied.without_key(keyid)
    assert emptied.with_key(entry) == registry
