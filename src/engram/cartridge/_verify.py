"""Verifying a cartridge: integrity from live bytes first, then the trust decision.

Spec: acx-cartridge-conformance §12 items 3, 6, 7 and 9; docs/spec/acx.md §10. :func:`verify`
re-derives the ROM manifest, its hash and the skill index from live bytes (``_rom``), then
compares every stored projection with them - the ``acx_object`` index (a stale ``oid`` is
tampering), the ``acx_skill`` index (``content_sha256`` must match the manifest), the ``acx_meta``
mirror (identity and engine binding) - checks the DSSE envelope against the live manifest, and
only then classifies trust. A file that is not a well-formed cartridge raises
:class:`CartridgeFormatError` instead of yielding a state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engram.cartridge._container import Cartridge
from engram.cartridge._errors import CartridgeTampered
from engram.cartridge._manifest import meta_mirror
from engram.cartridge._rom import Rom, load_rom
from engram.cartridge._signing import Signer, check_envelope
from engram.cartridge._trust import TrustRegistry, TrustState, classify
from engram.core.canonical import JsonValue, canonicalize, parse_strict
from engram.errors import CanonicalJsonError, CartridgeFormatError


@dataclass(frozen=True)
class TrustReport:
    """The outcome of :func:`verify`."""

    state: TrustState
    reason: str
    manifest_hash: str
    artifact_id: str
    artifact_version: str
    publisher_id: str
    keyid: str | None
    skills: int
    records: int

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "state": self.state.value,
            "reason": self.reason,
            "manifestHash": "sha256:" + self.manifest_hash,
            "artifactId": self.artifact_id,
            "artifactVersion": self.artifact_version,
            "publisherId": self.publisher_id,
            "keyid": self.keyid,
            "skills": self.skills,
            "records": self.records,
        }


def verify(
    cartridge: Cartridge,
    *,
    registry: TrustRegistry | None = None,
    own_keyids: frozenset[str] = frozenset(),
) -> TrustReport:
    """The trust state of ``cartridge`` (see ``_trust`` for the order)."""
    return verify_rom(cartridge, registry=registry, own_keyids=own_keyids)[0]


def verify_rom(
    cartridge: Cartridge,
    *,
    registry: TrustRegistry | None = None,
    own_keyids: frozenset[str] = frozenset(),
) -> tuple[TrustReport, Rom]:
    """:func:`verify`, also returning the ROM it verified.

    Callers that act on ROM content after verifying (import, activation) use this ROM rather
    than reading the file again: the records they act on are then exactly the bytes whose trust
    state was decided, even if the file changes afterwards, and the ROM is derived once.
    """
    rom = load_rom(cartridge)
    check_vectors(cartridge, rom)
    signer: Signer | None = None
    try:
        check_projections(cartridge, rom)
        envelope = read_envelope(cartridge)
        if envelope is not None:
            signer = check_envelope(envelope, rom.manifest, rom.manifest_hash)
    except CartridgeTampered as e:
        return _report(rom, TrustState.TAMPERED, e.message, None), rom
    signed_by = None if signer is None else (signer.publisher_id, signer.keyid, signer.public_key)
    state, reason = classify(
        signed_by=signed_by, registry=registry or TrustRegistry.empty(), own_keyids=own_keyids
    )
    return _report(rom, state, reason, None if signer is None else signer.keyid), rom


def _report(rom: Rom, state: TrustState, reason: str, keyid: str | None) -> TrustReport:
    return TrustReport(
        state=state,
        reason=reason,
        manifest_hash=rom.manifest_hash,
        artifact_id=str(rom.document["artifactId"]),
        artifact_version=str(rom.document["artifactVersion"]),
        publisher_id=rom.publisher_id,
        keyid=keyid,
        skills=len(rom.skills),
        records=len(rom.records),
    )


def check_projections(cartridge: Cartridge, rom: Rom) -> None:
    """Stored indexes and mirrors must equal what the live ROM bytes derive; else tampered."""
    stored_objects = {
        str(path): {"path": path, "kind": kind, "mode": mode, "size": size, "oid": oid}
        for path, kind, mode, size, oid in cartridge.query(
            "SELECT path, kind, mode, size, oid FROM acx_object"
        )
    }
    for obj in rom.manifest["objects"]:
        path = obj["path"]
        stored = stored_objects.pop(path, None)
        live = {
            "path": path,
            "kind": obj["kind"],
            "mode": obj["mode"],
            "size": obj.get("size", 0),
            "oid": obj.get("oid"),
        }
        if stored is None:
            raise CartridgeTampered(f"ROM object {path!r} is not in the stored object index")
        if stored != live:
            raise CartridgeTampered(
                f"ROM object {path!r} does not match its stored objects.oid/size/mode "
                "(live bytes were changed or the index was edited)"
            )
    if stored_objects:
        raise CartridgeTampered(f"object index names missing ROM rows {sorted(stored_objects)[:5]}")
    stored_skills = cartridge.query("SELECT * FROM acx_skill ORDER BY name")
    if stored_skills != [row.as_tuple() for row in rom.skills]:
        raise CartridgeTampered(
            "acx_skill index differs from the one re-derived from ROM (content_sha256 must "
            "match the manifest)"
        )
    expected_meta = meta_mirror(rom.manifest, rom.manifest_hash)
    if cartridge.meta() != expected_meta:
        raise CartridgeTampered("acx_meta identity/engine mirror differs from the ROM manifest")


def read_envelope(cartridge: Cartridge) -> dict[str, Any] | None:
    """The stored DSSE envelope, or None when the cartridge is unsigned."""
    rows = cartridge.query("SELECT envelope, length(CAST(envelope AS BLOB)) FROM acx_signature")
    if not rows:
        return None
    text, size = rows[0]
    if not isinstance(size, int) or size > cartridge.limits.max_envelope_bytes:
        raise CartridgeFormatError("signature envelope is over the size limit")
    try:
        envelope = parse_strict(str(text))
    except CanonicalJsonError as e:
        raise CartridgeTampered(f"signature envelope is not JSON: {e.message}") from e
    if not isinstance(envelope, dict):
        raise CartridgeTampered("signature envelope is not a JSON object")
    return envelope


def check_vectors(cartridge: Cartridge, rom: Rom) -> None:
    """Every derived vector row carries the cartridge's engine tag and a well-sized vector."""
    engine = rom.document["embeddingEngine"]
    for memory_id, engine_id, dim, size in cartridge.query(
        "SELECT memory_id, engine, dim, length(vector) FROM acx_vectors"
    ):
        if engine_id != engine["id"] or dim != engine["dim"] or size != 4 * int(str(dim)):
            raise CartridgeFormatError(
                f"vector for {memory_id!r} is not tagged {canonicalize(engine).decode()} "
                "with a float32 vector of that dimension"
            )


__all__ = ["TrustReport", "check_projections", "read_envelope", "verify", "verify_rom"]
