"""DSSE v1 envelopes and in-toto Statements, checked against hand-built PAE bytes,
cryptography directly, and securesystemslib's independent DSSE implementation."""

from __future__ import annotations

import base64
import copy
import hashlib
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from engram.core.canonical import canonicalize
from engram.core.dsse import (
    IN_TOTO_STATEMENT_V1,
    PAYLOAD_TYPE_IN_TOTO,
    in_toto_statement,
    load_in_toto_statement,
    pae,
    sign_envelope,
    statement_subject,
    verify_envelope,
)
from engram.core.keys import PrivateKey, PublicKey
from engram.errors import InvalidRequest, SignatureInvalid, UnknownKeyId, VerificationError


@pytest.mark.req("engram.core.dsse-pae")
def test_pae_matches_the_dsse_spec_example_written_by_hand() -> None:
    # DSSE protocol.md: PAE("http://example.com/HelloWorld", "hello world")
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


@pytest.mark.req("engram.core.dsse-pae")
def test_pae_counts_bytes_not_characters() -> None:
    assert pae("t/é", "ü".encode()) == b"DSSEv1 4 t/\xc3\xa9 2 \xc3\xbc"
    assert pae("", b"") == b"DSSEv1 0  0 "


@pytest.mark.req("engram.core.dsse-pae", "engram.core.dsse-envelope-members")
def test_envelope_signature_is_over_the_hand_built_pae() -> None:
    key = PrivateKey.generate()
    payload = b'{"hello":"world"}'
    envelope = sign_envelope(payload, PAYLOAD_TYPE_IN_TOTO, key)
    assert set(envelope) == {"payloadType", "payload", "signatures"}
    assert envelope["payloadType"] == PAYLOAD_TYPE_IN_TOTO
    assert base64.b64decode(envelope["payload"], validate=True) == payload
    [signature] = envelope["signatures"]
    assert set(signature) == {"keyid", "sig"}
    assert signature["keyid"] == key.public_key().key_id
    hand_built = b"DSSEv1 28 application/vnd.in-toto+json 17 " + payload
    raw_public = Ed25519PublicKey.from_public_bytes(key.public_key().raw)
    raw_public.verify(base64.b64decode(signature["sig"], validate=True), hand_built)


@pytest.mark.req("engram.core.dsse-verify-raises")
def test_verify_returns_the_payload_and_the_keyid() -> None:
    key = PrivateKey.generate()
    envelope = sign_envelope(b"payload", "text/plain", key, keyid="release-2026")
    verified = verify_envelope(
        envelope, {"release-2026": key.public_key()}, expected_payload_type="text/plain"
    )
    assert (verified.payload, verified.payload_type, verified.keyid) == (
        b"payload",
        "text/plain",
        "release-2026",
    )


def _envelope() -> tuple[dict[str, Any], dict[str, PublicKey]]:
    key = PrivateKey.generate()
    envelope = sign_envelope(b'{"a":1}', PAYLOAD_TYPE_IN_TOTO, key)
    return envelope, {key.public_key().key_id: key.public_key()}


@pytest.mark.req("engram.core.dsse-envelope-members")
@pytest.mark.parametrize("change", ["extra", "missing-payload", "missing-signatures"])
def test_envelopes_with_other_members_are_refused(change: str) -> None:
    envelope, trusted = _envelope()
    if change == "extra":
        envelope["payloadEncoding"] = "base64"
    else:
        del envelope[change.removeprefix("missing-")]
    with pytest.raises(SignatureInvalid, match="members"):
        verify_envelope(envelope, trusted)


@pytest.mark.req("engram.core.dsse-envelope-members")
@pytest.mark.parametrize(
    "signatures",
    [[], "sig", [{"sig": "AAAA"}], [{"keyid": "k", "sig": "AAAA", "extra": 1}], [{"keyid": 1}]],
)
def test_malformed_signature_lists_are_refused(signatures: object) -> None:
    envelope, trusted = _envelope()
    envelope["signatures"] = signatures
    with pytest.raises(SignatureInvalid):
        verify_envelope(envelope, trusted)


@pytest.mark.req("engram.core.dsse-verify-raises")
def test_a_wrong_payload_type_is_refused_when_one_is_expected() -> None:
    envelope, trusted = _envelope()
    verify_envelope(envelope, trusted)  # no expectation: any type
    with pytest.raises(SignatureInvalid, match="payloadType"):
        verify_envelope(envelope, trusted, expected_payload_type="application/json")


@pytest.mark.req("engram.core.dsse-verify-raises")
def test_changing_the_payload_type_breaks_the_signature() -> None:
    envelope, trusted = _envelope()
    envelope["payloadType"] = "application/json"
    with pytest.raises(SignatureInvalid, match="does not verify"):
        verify_envelope(envelope, trusted)


@pytest.mark.req("engram.core.dsse-verify-raises")
def test_an_unknown_keyid_is_refused() -> None:
    envelope, _ = _envelope()
    other = PrivateKey.generate().public_key()
    with pytest.raises(UnknownKeyId):
        verify_envelope(envelope, {other.key_id: other})


