"""Verify a certification bundle: recompute everything, resolve the key, apply the rules.

Spec: OpenWOP v2 Conformance §"Signature and attribution" (a gate distinguishes *no discovery
document was read*, *read and the key is not published*, *the attestation does not verify*),
§"Certification" (no certification with a blocked row) and §"Canonical JSON" (a verifier that
meets non-I-JSON it must re-canonicalise fails). Decisions: docs/spec/conformance-bundle.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import httpx
import jsonschema

from engram.conformance import _wire as wire
from engram.conformance._bundle import (
    attestation_preimage,
    engram_version_of,
    sha256_hex,
    witness_sha256,
)
from engram.conformance._bundle_schema import BUNDLE_SCHEMA, UNSIGNED
from engram.conformance._ledger import Ledger
from engram.conformance._results import (
    BADGES,
    Row,
    assertion_count,
    badge,
    certifies,
    non_pass,
    tiers_of,
    totals,
)
from engram.core.canonical import Json, JsonObject, parse_strict
from engram.core.encoding import b64url_decode
from engram.core.keys import PublicKey
from engram.errors import EngramError, InvalidRequest, RemoteError
from engram.fetch import Fetcher, FetchError, party_of


class Outcome(StrEnum):
    """What a verifier concluded, worst first; only ``certified`` exits 0."""

    MALFORMED = "malformed"
    WITNESS_MISMATCH = "witness-mismatch"
    INCONSISTENT = "inconsistent"
    DISCOVERY_MISMATCH = "discovery-mismatch"
    ATTESTATION_INVALID = "attestation-invalid"
    NO_DISCOVERY = "no-discovery"
    KEY_NOT_PUBLISHED = "key-not-published"
    NOT_CERTIFIED = "not-certified"
    CERTIFIED = "certified"


@dataclass
class VerifyReport:
    outcome: Outcome
    message: str
    key_id: str | None = None
    derived_badge: str = "none"
    notes: list[str] = field(default_factory=list)
    unsigned: JsonObject = field(default_factory=dict)
    """The members no check covers (neither signed nor re-derived), as the bundle carries them:
    shown, never vouched for (docs/spec/conformance-bundle.md, "What verify covers")."""

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.CERTIFIED

    def to_wire(self) -> JsonObject:
        return {
            "outcome": self.outcome.value,
            "message": self.message,
            "keyId": self.key_id,
            "derivedBadge": self.derived_badge,
            "notes": [*self.notes],
            "unsigned": self.unsigned,
        }


MAX_DISCOVERY_BYTES = 1 << 20
"""A discovery document is a few KiB; a larger answer is refused unread past this."""


def read_discovery(source: str, transport: httpx.BaseTransport | None = None) -> Json:
    """A discovery document from a URL (a provider base URL or the document's own) or a file."""
    if source.startswith(("http://", "https://")):
        url = source if "/.well-known/" in source else source.rstrip("/") + "/.well-known/engram"
        # The fetch discipline (docs/spec/limits.md §1): a deadline, a byte cap, one line.
        try:
            with (
                Fetcher(party_of(url), transport=transport) as fetcher,
                fetcher.stream("GET", url, headers={"Accept": "application/json"}) as response,
            ):
                if response.status_code != 200:
                    raise OSError(f"GET {url}: HTTP {response.status_code}")
                data = fetcher.read(response, MAX_DISCOVERY_BYTES, "the answer")
        except FetchError as e:
            raise RemoteError(f"GET {url}: {e.message}") from e
    else:
        data = Path(source).read_bytes()
    document: Json = parse_strict(data)
    return document


@dataclass(frozen=True)
class _Bundle:
    """The members of a schema-checked bundle the verifier reads, narrowed once."""

    whole: JsonObject
    rows: list[JsonObject]
    key_id: str
    public_key: str
    signature: str
    witness: str
    discovery_document: Json
    discovery_sha256: str
    engram_version: str
    claim: JsonObject
    tier: int

    @classmethod
    def of(cls, bundle: JsonObject) -> _Bundle:
        signature = wire.obj(wire.path(bundle, "signature"), "$.signature")
        claim = wire.obj(wire.path(bundle, "claim"), "$.claim")
        return cls(
            whole=bundle,
            rows=wire.objects(wire.path(bundle, "results.requirements"), "$.results.requirements"),
            key_id=wire.text(signature.get("keyId"), "$.signature.keyId"),
            public_key=wire.text(signature.get("publicKey"), "$.signature.publicKey"),
            signature=wire.text(signature.get("value"), "$.signature.value"),
            witness=wire.text(wire.path(bundle, "witnessSha256"), "$.witnessSha256"),
            discovery_document=wire.path(bundle, "discovery.document"),
            discovery_sha256=wire.text(wire.path(bundle, "discovery.sha256"), "$.discovery.sha256"),
            engram_version=wire.text(
                wire.path(bundle, "discovery.engramVersion"), "$.discovery.engramVersion"
            ),
            claim=claim,
            tier=wire.integer(claim.get("tier"), "$.claim.tier"),
        )


def verify_bundle(
    data: bytes,
    ledger: Ledger,
    *,
    discovery: Json = None,
    discovery_error: str | None = None,
) -> VerifyReport:
    """Check ``data`` (the bundle file's bytes) against ``discovery`` (None: none was read)."""
    try:
        parsed: Json = parse_strict(data)
    except EngramError as e:
        # e.message reads "not I-JSON: <reason> at <position> (...)".
        return VerifyReport(Outcome.MALFORMED, f"the bundle is {e.message}")
    problems = list(jsonschema.Draft202012Validator(BUNDLE_SCHEMA).iter_errors(parsed))
    if problems:
        first = min(problems, key=lambda p: list(map(str, p.absolute_path)))
        where = "/".join(map(str, first.absolute_path)) or "(root)"
        return VerifyReport(Outcome.MALFORMED, f"not a bundle: {where}: {first.message}")
    try:
        bundle = _Bundle.of(wire.obj(parsed, "$"))
        rows = [Row.from_wire(r) for r in bundle.rows]
    except InvalidRequest as e:  # a shape the schema let through: still not a bundle
        return VerifyReport(Outcome.MALFORMED, f"not a bundle: {e.message}")
    tiers = tiers_of(ledger.select(party="provider"))
    report = VerifyReport(Outcome.CERTIFIED, "", key_id=bundle.key_id)
    report.derived_badge = badge(rows, tiers)
    report.unsigned = {name: wire.at(bundle.whole, name) for name in UNSIGNED}

    if witness_sha256(bundle.rows) != bundle.witness:
        report.outcome = Outcome.WITNESS_MISMATCH
        report.message = "witnessSha256 does not match the rows"
        return report
    inconsistency = _inconsistency(bundle, rows, ledger)
    if inconsistency:
        report.outcome, report.message = Outcome.INCONSISTENT, inconsistency
        return report
    if sha256_hex(bundle.discovery_document) != bundle.discovery_sha256:
        report.outcome = Outcome.DISCOVERY_MISMATCH
        report.message = "discovery.sha256 does not match the captured discovery document"
        return report
    if engram_version_of(bundle.discovery_document) != bundle.engram_version:
        report.outcome = Outcome.INCONSISTENT
        report.message = (
            "discovery.engramVersion is not the engram_version of the captured discovery document"
        )
        return report
    carried_ok = _attests(bundle, bundle.public_key)
    carried_id = _key_id_of(bundle.public_key)
    if carried_ok is not None or carried_id != bundle.key_id:
        report.outcome = Outcome.ATTESTATION_INVALID
        report.message = carried_ok or "signature.keyId does not name signature.publicKey"
        return report

    if discovery is None:
        report.outcome = Outcome.NO_DISCOVERY
        report.message = (
            "no discovery document was read"
            + (f" ({discovery_error})" if discovery_error else "")
            + ": the signature attests integrity only, not who signed"
        )
        return report
    published = _published_key(discovery, bundle.key_id)
    if published is None:
        report.outcome = Outcome.KEY_NOT_PUBLISHED
        report.message = (
            f"the discovery document was read and does not publish {bundle.key_id} "
            "in signingKeys: the bundle is not attributable to the host"
        )
        return report
    problem = _attests(bundle, published)
    if problem is not None:
        report.outcome = Outcome.ATTESTATION_INVALID
        report.message = f"under the published key: {problem}"
        return report
    if isinstance(discovery, dict) and sha256_hex(discovery) != bundle.discovery_sha256:
        report.notes.append("the discovery document read differs from the one captured")

    claimed = bundle.tier
    if certifies(rows, tiers, claimed):
        report.message = f"certified at {BADGES[claimed]} (tier {claimed})"
        return report
    report.outcome = Outcome.NOT_CERTIFIED
    blocked = [r.id for r in rows if r.result == "blocked"]
    if blocked:
        report.message = f"not certified: blocked rows {', '.join(blocked)}"
    else:
        short = [
            r.id for r in rows if r.result != "executed-pass" and tiers.get(r.id, 9) <= claimed
        ]
        report.message = (
            f"not certified at {BADGES[claimed]}: not executed-pass (skipped never counts): "
            + ", ".join(short or ["requirements missing from the bundle"])
        )
    return report


def _attests(bundle: _Bundle, public_key: str) -> str | None:
    """None when the signature verifies under ``public_key``; else why not."""
    try:
        key = PublicKey.from_b64url(public_key)
        key.verify(b64url_decode(bundle.signature), attestation_preimage(bundle.whole))
    except EngramError as e:
        return f"the attestation does not verify: {e.message}"
    return None


def _published_key(discovery: Json, key_id: str) -> str | None:
    """The public key ``signingKeys[]`` publishes under ``key_id``.

    An entry names its key as ``keyId`` (OpenWOP) or ``kid`` (Engram key lists) and carries it
    as ``publicKey`` or ``public_key``; an entry whose public key's own key id (``ed25519:`` +
    SHA-256 of its DER) equals ``key_id`` also matches, whatever its label.
    """
    keys = discovery.get("signingKeys") if isinstance(discovery, dict) else None
    for entry in keys if isinstance(keys, list) else []:
        if not isinstance(entry, dict):
            continue
        public = entry.get("publicKey", entry.get("public_key"))
        if not isinstance(public, str):
            continue
        if key_id in (entry.get("keyId"), entry.get("kid")) or _key_id_of(public) == key_id:
            return public
    return None


def _key_id_of(public: str) -> str | None:
    try:
        return PublicKey.from_b64url(public).key_id
    except EngramError:
        return None


def _inconsistency(bundle: _Bundle, rows: list[Row], ledger: Ledger) -> str | None:
    """Anything outside the attestation that does not re-derive from the rows."""
    ids = [r.id for r in rows]
    if len(set(ids)) != len(ids):
        return "a requirement id appears twice in results.requirements"
    unknown = sorted(set(ids) - ledger.ids)
    if unknown:
        return f"rows name ids not in this suite's ledger: {', '.join(unknown)}"
    if totals(rows) != wire.at(bundle.whole, "results.totals"):
        return "results.totals do not match the rows"
    if assertion_count(rows) != wire.at(bundle.whole, "assertionCount"):
        return "assertionCount does not match the rows"
    if non_pass(rows) != wire.at(bundle.whole, "detail.nonPass"):
        return "detail.nonPass does not list exactly the rows that did not pass"
    claim = bundle.claim
    if claim.get("badge") != BADGES.get(bundle.tier):
        return "claim.badge does not name claim.tier"
    if claim.get("certified") != certifies(
        rows, tiers_of(ledger.select(party="provider")), bundle.tier
    ):
        return "claim.certified does not follow from the rows"
    return None


__all__ = ["Outcome", "VerifyReport", "read_discovery", "verify_bundle"]
