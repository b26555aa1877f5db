"""Proven levels for readiness: which cartridge offers a level a verified credential proves.

Spec: lboel/acx@85f1358 SPEC.md §14.2 (a ``slot``'s ``minLevel`` is an *independently proven*
level, §10), §10.1/§10.3 (what a relying party checks), §17.6 ("a signed level is proven only
after credential signature, issuer, revocation, evidence, and ROM binding resolve");
docs/spec/acx-workflows.md §"Proven levels".

:func:`prove_levels` takes the roster's offers and level credentials (bytes, with a lookup for
their evidence envelopes) and verifies each credential with ``engram.level.verify_level`` against
the offer whose verified ROM digest it binds to, with that cartridge's publisher and signing key
for the self-issuance check, and issuer keys taken only from the issuers' trust registry. A
credential counts when every check concluded and held: proof, issuer published, not
self-issued, the gate re-derived, the ROM binding, the status bit read and clear, and the
evidence replayed, by a real run (a demo level, which the built-in simulated solver played, never
counts). Anything less (no status list to read, evidence not available, an issuer not
in the registry, a revoked bit, a tampered credential, a credential for another ROM) never
counts, and the outcome says why. A tampered cartridge is never given a level.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from engram.core.canonical import Json, JsonObject, parse_strict
from engram.core.clock import parse_instant
from engram.errors import CanonicalJsonError, InvalidRequest
from engram.level import Fetch, LevelReport, static_resolver, verify_level
from engram.level.internals import EvidenceLookup, registry_issuer_keys
from engram.trust import TrustRegistry, TrustState
from engram.workflow._ready import CartridgeOffer, LevelOutcome, ProvenLevel

MAX_CREDENTIAL_BYTES = 1 << 24
REQUIRED_CHECKS = frozenset(
    {"proof", "issuer", "self-issuance", "gate", "rom-binding", "status", "evidence"}
)
"""Every check that must have concluded ``ok`` for a level to count (§17.6)."""


@dataclass(frozen=True)
class LevelCredential:
    """One level credential as found: where it came from, its bytes, its evidence lookup."""

    source: str
    data: bytes
    evidence: EvidenceLookup | None = None


def prove_levels(
    offers: Sequence[CartridgeOffer],
    credentials: Iterable[LevelCredential],
    *,
    issuers: TrustRegistry,
    now: datetime,
    status_fetch: Fetch | None,
) -> tuple[list[CartridgeOffer], list[LevelOutcome]]:
    """``offers`` with the highest level each one's credentials prove, and every outcome."""
    outcomes: list[LevelOutcome] = []
    best: dict[int, ProvenLevel] = {}
    for credential in credentials:
        outcome, index = _prove_one(offers, credential, issuers, now, status_fetch)
        outcomes.append(outcome)
        if index is not None and outcome.level is not None:
            held = best.get(index)
            if held is None or outcome.level.acx_level > held.acx_level:
                best[index] = outcome.level
    proven = [
        replace(offer, level=best[i]) if i in best and _better(best[i], offer.level) else offer
        for i, offer in enumerate(offers)
    ]
    return proven, outcomes


def _better(new: ProvenLevel, old: ProvenLevel | None) -> bool:
    return old is None or new.acx_level > old.acx_level


def _prove_one(
    offers: Sequence[CartridgeOffer],
    credential: LevelCredential,
    issuers: TrustRegistry,
    now: datetime,
    status_fetch: Fetch | None,
) -> tuple[LevelOutcome, int | None]:
    def refused(reason: str, cartridge: str | None = None) -> tuple[LevelOutcome, None]:
        return LevelOutcome(credential.source, cartridge, None, reason), None

    if len(credential.data) > MAX_CREDENTIAL_BYTES:
        return refused(f"more than {MAX_CREDENTIAL_BYTES} bytes")
    try:
        document = parse_strict(credential.data)
    except CanonicalJsonError as e:
        return refused(f"not I-JSON: {e.message}")
    if not isinstance(document, dict):
        return refused("not a JSON object")
    bound = _bound_rom(document)
    matches = [
        (i, o)
        for i, o in enumerate(offers)
        if o.rom_digest == bound and o.trust is not TrustState.TAMPERED
    ]
    if bound is None:
        return refused("names no acx:cartridgeRomDigest")
    if not matches:
        return refused(f"binds to ROM {bound}, which no usable cartridge in the roster has")
    index, offer = matches[0]
    reasons: list[str] = []
    for key_report in _reports(document, credential, offer, issuers, now, status_fetch):
        why = _why_not(key_report)
        if why is None:
            return LevelOutcome(
                credential.source, offer.source, _level(key_report), "proven"
            ), index
        reasons.append(why)
    if not reasons:
        issuer = _issuer_id(document)
        return refused(
            f"the issuer {issuer} has no trusted key in the issuers registry", offer.source
        )
    return refused(reasons[0], offer.source)