@pytest.mark.req("engram.core.dsse-verify-raises")
def test_a_trusted_keyid_with_the_wrong_key_or_payload_is_refused() -> None:
    envelope, trusted = _envelope()
    [keyid] = trusted
    with pytest.raises(SignatureInvalid):
        verify_envelope(envelope, {keyid: PrivateKey.generate().public_key()})
    tampered = {**envelope, "payload": base64.b64encode(b'{"a":2}').decode()}
    with pytest.raises(SignatureInvalid):
        verify_envelope(tampered, trusted)


@pytest.mark.req("engram.core.dsse-verify-raises")
@pytest.mark.parametrize("payload", ["eyJhIjoxfQ", "eyJhIjoxfQ==\n", "ey*hIjoxfQ==", 7])
def test_payloads_that_are_not_canonical_standard_base64_are_refused(payload: object) -> None:
    envelope, trusted = _envelope()
    envelope["payload"] = payload
    with pytest.raises(VerificationError):
        verify_envelope(envelope, trusted)


@pytest.mark.req("engram.core.dsse-verify-raises")
def test_one_good_signature_by_a_trusted_key_suffices() -> None:
    first, second = PrivateKey.generate(), PrivateKey.generate()
    envelope = sign_envelope(b"x", "text/plain", first)
    envelope["signatures"].insert(0, sign_envelope(b"y", "text/plain", second)["signatures"][0])
    trusted = {k.public_key().key_id: k.public_key() for k in (first, second)}
    assert verify_envelope(envelope, trusted).keyid == first.public_key().key_id


# --- interoperability with securesystemslib (an independent DSSE implementation) ---------------

sslib_dsse = pytest.importorskip("securesystemslib.dsse")
sslib_signer = pytest.importorskip("securesystemslib.signer")


@pytest.mark.req("engram.core.dsse-pae", "engram.core.dsse-envelope-members")
def test_securesystemslib_verifies_our_envelopes() -> None:
    key = PrivateKey.generate()
    envelope = sign_envelope(b'{"_type":"x"}', PAYLOAD_TYPE_IN_TOTO, key)
    public = Ed25519PublicKey.from_public_bytes(key.public_key().raw)
    sslib_key = sslib_signer.SSlibKey.from_crypto(public, keyid=key.public_key().key_id)
    parsed = sslib_dsse.Envelope.from_dict(copy.deepcopy(envelope))  # from_dict mutates its input
    assert parsed.pae() == pae(PAYLOAD_TYPE_IN_TOTO, b'{"_type":"x"}')
    accepted = parsed.verify([sslib_key], 1)
    assert list(accepted) == [key.public_key().key_id]


@pytest.mark.req("engram.core.dsse-verify-raises", "engram.core.dsse-envelope-members")
def test_we_verify_securesystemslib_envelopes() -> None:
    crypto_private = Ed25519PrivateKey.generate()
    key = PrivateKey(crypto_private)  # the same key, held by both implementations
    keyid = key.public_key().key_id
    sslib_key = sslib_signer.SSlibKey.from_crypto(crypto_private.public_key(), keyid=keyid)
    signer = sslib_signer.CryptoSigner(crypto_private, sslib_key)
    theirs = sslib_dsse.Envelope(b"their payload", "text/plain", {})
    theirs.sign(signer)
    verified = verify_envelope(theirs.to_dict(), {keyid: key.public_key()})
    assert verified.payload == b"their payload"


# --- in-toto Statement v1 ----------------------------------------------------------------------


@pytest.mark.req("engram.core.dsse-in-toto-statement")
def test_in_toto_statement_round_trips_through_an_envelope() -> None:
    manifest = b'{"rom":"manifest"}'
    digest = hashlib.sha256(manifest).hexdigest()
    statement = in_toto_statement(
        [statement_subject("rom/manifest.json", digest)],
        "https://engram.dev/acx/rom-manifest/v1",
        {"files": 3},
    )
    assert statement == {
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "rom/manifest.json", "digest": {"sha256": digest}}],
        "predicateType": "https://engram.dev/acx/rom-manifest/v1",
        "predicate": {"files": 3},
    }
    key = PrivateKey.generate()
    envelope = sign_envelope(canonicalize(statement), PAYLOAD_TYPE_IN_TOTO, key)
    verified = verify_envelope(
        envelope,
        {key.public_key().key_id: key.public_key()},
        expected_payload_type=PAYLOAD_TYPE_IN_TOTO,
    )
    assert load_in_toto_statement(verified.payload) == statement
    assert load_in_toto_statement(verified.payload)["_type"] == IN_TOTO_STATEMENT_V1


@pytest.mark.req("engram.core.dsse-in-toto-statement")
@pytest.mark.parametrize(
    "subjects",
    [
        [],
        [{"name": "a"}],
        [{"name": "a", "digest": {}}],
        [{"name": "a", "digest": {"sha256": "XY"}}],
    ],
)
def test_statements_need_named_subjects_with_hex_digests(subjects: list[dict[str, Any]]) -> None:
    with pytest.raises(InvalidRequest):
        in_toto_statement(subjects, "https://example.com/p", {})


@pytest.mark.req("engram.core.dsse-in-toto-statement")
@pytest.mark.parametrize(
    "payload",
    [
        b"[]",
        b'{"_type":"https://in-toto.io/Statement/v0.1","subject":[]}',
        b'{"_type":1,"_type":2}',
    ],
)
def test_payloads_that_are_not_statements_are_refused(payload: bytes) -> None:
    with pytest.raises(InvalidRequest):
        load_in_toto_statement(payload)
