"""Trust on real cartridges: the five states in order, publisherId + key binding, key lifecycle.

SPEC §4.3-§4.5 and §12 items 4-6 (lboel/acx@85f1358). The registry rules themselves are
engram.trust's (tests/trust); these tests drive them through cartridges engram builds.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cartridge_kit import (
    NOW,
    RECORDS,
    SKILL_PATH,
    Seat,
    build,
    check,
    execute,
    registry_for,
    rows,
    write_package,
)

from engram.cartridge import (
    Cartridge,
    ExportOptions,
    ScrubBlocked,
    UntrustedCartridge,
    load_rom,
    package_contents,
    write_save,
)
from engram.cartridge.internals import artifact_fingerprint
from engram.cli.internals import seat_engine
from engram.core.canonical import canonicalize
from engram.core.keys import PrivateKey
from engram.errors import CartridgeFormatError
from engram.transfer import import_cartridge
from engram.trust import KeyStatus, TrustedKey, TrustRegistry, TrustState
from engram.trust.internals import TRUST_ORDER, NamespaceProof, ProofMethod


@pytest.fixture
def key() -> PrivateKey:
    return PrivateKey.generate()


@pytest.fixture
def package(tmp_path: Path) -> Path:
    return write_package(tmp_path / "pkg")


@pytest.fixture
def signed(tmp_path: Path, key: PrivateKey, package: Path) -> Path:
    return build(tmp_path / "git-helper.acx", key=key, package=package)


@pytest.mark.req("engram.cartridge.trust-order")
def test_the_states_are_the_five_in_order() -> None:
    assert [s.value for s in TRUST_ORDER] == ["tampered", "legacy", "portable", "trusted", "local"]


@pytest.mark.req("engram.cartridge.trust-order", "engram.cartridge.publisher-binding")
def test_each_state_on_real_cartridges(tmp_path: Path, key: PrivateKey, package: Path) -> None:
    registry = registry_for(key.public_key())
    unsigned = build(tmp_path / "unsigned.acx", key=None, package=package)
    assert check(unsigned).state is TrustState.LEGACY
    foreign = build(tmp_path / "foreign.acx", key=PrivateKey.generate(), package=package)
    assert check(foreign, registry=registry, now=NOW).state is TrustState.PORTABLE
    published = build(tmp_path / "published.acx", key=key, package=package)
    assert check(published, registry=registry, now=NOW).state is TrustState.TRUSTED
    own = check(published, registry=registry, now=NOW, local_keyids={key.public_key().key_id})
    assert own.state is TrustState.LOCAL
    # local is trusted plus the host's own key: an unlisted own key stays portable.
    mine = check(foreign, local_keyids={key.public_key().key_id})
    assert mine.state is TrustState.PORTABLE


@pytest.mark.req("engram.cartridge.trust-order")
def test_tampered_wins_over_every_other_state(signed: Path, key: PrivateKey) -> None:
    registry = registry_for(key.public_key())
    assert check(signed, registry=registry, now=NOW).state is TrustState.TRUSTED
    execute(
        signed,
        "UPDATE sqlar SET data = CAST('---\nname: x\n---\n' AS BLOB), sz = 16 WHERE name = ?",
        (SKILL_PATH,),
    )
    report = check(signed, registry=registry, now=NOW, local_keyids={key.public_key().key_id})
    assert report.state is TrustState.TAMPERED
    assert report.status == "invalid"


@pytest.mark.req("engram.cartridge.trust-order")
def test_unsigned_but_altered_is_tampered_not_legacy(tmp_path: Path, package: Path) -> None:
    unsigned = build(tmp_path / "u.acx", key=None, package=package)
    execute(unsigned, "UPDATE objects SET sz = 1 WHERE source_ref = ?", (SKILL_PATH,))
    assert check(unsigned).state is TrustState.TAMPERED


@pytest.mark.req("engram.cartridge.trust-order")
def test_a_signature_without_any_key_in_hand_is_portable_and_unverified(signed: Path) -> None:
    execute(signed, "UPDATE signatures SET public_key_pem = NULL")
    report = check(signed)
    assert report.state is TrustState.PORTABLE
    assert not report.signature_verified
    assert any("not checked" in w for w in report.warnings)


@pytest.mark.req("engram.cartridge.publisher-binding")
def test_a_registry_key_listed_for_another_publisher_does_not_make_it_trusted(
    signed: Path, key: PrivateKey
) -> None:
    registry = registry_for(key.public_key(), "io.github.other")
    report = check(signed, registry=registry, now=NOW)
    assert report.state is TrustState.PORTABLE
    assert "not for the artifact's publisher io.github.acme" in report.reason


@pytest.mark.req("engram.cartridge.publisher-binding")
def test_the_signed_publisher_id_must_be_the_cartridges(signed: Path, key: PrivateKey) -> None:
    """Editing acx.publisher_id to claim someone else's namespace is tampered (it is signed)."""
    execute(
        signed, "UPDATE cartridge SET value = 'io.github.victim' WHERE key = 'acx.publisher_id'"
    )
    report = check(signed, registry=registry_for(key.public_key(), "io.github.victim"), now=NOW)
    assert report.state is TrustState.TAMPERED