def _reports(
    document: JsonObject,
    credential: LevelCredential,
    offer: CartridgeOffer,
    issuers: TrustRegistry,
    now: datetime,
    status_fetch: Fetch | None,
) -> Iterable[LevelReport]:
    """One full verification per issuer key the registry trusts for this issuer (usually one)."""
    issuer = _issuer_id(document)
    proof = document.get("proof")
    method = proof.get("verificationMethod") if isinstance(proof, dict) else None
    if not isinstance(issuer, str) or not isinstance(proof, dict) or not isinstance(method, str):
        return
    keyids = registry_issuer_keys(
        issuers, issuer_id=issuer, signed_at=_created(proof, now), now=now
    )
    for entry in issuers.keys:
        if entry.keyid not in keyids:
            continue
        yield verify_level(
            credential.data,
            # The did:web method is resolved to a key the issuers' registry publishes, never to
            # anything the credential itself carries.
            resolve=static_resolver({method: entry.public_key}),
            now=now,
            rom_digest=offer.rom_digest,
            publisher_id=offer.publisher_id,
            publisher_keyids=sorted(offer.publisher_keyids),
            published_issuer_keys=keyids,
            status_fetch=status_fetch,
            evidence=credential.evidence,
        )


def _why_not(report: LevelReport) -> str | None:
    """None when the level counts; else the first check that failed or did not conclude."""
    failed = report.failures()
    if failed:
        return f"{failed[0].check}: {failed[0].message}"
    if report.simulated:
        # A demo level verifies as what it says it is, but nothing from the cartridge ran:
        # it is not an independently proven level (§14.2, §10; issue 32).
        return "solver: a demo level (acx:simulatedSolver): nothing from the cartridge ran"
    concluded = {f.check for f in report.findings if f.ok is True}
    for check in sorted(REQUIRED_CHECKS - concluded):
        finding = next((f for f in report.findings if f.check == check), None)
        return f"{check}: {finding.message if finding else 'not checked'}"
    if report.revoked is not False or report.trusted is not True:
        return "status or issuer did not conclude"
    return None


def _level(report: LevelReport) -> ProvenLevel:
    assert report.credential is not None
    result = _tier_result(report.credential)
    tier, level = result.get("acx:careerTier"), result["acx:acxLevel"]
    assert isinstance(level, int | float | str)  # verify_level has checked the tier result
    return ProvenLevel(int(level), tier if isinstance(tier, str) else None)


def _tier_result(credential: Json | Mapping[str, Json]) -> JsonObject:
    subject = credential.get("credentialSubject") if isinstance(credential, dict) else None
    results = subject.get("result") if isinstance(subject, dict) else None
    for result in results if isinstance(results, list) else []:
        if isinstance(result, dict) and "acx:ratingMu" in result:
            return result
    return {}


def _bound_rom(document: JsonObject) -> str | None:
    bound = _tier_result(document).get("acx:cartridgeRomDigest")
    return bound if isinstance(bound, str) else None


def _issuer_id(document: JsonObject) -> Json:
    issuer = document.get("issuer")
    return issuer.get("id") if isinstance(issuer, dict) else issuer


def _created(proof: JsonObject, now: datetime) -> datetime:
    created = proof.get("created")
    try:
        return parse_instant(created) if isinstance(created, str) else now
    except InvalidRequest:
        return now


__all__ = ["MAX_CREDENTIAL_BYTES", "REQUIRED_CHECKS", "LevelCredential", "prove_levels"]
