"""Signed certification bundles: build and sign one from a provider run.

Spec: OpenWOP v2 Conformance §"Bundle v3", §"Signature and attribution" and §"Canonical JSON",
adapted to Engram in docs/spec/conformance-bundle.md. Every digest and the signature are over
RFC 8785 bytes from :func:`engram.core.canonical.canonicalize`; rows are sorted by id in UTF-16
code-unit order before hashing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from engram import __version__
from engram.conformance import _wire as wire
from engram.conformance._bundle_schema import SIGNED, SUITE_NAME
from engram.conformance._provider_runner import ProviderReport
from engram.conformance._results import (
    BADGES,
    Row,
    assertion_count,
    certifies,
    non_pass,
    tiers_of,
    totals,
    utf16_key,
)
from engram.core.canonical import Json, JsonArray, JsonObject, canonicalize
from engram.core.encoding import b64url_encode
from engram.core.keys import PrivateKey
from engram.errors import InvalidRequest

BUNDLE_VERSION = "engram-1"
SPEC_VERSION = "0.1"
SIGNED_MEMBERS = SIGNED
BUILD_KINDS = ("image-digest", "commit", "artifact-sha256")


@dataclass(frozen=True)
class HostInfo:
    """Who the bundle is about: ``host.name``, ``host.version`` and ``host.build``."""

    name: str
    version: str
    build_kind: str
    build_id: str

    def to_wire(self) -> JsonObject:
        if self.build_kind not in BUILD_KINDS:
            raise InvalidRequest(f"build kind must be one of {', '.join(BUILD_KINDS)}")
        if not self.build_id:
            raise InvalidRequest("a bundle needs a host build id (--build-id)")
        return {
            "name": self.name,
            "version": self.version,
            "build": {"kind": self.build_kind, "id": self.build_id},
        }


def sha256_hex(value: Json) -> str:
    return hashlib.sha256(canonicalize(value)).hexdigest()


def sorted_rows(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda row: utf16_key(row.id))


def witness_sha256(rows: list[JsonObject]) -> str:
    """SHA-256 over the RFC 8785 bytes of the rows sorted by id in UTF-16 code-unit order."""
    ids = [wire.text(row.get("id"), "results.requirements[].id") for row in rows]
    ordered: JsonArray = [row for _, row in sorted(zip(ids, rows, strict=True), key=_by_id)]
    return sha256_hex(ordered)


def _by_id(pair: tuple[str, JsonObject]) -> bytes:
    return utf16_key(pair[0])


def engram_version_of(document: Json) -> str:
    """``discovery.engramVersion``: re-derived by the verifier from the captured document."""
    version = document.get("engram_version") if isinstance(document, dict) else None
    return version if isinstance(version, str) else ""


def attestation_preimage(bundle: JsonObject) -> bytes:
    """The signed bytes: RFC 8785 of exactly the four members named in ``signature.over``.

    Raises :class:`~engram.errors.InvalidRequest` when one of them is missing."""
    return canonicalize({member: wire.path(bundle, member) for member in SIGNED})


def build_bundle(report: ProviderReport, host: HostInfo, key: PrivateKey) -> JsonObject:
    """A signed bundle for ``report``; raises when no discovery document was captured."""
    if not isinstance(report.discovery, dict):
        raise InvalidRequest("no discovery document was captured: a bundle cannot be cut")
    rows = sorted_rows(report.rows)
    wire_rows = [row.to_wire() for row in rows]
    certified = certifies(rows, tiers_of(report.requirements), report.claimed_tier)
    bundle: JsonObject = {
        "bundleVersion": BUNDLE_VERSION,
        "suite": {"name": SUITE_NAME, "version": __version__, "specVersion": SPEC_VERSION},
        "host": host.to_wire(),
        "discovery": {
            "url": report.url.rstrip("/") + "/.well-known/engram",
            "sha256": sha256_hex(report.discovery),
            "engramVersion": engram_version_of(report.discovery),
            "document": report.discovery,
        },
        "claim": {
            "tier": report.claimed_tier,
            "badge": BADGES[report.claimed_tier],
            "certified": certified,
        },
        "results": {"totals": {**totals(rows)}, "requirements": [*wire_rows]},
        "witnessSha256": witness_sha256(wire_rows),
        "assertionCount": assertion_count(rows),
        "detail": {"nonPass": [*non_pass(rows)]},
    }
    public = key.public_key()
    bundle["signature"] = {
        "alg": "Ed25519",
        "keyId": public.key_id,
        "publicKey": public.b64url,
        "over": list(SIGNED_MEMBERS),
        "value": b64url_encode(key.sign(attestation_preimage(bundle))),
    }
    return bundle


__all__ = [
    "BUILD_KINDS",
    "BUNDLE_VERSION",
    "SIGNED_MEMBERS",
    "SPEC_VERSION",
    "SUITE_NAME",
    "HostInfo",
    "attestation_preimage",
    "build_bundle",
    "engram_version_of",
    "sha256_hex",
    "sorted_rows",
    "witness_sha256",
]