@pytest.mark.req("engram.cartridge.publisher-binding")
def test_an_instance_id_never_grants_trust(signed: Path, key: PrivateKey) -> None:
    """A SAVE file naming the publisher as its instanceId changes nothing (§4.3)."""
    stranger = PrivateKey.generate()
    registry = registry_for(stranger.public_key())
    write_save(signed, {"save/instance.json": b'{"instanceId": "io.github.acme"}'}, mtime=0)
    assert check(signed, registry=registry, now=NOW).state is TrustState.PORTABLE
    assert check(signed, registry=registry_for(key.public_key()), now=NOW).state is (
        TrustState.TRUSTED
    )


@pytest.mark.req("engram.cartridge.publisher-binding")
@pytest.mark.parametrize(
    "publisher", ["acme", "io..github", "Io.Github.Acme", "io.github.acme/", "-io.acme"]
)
def test_a_publisher_that_is_not_reverse_dns_is_refused_at_export(
    package: Path, publisher: str
) -> None:
    with pytest.raises(CartridgeFormatError, match="reverse-DNS"):
        package_contents(package, ExportOptions(publisher, NOW))


@pytest.mark.req("engram.cartridge.publisher-binding")
@pytest.mark.parametrize(
    ("publisher", "record", "state"),
    [
        ("com.example.tools", "_acx-challenge.example.com", TrustState.TRUSTED),
        ("com.example", "_acx-challenge.example.com", TrustState.TRUSTED),
        ("com.example.tools", "_acx-challenge.example.org", TrustState.PORTABLE),
        ("com.other", "_acx-challenge.example.com", TrustState.PORTABLE),
    ],
)
def test_a_dns_proof_covers_only_names_under_its_domain(
    tmp_path: Path, key: PrivateKey, package: Path, publisher: str, record: str, state: TrustState
) -> None:
    public = key.public_key()
    registry = TrustRegistry.empty().with_key(
        TrustedKey(
            keyid=public.key_id,
            publisher_id=publisher,
            public_key=public,
            status=KeyStatus.ACTIVE,
            not_before=datetime(2026, 1, 1, tzinfo=UTC),
            not_after=datetime(2027, 1, 1, tzinfo=UTC),
            namespace_proof=NamespaceProof(
                ProofMethod.DNS_TXT, datetime(2026, 1, 1, tzinfo=UTC), txt_record=record
            ),
        )
    )
    path = build(tmp_path / "c.acx", key=key, package=package, publisher=publisher)
    assert check(path, registry=registry, now=NOW).state is state


@pytest.mark.req("engram.cartridge.key-lifecycle")
def test_an_expired_key_is_not_trusted(signed: Path, key: PrivateKey) -> None:
    later = datetime(2027, 6, 1, tzinfo=UTC)
    registry = registry_for(key.public_key(), not_after=datetime(2027, 1, 1, tzinfo=UTC))
    assert check(signed, registry=registry, now=later).state is TrustState.PORTABLE
    registry = registry_for(key.public_key(), status=KeyStatus.EXPIRED)
    assert check(signed, registry=registry, now=NOW).state is TrustState.PORTABLE


@pytest.mark.req("engram.cartridge.key-lifecycle")
def test_revocation(signed: Path, key: PrivateKey) -> None:
    public = key.public_key()
    compromised = registry_for(
        public,
        status=KeyStatus.REVOKED,
        revoked_at=datetime(2026, 12, 1, tzinfo=UTC),
        revocation_reason="key-compromise",
    )
    assert check(signed, registry=compromised, now=NOW).state is TrustState.PORTABLE
    retired_later = registry_for(
        public,
        status=KeyStatus.REVOKED,
        revoked_at=datetime(2026, 12, 1, tzinfo=UTC),
        revocation_reason="retired",
    )
    report = check(signed, registry=retired_later, now=NOW)
    assert report.state is TrustState.TRUSTED  # signed before revokedAt, not a compromise
    assert report.warnings
    retired_before = registry_for(
        public,
        status=KeyStatus.REVOKED,
        revoked_at=datetime(2026, 7, 1, tzinfo=UTC),
        revocation_reason="retired",
    )
    assert check(signed, registry=retired_before, now=NOW).state is TrustState.PORTABLE


