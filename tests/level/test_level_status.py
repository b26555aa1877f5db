"""W3C Bitstring Status List v1.0: layout, irreversibility, and every processing error."""

from __future__ import annotations

import base64
import gzip
import io
from pathlib import Path
from typing import Any

import pytest
from level_kit import LIST_URL, NOW, issue

from engram.core.canonical import canonicalize
from engram.core.keys import PrivateKey
from engram.errors import InvalidRequest
from engram.level import (
    StatusCheckError,
    StatusList,
    check_status,
    set_entry,
    static_resolver,
    status_list_credential,
)
from engram.level.internals import MIN_ENTRIES, add_proof, public_multikey


def _independent_bits(encoded: str) -> bytes:
    """Decode an encodedList the way the spec describes it, without engram."""
    assert encoded[0] == "u"
    return gzip.decompress(base64.urlsafe_b64decode(encoded[1:] + "=" * (-len(encoded[1:]) % 4)))


@pytest.mark.req("engram.level.status-list")
def test_index_0_is_the_most_significant_bit_of_byte_0_and_the_list_is_16_kib() -> None:
    bits = StatusList()
    for index in (0, 9, MIN_ENTRIES - 1):
        bits.set(index)
    raw = _independent_bits(bits.encode())
    assert len(raw) == MIN_ENTRIES // 8 == 16384
    assert raw[0] == 0b1000_0000
    assert raw[1] == 0b0100_0000
    assert raw[-1] == 0b0000_0001
    assert sum(bin(b).count("1") for b in raw) == 3
    assert bits.encode() == StatusList.decode(bits.encode()).encode()  # mtime 0: one encoding


@pytest.mark.req("engram.level.status-list")
def test_a_list_shorter_than_131072_entries_cannot_be_made() -> None:
    with pytest.raises(InvalidRequest):
        StatusList(MIN_ENTRIES - 8)


@pytest.mark.req("engram.level.revocation-irreversible")
def test_revocation_cannot_be_undone(tmp_path: Path) -> None:
    bits = StatusList()
    bits.set(42)
    with pytest.raises(InvalidRequest, match="cannot be undone"):
        bits.set(42, False)
    issued = issue(tmp_path)
    once: dict[str, Any] = set_entry(
        issued.status_list,
        42,
        issued.verifier.key,
        verification_method=issued.verifier.verification_method,
        created="2026-07-17T00:00:00Z",
    )
    assert StatusList.decode(once["credentialSubject"]["encodedList"]).get(42)


def _entry(index: int = 7) -> dict[str, Any]:
    return {
        "id": f"{LIST_URL}#{index}",
        "type": "BitstringStatusListEntry",
        "statusPurpose": "revocation",
        "statusListIndex": str(index),
        "statusListCredential": LIST_URL,
    }


def _signed(key: PrivateKey, **overrides: Any) -> dict[str, Any]:
    unsigned = status_list_credential(
        list_id=LIST_URL, issuer="did:web:v.example", valid_from="2026-07-01T00:00:00Z"
    )
    unsigned.update(overrides)
    return add_proof(
        unsigned, key, verification_method="did:web:v.example#key-1", created="2026-07-01T00:00:00Z"
    )


def _check(document: Any, key: PrivateKey, entry: dict[str, Any] | None = None) -> Any:
    resolve = static_resolver({"did:web:v.example#key-1": key.public_key()})
    raw = document if isinstance(document, bytes) else canonicalize(document)
    return check_status(entry or _entry(), lambda _url: raw, resolve, now=NOW)


@pytest.mark.req("engram.level.status-fail-closed")
def test_a_good_list_concludes_and_a_set_bit_reads_revoked() -> None:
    key = PrivateKey.generate()
    assert _check(_signed(key), key).status is False
    revoked = set_entry(
        _signed(key),
        7,
        key,
        verification_method="did:web:v.example#key-1",
        created="2026-07-02T00:00:00Z",
    )
    assert _check(revoked, key).status is True


def _short_list() -> str:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as out:
        out.write(bytes(1024))
    return "u" + base64.urlsafe_b64encode(buffer.getvalue()).rstrip(b"=").decode()


def _bomb() -> str:
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as out:
        out.write(bytes(64 << 20))
    return "u" + base64.urlsafe_b64encode(buffer.getvalue()).rstrip(b"=").decode()


@pytest.mark.req("engram.level.status-fail-closed")
@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("fetch fails", "STATUS_RETRIEVAL_ERROR"),
        ("not json", "STATUS_RETRIEVAL_ERROR"),
        ("bad proof", "STATUS_VERIFICATION_ERROR"),
        ("other key", "STATUS_VERIFICATION_ERROR"),
        ("foreign did:key", "STATUS_VERIFICATION_ERROR"),
        ("wrong type", "STATUS_VERIFICATION_ERROR"),
        ("purpose mismatch", "STATUS_VERIFICATION_ERROR"),
        ("expired", "STATUS_VERIFICATION_ERROR"),
        ("gzip bomb", "STATUS_VERIFICATION_ERROR"),
        ("short list", "STATUS_LIST_LENGTH_ERROR"),
        ("index outside", "RANGE_ERROR"),
        ("index not decimal", "RANGE_ERROR"),
    ],
)
def test_each_defined_error_fails_closed(case: str, code: str) -> None:
    key = PrivateKey.generate()
    entry = _entry()
    document: Any = _signed(key)
    if case == "fetch fails":
        resolve = static_resolver({})

        def broken(_url: str) -> bytes:
            raise OSError("connection refused")

        with pytest.raises(StatusCheckError) as caught:
            check_status(entry, broken, resolve, now=NOW)
        assert caught.value.status_code == code
        return
    if case == "not json":
        document = b"<html>"
    elif case == "bad proof":
        other = StatusList()
        other.set(3)
        document["credentialSubject"]["encodedList"] = other.encode()  # after signing
    elif case == "other key":
        document = _signed(PrivateKey.generate())
    elif case == "foreign did:key":
        stranger = PrivateKey.generate()
        unsigned: dict[str, Any] = status_list_credential(
            list_id=LIST_URL, issuer="did:web:v.example", valid_from="2026-07-01T00:00:00Z"
        )
        method = "did:key:" + public_multikey(stranger.public_key())
        document = add_proof(
            unsigned, stranger, verification_method=method, created="2026-07-01T00:00:00Z"
        )
    elif case == "wrong type":
        document = _signed(key, type=["VerifiableCredential"])
    elif case == "purpose mismatch":
        entry["statusPurpose"] = "suspension"
    elif case == "expired":
        document = _signed(key, validUntil="2026-07-02T00:00:00Z")
    elif case in ("gzip bomb", "short list"):
        unsigned = status_list_credential(
            list_id=LIST_URL, issuer="did:web:v.example", valid_from="2026-07-01T00:00:00Z"
        )
        subject = unsigned["credentialSubject"]
        assert isinstance(subject, dict)
        subject["encodedList"] = _bomb() if case == "gzip bomb" else _short_list()
        document = add_proof(
            unsigned,
            key,
            verification_method="did:web:v.example#key-1",
            created="2026-07-01T00:00:00Z",
        )
    elif case == "index outside":
        entry = _entry(MIN_ENTRIES)
    elif case == "index not decimal":
        entry["statusListIndex"] = "0x10"
    with pytest.raises(StatusCheckError) as caught:
        _check(document, key, entry)
    assert caught.value.status_code == code
    assert str(caught.value.problem_details()["type"]).endswith("#" + code)
