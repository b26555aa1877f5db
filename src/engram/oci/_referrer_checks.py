"""What a referrer's content must say about the cartridge it refers to (SPEC §11): a DSSE
envelope's Statement names the ROM, a level credential is bound to it. Read from a registry, so
no shape is taken on trust: every failure is one :class:`ArtifactRefused` line.
"""

from __future__ import annotations

import base64
import binascii

from engram.core.canonical import Json, JsonObject, parse_strict
from engram.errors import CanonicalJsonError
from engram.oci._errors import ArtifactRefused
from engram.oci._media import DSSE_ENVELOPE


def content_check(artifact_type: str, blob: bytes, rom_hash: str) -> tuple[str, bool, str]:
    if artifact_type == DSSE_ENVELOPE:
        try:
            statement = statement_of(blob)
        except ArtifactRefused as e:
            return ("dsse", False, e.message)
        subjects = statement.get("subject") or []
        first = subjects[0] if isinstance(subjects, list) and subjects else None
        bound = member(member(first, "digest"), "sha256")
        holds = f"sha256:{bound}" == rom_hash
        return (
            "dsse",
            holds,
            f"Statement subject sha256:{bound} ({statement.get('predicateType')})",
        )
    try:
        check_level(blob, rom_hash)
    except ArtifactRefused as e:
        return ("level", False, e.message)
    return ("level", True, f"bound to ROM {rom_hash}")


def member(value: Json, name: str) -> Json:
    """``value[name]`` when ``value`` is an object that has it, else ``None``: a referrer's
    manifest and Statement are read from a registry, so their shape is not taken on trust."""
    return value.get(name) if isinstance(value, dict) else None


def statement_of(envelope_bytes: bytes) -> JsonObject:
    try:
        envelope = parse_strict(envelope_bytes)
        payload = envelope["payload"] if isinstance(envelope, dict) else None
        text = str(payload)
        raw = base64.b64decode(
            text + "=" * (-len(text) % 4), altchars=b"-_" if "-" in text or "_" in text else None
        )
        statement = parse_strict(raw)
    except (CanonicalJsonError, KeyError, binascii.Error, ValueError) as e:
        raise ArtifactRefused(f"not a DSSE envelope over a JSON Statement: {e}") from e
    if not isinstance(statement, dict):
        raise ArtifactRefused("the DSSE payload is not a JSON object")
    return statement


def check_level(credential: bytes, rom_hash: str) -> None:
    """A credential is attached only when it is a level credential bound to this very ROM."""
    try:
        document = parse_strict(credential)
    except CanonicalJsonError as e:
        raise ArtifactRefused(f"the level credential is not strict JSON: {e.message}") from e
    if not isinstance(document, dict):
        raise ArtifactRefused("the level credential is not a JSON object")
    types = document.get("type")
    if not isinstance(types, list) or not {"VerifiableCredential", "OpenBadgeCredential"} <= {
        str(t) for t in types
    }:
        raise ArtifactRefused(
            "not a level credential (type must hold VerifiableCredential and OpenBadgeCredential)"
        )
    subject = document.get("credentialSubject")
    results = subject.get("result") if isinstance(subject, dict) else None
    listed = results if isinstance(results, list) else []
    bound = {r.get("acx:cartridgeRomDigest") for r in listed if isinstance(r, dict)} - {None}
    if bound != {rom_hash}:
        shown = ", ".join(sorted(str(b) for b in bound)) or "none"
        raise ArtifactRefused(
            f"the level credential is bound to ROM {shown}, not this cartridge's {rom_hash}"
        )


__all__ = ["check_level", "content_check", "member", "statement_of"]
