"""Verifying a cartridge: integrity from live bytes first, then the §4.5 trust decision.

Spec: lboel/acx@85f1358 SPEC.md §3.3, §4.2, §4.5 and §12 items 3 and 6; docs/spec/acx.md §6.
Numbered as the code runs:

1. ``load_rom`` recomputes the ROM manifest from live bytes; any disagreement -> ``tampered``.
2. No ``rom-manifest`` signature row -> ``legacy`` (intact, unsigned).
3. The envelope must parse, its ``signatures.manifest_hash`` must be the live hash, and it must
   verify under a key in hand: the trust registry's key for its ``keyid`` or the row's
   ``public_key_pem``. A signature that verifies under neither, when one was in hand ->
   ``tampered``. The Statement must bind the live hash (subject, ``romDigest``,
   ``manifestHash``) and name the cartridge's signed ``acx.publisher_id``; else ``tampered``.
4. With no key in hand at all the signature cannot be checked: ``portable`` with
   ``signature_verified=False`` and a warning (never ``trusted``); its Statement must still
   bind the live hash and publisher. Callers that act on a cartridge
   (:func:`engram.cartridge.require_state`) count such a report as ``legacy``: nothing vouched
   for its bytes.
5. ``engram.trust.evaluate_signer`` decides ``portable`` / ``trusted`` / ``local``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime

from engram.cartridge._container import Cartridge
from engram.cartridge._errors import CartridgeTampered
from engram.cartridge._rom import Rom, check_rom, load_rom
from engram.cartridge._signing import check_statement, parse_envelope, verify_with
from engram.core.canonical import JsonObject
from engram.core.clock import format_instant
from engram.core.keys import PublicKey
from engram.errors import CartridgeFormatError, EngramError
from engram.trust import TrustRegistry, TrustState, evaluate_signer


@dataclass(frozen=True)
class TrustReport:
    """The outcome of :func:`verify` (SPEC's ``AgentPackageVerification``)."""

    state: TrustState
    reason: str
    manifest_hash: str
    cartridge_id: str
    artifact_id: str
    artifact_version: str
    publisher_id: str
    keyid: str | None = None
    signed_at: datetime | None = None
    signature_verified: bool = False
    warnings: tuple[str, ...] = ()
    problems: tuple[str, ...] = field(default=())

    @property
    def status(self) -> str:
        """SPEC's status: ``invalid`` (tampered), ``warning`` (legacy, portable) or ``verified``."""
        if self.state is TrustState.TAMPERED:
            return "invalid"
        if self.state in (TrustState.LEGACY, TrustState.PORTABLE):
            return "warning"
        return "verified"

    def to_wire(self) -> JsonObject:
        return {
            "status": self.status,
            "trust": self.state.value,
            "summary": self.reason,
            "manifestHash": self.manifest_hash,
            "cartridgeId": self.cartridge_id,
            "artifactId": self.artifact_id,
            "artifactVersion": self.artifact_version,
            "publisherId": self.publisher_id,
            "keyid": self.keyid,
            "signedAt": None if self.signed_at is None else format_instant(self.signed_at),
            "signatureVerified": self.signature_verified,
            "warnings": list(self.warnings),
            "issues": list(self.problems),
        }


def verify(
    cartridge: Cartridge,
    *,
    registry: TrustRegistry | None = None,
    local_keyids: Collection[str] = (),
    now: datetime | None = None,
) -> TrustReport:
    """The report alone: the ROM is checked by :func:`check_rom`, which keeps no memory row
    (what ``engram cartridge verify`` runs; 100,000 memories are never held at once)."""
    rom = check_rom(cartridge)
    return _judge(cartridge, rom, registry=registry, local_keyids=local_keyids, now=now)


def verify_rom(
    cartridge: Cartridge,
    *,
    registry: TrustRegistry | None = None,
    local_keyids: Collection[str] = (),
    now: datetime | None = None,
) -> tuple[TrustReport, Rom]:
    """:func:`verify`, also returning the ROM it verified (callers act on exactly these bytes)."""
    rom = load_rom(cartridge)
    report = _judge(cartridge, rom, registry=registry, local_keyids=local_keyids, now=now)
    return report, rom


def _judge(
    cartridge: Cartridge,
    rom: Rom,
    *,
    registry: TrustRegistry | None,
    local_keyids: Collection[str],
    now: datetime | None,
) -> TrustReport:
    registry = registry or TrustRegistry.empty()
    base = _base(rom)
    if rom.problems:
        return _report(
            base,
            TrustState.TAMPERED,
            "ROM content diverges from its manifest entries",
            problems=tuple(rom.problems),
        )
    rows = cartridge.query(_SIGNATURE_SQL if _has_pem(cartridge) else _SIGNATURE_SQL_NO_PEM)
    if not rows:
        return _report(base, TrustState.LEGACY, "unsigned cartridge (no DSSE envelope)")
    if len(rows) > 1:
        raise CartridgeFormatError("cartridge has more than one rom-manifest signature row")
    _sig_id, recorded, envelope_text, column_keyid, pem, size = rows[0]
    if not isinstance(size, int) or size > cartridge.limits.max_envelope_bytes:
        raise CartridgeFormatError("signature envelope is over the size limit")
    try:
        if recorded != rom.manifest_hash:
            raise CartridgeTampered(
                f"recorded manifest_hash {recorded} is not the live {rom.manifest_hash}"
            )
        envelope = parse_envelope(str(envelope_text))
        keyid = envelope.signatures[0][0] or str(column_keyid)
        candidates = _candidates(registry, envelope, pem)
        if not candidates:
            # Nothing can vouch for the payload, but a Statement that does not even name these
            # bytes (or this publisher) is tampered whoever signed it.
            unchecked = check_statement(envelope.payload, rom.manifest_hash)
            if unchecked.publisher_id != rom.publisher_id:
                raise CartridgeTampered("the Statement names another publisher")
            return _report(
                base,
                TrustState.PORTABLE,
                "signature present but not verifiable: no public key in the cartridge or registry",
                keyid=keyid,
                warnings=("the DSSE signature was not checked (no public key available)",),
            )
        verified = verify_with(envelope, candidates)
        if verified is None:
            raise CartridgeTampered("DSSE signature does not verify over the envelope's payload")
        key, keyid = verified
        signed = check_statement(envelope.payload, rom.manifest_hash)
        if signed.publisher_id != rom.publisher_id:
            raise CartridgeTampered(
                f"signed publisherId {signed.publisher_id!r} is not the cartridge's "
                f"acx.publisher_id {rom.publisher_id!r}"
            )
    except CartridgeTampered as e:
        return _report(base, TrustState.TAMPERED, e.message, problems=(e.message,))
    verdict = evaluate_signer(
        registry,
        publisher_id=signed.publisher_id,
        keyid=key.key_id,
        verified_with=key,
        signed_at=signed.signed_at,
        now=now or datetime.now().astimezone(),
        local_keyids=local_keyids,
    )
    return _report(
        base,
        verdict.state,
        verdict.reason,
        keyid=key.key_id,
        signed_at=signed.signed_at,
        verified=True,
        warnings=verdict.warnings,
    )


_SIGNATURE_SQL = (
    "SELECT sig_id, manifest_hash, envelope, keyid, public_key_pem, "
    "length(CAST(envelope AS BLOB)) FROM signatures NOT INDEXED WHERE target = 'rom-manifest'"
)
_SIGNATURE_SQL_NO_PEM = (
    "SELECT sig_id, manifest_hash, envelope, keyid, NULL, "
    "length(CAST(envelope AS BLOB)) FROM signatures NOT INDEXED WHERE target = 'rom-manifest'"
)
"""The signature row, with the reference's ``public_key_pem`` or (SPEC's DDL) without it."""


def _has_pem(cartridge: Cartridge) -> bool:
    columns = cartridge.query("SELECT name FROM pragma_table_info('signatures')")
    return any(c[0] == "public_key_pem" for c in columns)


def _candidates(registry: TrustRegistry, envelope: object, pem: object) -> list[PublicKey]:
    keys: list[PublicKey] = []
    assert hasattr(envelope, "signatures")
    for keyid, _sig in envelope.signatures:
        entry = registry.key(keyid)
        if entry is not None:
            keys.append(entry.public_key)
    if isinstance(pem, str) and pem:
        try:
            keys.append(PublicKey.from_pem(pem.encode("utf-8")))
        except EngramError as e:
            raise CartridgeTampered(
                f"public_key_pem is not an Ed25519 SPKI key: {e.message}"
            ) from e
    return keys


@dataclass(frozen=True)
class _Base:
    manifest_hash: str
    cartridge_id: str
    artifact_id: str
    artifact_version: str
    publisher_id: str


def _base(rom: Rom) -> _Base:
    meta = rom.signed_meta
    return _Base(
        rom.manifest_hash,
        rom.cartridge_id,
        meta.get("acx.artifact_id", ""),
        meta.get("acx.artifact_version", ""),
        rom.publisher_id,
    )


def _report(
    base: _Base,
    state: TrustState,
    reason: str,
    *,
    keyid: str | None = None,
    signed_at: datetime | None = None,
    verified: bool = False,
    warnings: tuple[str, ...] = (),
    problems: tuple[str, ...] = (),
) -> TrustReport:
    return TrustReport(
        state=state,
        reason=reason,
        manifest_hash=base.manifest_hash,
        cartridge_id=base.cartridge_id,
        artifact_id=base.artifact_id,
        artifact_version=base.artifact_version,
        publisher_id=base.publisher_id,
        keyid=keyid,
        signed_at=signed_at,
        signature_verified=verified,
        warnings=warnings,
        problems=problems,
    )


__all__ = ["TrustReport", "verify", "verify_rom"]
