"""eddsa-jcs-2022 byte for byte against the W3C test vectors (vc-di-eddsa TestVectors/)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from level_kit import W3C

from engram.core.canonical import canonicalize
from engram.core.keys import PrivateKey
from engram.level import ProofInvalid
from engram.level.internals import (
    add_proof,
    base58btc_decode,
    did_key_resolver,
    hash_data,
    private_from_multikey,
    public_multikey,
    verify_proof,
)


def _read(name: str) -> str:
    return (W3C / name).read_text().strip()


@pytest.mark.req("engram.level.eddsa-jcs-2022")
def test_every_step_of_the_w3c_vector_matches_byte_for_byte() -> None:
    pair = json.loads(_read("keyPair.json"))
    key = private_from_multikey(pair["privateKeyMultibase"])
    assert public_multikey(key.public_key()) == pair["publicKeyMultibase"]
    unsigned = json.loads(_read("unsigned.json"))
    config = json.loads(_read("proofConfigJCS.json"))
    assert canonicalize(unsigned).decode() == _read("canonDocJCS.txt")
    assert canonicalize(config).decode() == _read("proofCanonJCS.txt")
    assert hashlib.sha256(canonicalize(unsigned)).hexdigest() == _read("docHashJCS.txt")
    assert hashlib.sha256(canonicalize(config)).hexdigest() == _read("proofHashJCS.txt")
    assert hash_data(unsigned, config).hex() == _read("combinedHashJCS.txt")
    signed: dict[str, Any] = add_proof(
        unsigned, key, verification_method=config["verificationMethod"], created=config["created"]
    )
    assert base58btc_decode(signed["proof"]["proofValue"]).hex() == _read("sigHexJCS.txt")
    assert signed["proof"]["proofValue"] == _read("sigBTC58JCS.txt")
    assert signed == json.loads(_read("signedJCS.json"))


@pytest.mark.req("engram.level.eddsa-jcs-2022")
def test_the_w3c_signed_credential_verifies_and_any_change_breaks_it() -> None:
    signed = json.loads(_read("signedJCS.json"))
    assert verify_proof(signed, did_key_resolver).proof_purpose == "assertionMethod"
    for path, value in [
        (("name",), "Alumni Credentiak"),
        (("credentialSubject", "alumniOf"), "The School of Example"),
        (("proof", "created"), "2023-02-24T23:36:39Z"),
    ]:
        changed = json.loads(_read("signedJCS.json"))
        node = changed
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        with pytest.raises(ProofInvalid):
            verify_proof(changed, did_key_resolver)


@pytest.mark.req("engram.level.eddsa-jcs-2022")
def test_a_proof_without_context_verifies_and_a_mismatched_context_does_not() -> None:
    key = PrivateKey.generate()
    method = "did:key:" + public_multikey(key.public_key())
    document = json.loads(_read("unsigned.json"))
    bare: dict[str, Any] = add_proof(
        document,
        key,
        verification_method=method,
        created="2026-01-01T00:00:00Z",
        with_context=False,
    )
    assert "@context" not in bare["proof"]
    verify_proof(bare, did_key_resolver)
    signed: dict[str, Any] = add_proof(
        document, key, verification_method=method, created="2026-01-01T00:00:00Z"
    )
    signed["@context"] = list(reversed(signed["@context"]))
    with pytest.raises(ProofInvalid, match="@context"):
        verify_proof(signed, did_key_resolver)


@pytest.mark.req("engram.level.eddsa-jcs-2022")
@pytest.mark.parametrize(
    ("member", "value"),
    [
        ("cryptosuite", "eddsa-rdfc-2022"),
        ("type", "Ed25519Signature2020"),
        ("proofValue", "u" + "A" * 86),
        ("proofValue", "z0OIl"),
    ],
)
def test_other_suites_and_encodings_are_refused(member: str, value: str) -> None:
    signed = json.loads(_read("signedJCS.json"))
    signed["proof"][member] = value
    with pytest.raises(ProofInvalid):
        verify_proof(signed, did_key_resolver)
