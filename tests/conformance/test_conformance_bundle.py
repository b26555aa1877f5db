"""Signed certification bundles: cut from a run, verified, and refused when touched
(OpenWOP v2 Conformance §"Bundle v3", §"Signature and attribution", §"Certification",
§"Canonical JSON"; docs/spec/conformance-bundle.md)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pytest
from conformance_faults import BASE_URL, FaultyProvider

from engram.conformance import (
    Ledger,
    Outcome,
    ProviderRunOptions,
    build_bundle,
    load_ledger,
    run_provider,
    verify_bundle,
)
from engram.conformance.internals import HostInfo, attestation_preimage, utf16_key
from engram.core.canonical import canonicalize, parse_strict
from engram.core.clock import FixedClock
from engram.core.encoding import b64url_encode
from engram.core.jsonio import dumps_text
from engram.core.keys import PrivateKey
from engram.store import Store


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


HOST = HostInfo("engram", "0.1.0", "commit", "0123456789abcdef")


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    return load_ledger()


async def _cut(
    store: Store, ledger: Ledger, *, admin: bool = True, key: PrivateKey | None = None
) -> tuple[bytes, dict[str, Any]]:
    clock = FixedClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    provider = FaultyProvider(store, clock)
    options = ProviderRunOptions(
        BASE_URL, provider.token, admin_token=provider.token if admin else None
    )
    report = await run_provider(options, ledger, transport=provider.transport(), clock=clock)
    bundle = build_bundle(report, HOST, key or provider.signing_key())
    assert isinstance(report.discovery, dict)
    return dumps_text(bundle, indent=2).encode("utf-8"), report.discovery


@pytest.fixture
async def signed(memory_store: Store, ledger: Ledger) -> tuple[bytes, dict[str, Any]]:
    return await _cut(memory_store, ledger)


@pytest.mark.req(
    "engram.conformance.bundle.schema",
    "engram.conformance.bundle.witness-sha256",
    "engram.conformance.bundle.discovery-sha256",
    "engram.conformance.bundle.signature-over",
    "engram.conformance.bundle.key-published",
)
async def test_the_runner_certifies_the_provider_at_full_and_verify_accepts_it(
    any_store: Store, ledger: Ledger
) -> None:
    data, discovery = await _cut(any_store, ledger)
    report = verify_bundle(data, ledger, discovery=discovery)
    assert (report.outcome, report.message) == (Outcome.CERTIFIED, "certified at Full (tier 3)")
    bundle = _parsed(data)
    assert bundle["claim"] == {"tier": 3, "badge": "Full", "certified": True}
    assert bundle["signature"]["over"] == [
        "witnessSha256",
        "host.build",
        "suite.version",
        "discovery.sha256",
    ]
    rows = bundle["results"]["requirements"]
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    assert bundle["witnessSha256"] == hashlib.sha256(canonicalize(rows)).hexdigest()
    assert bundle["discovery"]["sha256"] == hashlib.sha256(canonicalize(discovery)).hexdigest()
    assert bundle["assertionCount"] == sum(r.get("assertions", 0) for r in rows) >= 19
    assert bundle["detail"]["nonPass"] == []
    assert attestation_preimage(bundle) == canonicalize(
        {
            "discovery.sha256": bundle["discovery"]["sha256"],
            "host.build": {"id": "0123456789abcdef", "kind": "commit"},
            "suite.version": bundle["suite"]["version"],
            "witnessSha256": bundle["witnessSha256"],
        }
    )


@pytest.mark.req("engram.conformance.bundle.witness-sha256")
def test_rows_sort_by_utf16_code_units_not_code_points() -> None:
    # U+FF61 sorts before U+1F600 by code point, after it by UTF-16 code unit (0xD83D < 0xFF61).
    ids = ["\uff61", "\U0001f600"]
    assert sorted(ids) == ["\uff61", "\U0001f600"]
    assert sorted(ids, key=utf16_key) == ["\U0001f600", "\uff61"]


@pytest.mark.req("engram.conformance.bundle.three-outcomes")
async def test_the_verifier_tells_apart_no_discovery_unpublished_key_and_bad_attestation(
    signed: tuple[bytes, dict[str, Any]], ledger: Ledger, memory_store: Store
) -> None:
    data, discovery = signed
    unread = verify_bundle(data, ledger, discovery=None)
    assert unread.outcome is Outcome.NO_DISCOVERY
    assert unread.message.startswith("no discovery document was read")
    elsewhere = dict(discovery, signingKeys=[])
    assert verify_bundle(data, ledger, discovery=elsewhere).outcome is Outcome.KEY_NOT_PUBLISHED
    # Signed by a key the host does not publish: integrity holds, attribution does not.
    foreign, _ = await _cut(memory_store, ledger, key=PrivateKey.generate())
    assert verify_bundle(foreign, ledger, discovery=discovery).outcome is Outcome.KEY_NOT_PUBLISHED
    # The host publishes the keyId but under another public key: the attestation fails.
    keyid = _parsed(data)["signature"]["keyId"]
    other = PrivateKey.generate().public_key().b64url
    swapped = dict(discovery, signingKeys=[{"keyId": keyid, "publicKey": other}])
    bad = verify_bundle(data, ledger, discovery=swapped)
    assert bad.outcome is Outcome.ATTESTATION_INVALID
    assert "under the published key" in bad.message


def _flip(data: bytes, needle: bytes, offset: int = 0) -> bytes:
    """Change one byte (a hex digit or letter to another of its kind) just inside ``needle``."""
    at = data.index(needle) + len(needle) + offset
    old = data[at : at + 1]
    if old.isdigit():
        new = b"1" if old == b"0" else b"0"
    elif old in b"abcdef":  # a hex digit stays a lowercase hex digit, so only the value changes
        new = b"a" if old != b"a" else b"b"
    else:
        new = b"A" if old != b"A" else b"B"
    return data[:at] + new + data[at + 1 :]


@pytest.mark.req("engram.conformance.bundle.tamper-detected")
@pytest.mark.parametrize(
    ("needle", "offset", "outcome"),
    [
        (b'"witnessSha256": "', 5, Outcome.WITNESS_MISMATCH),
        (b'"scenario": "', 1, Outcome.WITNESS_MISMATCH),
        (b'"assertionCount": ', 1, Outcome.INCONSISTENT),
        (b'"id": "0123456789', 2, Outcome.ATTESTATION_INVALID),
        (b'"specVersion": "0.1",\n    "version": "', 0, Outcome.ATTESTATION_INVALID),
        (b'"value": "', 10, Outcome.ATTESTATION_INVALID),
        (b'"engram_version": "', 0, Outcome.DISCOVERY_MISMATCH),
        (b'"bundleVersion": "', 0, Outcome.MALFORMED),
    ],
)
def test_one_flipped_byte_fails_verification_with_the_outcome_naming_it(
    signed: tuple[bytes, dict[str, Any]],
    ledger: Ledger,
    needle: bytes,
    offset: int,
    outcome: Outcome,
) -> None:
    data, discovery = signed
    tampered = _flip(data, needle, offset)
    assert tampered != data
    assert len(tampered) == len(data)
    assert verify_bundle(tampered, ledger, discovery=discovery).outcome is outcome


@pytest.mark.req("engram.conformance.bundle.tamper-detected")
def test_a_structural_byte_flip_is_malformed(
    signed: tuple[bytes, dict[str, Any]], ledger: Ledger
) -> None:
    data, discovery = signed
    broken = data[:-3] + b"]" + data[-2:]
    assert verify_bundle(broken, ledger, discovery=discovery).outcome is Outcome.MALFORMED


@pytest.mark.req("engram.conformance.bundle.non-ijson-fails")
def test_a_bundle_that_is_not_i_json_fails(
    signed: tuple[bytes, dict[str, Any]], ledger: Ledger
) -> None:
    data, discovery = signed
    duplicated = data.replace(b'"bundleVersion"', b'"assertionCount": 1,\n  "bundleVersion"', 1)
    report = verify_bundle(duplicated, ledger, discovery=discovery)
    assert report.outcome is Outcome.MALFORMED
    assert "duplicate" in report.message


@pytest.mark.req(
    "engram.conformance.bundle.skipped-not-pass", "engram.conformance.bundle.blocked-not-certified"
)
async def test_skipped_rows_never_certify_the_claimed_tier(
    memory_store: Store, ledger: Ledger
) -> None:
    data, discovery = await _cut(memory_store, ledger, admin=False)
    report = verify_bundle(data, ledger, discovery=discovery)
    assert report.outcome is Outcome.NOT_CERTIFIED
    assert "engram.context.p2.diff-tombstones" in report.message
    assert report.derived_badge == "Reader"
    bundle = _parsed(data)
    assert bundle["claim"]["certified"] is False
    assert bundle["detail"]["nonPass"][0]["result"] == "skipped"


@pytest.mark.req("engram.conformance.bundle.blocked-not-certified")
def test_a_blocked_row_never_certifies_even_when_resigned(
    signed: tuple[bytes, dict[str, Any]], ledger: Ledger, memory_store: Store
) -> None:
    data, discovery = signed
    bundle = _parsed(data)
    rows = bundle["results"]["requirements"]
    rows[0] = {"id": rows[0]["id"], "scenario": rows[0]["scenario"], "result": "blocked"}
    bundle["results"]["totals"]["executedPass"] -= 1
    bundle["results"]["totals"]["blocked"] = 1
    bundle["assertionCount"] = sum(r.get("assertions", 0) for r in rows)
    bundle["detail"]["nonPass"] = [{"id": rows[0]["id"], "result": "blocked", "detail": ""}]
    bundle["claim"]["certified"] = False
    bundle["witnessSha256"] = hashlib.sha256(canonicalize(rows)).hexdigest()
    # Re-sign honestly with a key the discovery publishes: the rules still refuse.
    key = PrivateKey.generate()
    public = key.public_key()
    bundle["signature"].update(keyId=public.key_id, publicKey=public.b64url)
    bundle["signature"]["value"] = b64url_encode(key.sign(attestation_preimage(bundle)))
    published = dict(discovery, signingKeys=[{"keyId": public.key_id, "publicKey": public.b64url}])
    report = verify_bundle(dumps_text(bundle).encode(), ledger, discovery=published)
    assert report.outcome is Outcome.NOT_CERTIFIED
    assert report.message == f"not certified: blocked rows {rows[0]['id']}"


@pytest.mark.req("engram.conformance.bundle.members-covered")
@pytest.mark.parametrize(
    ("member", "value", "outcome"),
    [
        (("suite", "name"), "someone-elses-suite", Outcome.MALFORMED),
        (("suite", "specVersion"), "9.9", Outcome.MALFORMED),
        (("discovery", "engramVersion"), "9.9", Outcome.INCONSISTENT),
        (("claim", "tier"), 1, Outcome.INCONSISTENT),
        (("suite", "version"), "9.9.9", Outcome.ATTESTATION_INVALID),
    ],
)
def test_an_edit_of_a_covered_member_never_verifies_certified(
    signed: tuple[bytes, dict[str, Any]],
    ledger: Ledger,
    member: tuple[str, str],
    value: object,
    outcome: Outcome,
) -> None:
    data, discovery = signed
    bundle = _parsed(data)
    bundle[member[0]][member[1]] = value
    report = verify_bundle(canonicalize(bundle), ledger, discovery=discovery)
    assert report.outcome is outcome, report.message


@pytest.mark.req("engram.conformance.bundle.members-covered")
@pytest.mark.parametrize(
    ("member", "value"),
    [
        (("host", "name"), "A Different Host"),
        (("host", "version"), "6.6.6"),
        (("discovery", "url"), "https://elsewhere.example/.well-known/engram"),
    ],
)
def test_an_edit_of_an_unsigned_member_is_shown_as_unsigned(
    signed: tuple[bytes, dict[str, Any]], ledger: Ledger, member: tuple[str, str], value: str
) -> None:
    data, discovery = signed
    bundle = _parsed(data)
    bundle[member[0]][member[1]] = value
    report = verify_bundle(canonicalize(bundle), ledger, discovery=discovery)
    assert report.outcome is Outcome.CERTIFIED
    assert report.unsigned[".".join(member)] == value
    unsigned = report.to_wire()["unsigned"]
    assert isinstance(unsigned, dict)
    assert set(unsigned) == {"host.name", "host.version", "discovery.url"}