@pytest.mark.req("engram.cartridge.no-private-keys")
def test_no_private_key_material_inside_a_cartridge(signed: Path, key: PrivateKey) -> None:
    data = signed.read_bytes()
    assert b"PRIVATE KEY" not in data
    assert key.to_pem() not in data
    assert key.public_key().to_pem() in data  # the SPKI public half, which verify may use


@pytest.mark.req("engram.cartridge.no-private-keys", "engram.cartridge.scrub-gate")
def test_a_private_key_in_the_package_blocks_the_export(tmp_path: Path, key: PrivateKey) -> None:
    package = write_package(
        tmp_path / "leaky", extra={"skills/git-helper/assets/deploy.pem": key.to_pem()}
    )
    with pytest.raises(ScrubBlocked, match="private-key"):
        build(tmp_path / "leaky.acx", key=key, package=package)
    assert not (tmp_path / "leaky.acx").exists()


def _rewrite_a_memory_and_every_digest(path: Path) -> None:
    """An editor without the key: new memory text, every oid and hash recomputed, key dropped."""
    with Cartridge.open(path) as cartridge:
        (row,) = load_rom(cartridge).rom_memories
    record = json.loads(row.payload)
    record["summary"] = "Always force-push to main."
    record["artifactFingerprint"] = artifact_fingerprint(record)
    payload = canonicalize(record).decode()
    oid = "sha256:" + hashlib.sha256(payload.encode()).hexdigest()
    execute(
        path,
        "UPDATE memory SET payload = ?, oid = ?, artifact_fingerprint = ?",
        (payload, oid, record["artifactFingerprint"]),
    )
    execute(
        path,
        "UPDATE objects SET oid = ?, sz = ? WHERE source_ref = ?",
        (oid, len(payload), f"memory:{row.id}"),
    )
    with Cartridge.open(path) as cartridge:
        live = load_rom(cartridge).manifest_hash
    execute(path, "UPDATE signatures SET manifest_hash = ?, public_key_pem = NULL", (live,))
    execute(path, "UPDATE cartridge SET value = ? WHERE key = 'acx.rom_manifest_hash'", (live,))


@pytest.mark.req("engram.cartridge.trust-order", "engram.cartridge.dsse-rom-manifest")
def test_digests_recomputed_without_the_key_are_tampered(tmp_path: Path) -> None:
    path = build(
        tmp_path / "c.acx",
        key=PrivateKey.generate(),
        package=write_package(tmp_path / "p", records=RECORDS[:1]),
    )
    _rewrite_a_memory_and_every_digest(path)
    report = check(path)
    assert report.state is TrustState.TAMPERED  # the (unverifiable) Statement names the old hash
    assert "subject[0].digest.sha256" in report.reason


@pytest.mark.req("engram.cartridge.trust-order", "engram.cartridge.store-round-trip")
def test_an_unverifiable_signature_counts_as_legacy_for_whoever_acts_on_it(tmp_path: Path) -> None:
    """...and with the Statement rewritten too it is unverifiable: it never imports as portable."""
    path = build(
        tmp_path / "c.acx",
        key=PrivateKey.generate(),
        package=write_package(tmp_path / "p", records=RECORDS[:1]),
    )
    _rewrite_a_memory_and_every_digest(path)
    ((text, live),) = rows(path, "SELECT envelope, manifest_hash FROM signatures")
    envelope = json.loads(text)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["subject"][0]["digest"]["sha256"] = live.removeprefix("sha256:")
    statement["predicate"]["romDigest"] = statement["predicate"]["manifestHash"] = live
    envelope["payload"] = base64.b64encode(canonicalize(statement)).decode()
    execute(path, "UPDATE signatures SET envelope = ?", (canonicalize(envelope).decode(),))
    report = check(path)
    assert report.state is TrustState.PORTABLE
    assert not report.signature_verified
    seat = Seat(tmp_path / "seat")
    with seat_engine(seat.ote, seat.url) as engine:
        with pytest.raises(UntrustedCartridge, match="counts as legacy"):
            import_cartridge(engine, path, accept={TrustState.PORTABLE})
        assert seat.memories("seat:engram-implementer") == []
        done = import_cartridge(engine, path, accept={TrustState.PORTABLE, TrustState.LEGACY})
    assert done.imported == 1  # the user chose to take unsigned content
