"""``verify_level``: every check a relying party runs on a level credential, each reported.

SPEC §10.1/§10.3 (lboel/acx@85f1358) and docs/spec/acx-levels.md §4. A credential is read as
bytes (strict I-JSON) and checked, in this order, each check a :class:`Finding`:

1. conformance: the published ACX schema, VC 2.0 and OB 3.0 (:mod:`engram.level._ob3`), one
   finding per departure, so a foreign credential is described exactly, never silently taken;
2. ``proof``: the ``eddsa-jcs-2022`` proof verifies under a key the issuer controls (the
   verification method is ``<issuer.id>#...``);
3. ``issuer``: the proof key is a published issuer key (:func:`issuer_key_published`, fed from
   the ACX trust registry);
4. ``self-issuance``: the issuer is not the subject's controller;
5. ``gate``: re-derived from the recorded rating: σ < 1.5, games ≥ 30, acxLevel = round-half-up
   (μ − 3σ), the tier of that level, and ``achievedLevel`` naming that tier;
6. ``rom-binding``: ``acx:cartridgeRomDigest`` equals the ROM ``manifest_hash`` given;
7. ``status``: the Bitstring Status List bit, failing closed on every defined error;
8. ``evidence``: each linked DSSE envelope that can be read verifies under the issuer key, is a
   trajectory Statement for this ROM and benchmark, the count equals ``gamesPlayed``, and
   replaying TrueSkill over them gives the recorded μ and σ;
9. ``solver``: a level the built-in simulated solver played (``acx:simulatedSolver``) is
   reported as a demo (:attr:`LevelReport.simulated`); it is informational, not a failure, so a
   demo credential still verifies as what it says it is.

``verified`` is true only when nothing failed and the proof and the status both concluded.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime

from engram.core.canonical import Json, JsonObject, canonicalize, parse_strict
from engram.core.clock import parse_instant
from engram.core.findings import Finding, verdict
from engram.errors import CanonicalJsonError, EngramError, InvalidRequest
from engram.level._credential import SIMULATED_MEMBER
from engram.level._errors import ProofInvalid, StatusCheckError
from engram.level._evidence import check_evidence, envelope_file_name, ni_uri
from engram.level._multikey import digest_from_multibase
from engram.level._ob3 import finding_wire, schema_departures, standard_departures
from engram.level._proof import KeyResolver, VerifiedProof, verify_proof
from engram.level._rating import Game, Gate, career_tier, level_for, rate
from engram.level._status import Fetch, check_status
from engram.level._trust import issuer_key_published, self_issued

MAX_CREDENTIAL_BYTES = 1 << 24
EvidenceLookup = Callable[[str], bytes | None]
"""An ``acx:dsseEnvelope`` URI -> the envelope's bytes, or None when it cannot be had."""


@dataclass(frozen=True)
class LevelReport:
    findings: tuple[Finding, ...]
    credential: Mapping[str, Json] | None
    revoked: bool | None
    trusted: bool | None

    @property
    def verified(self) -> bool:
        failed = any(f.ok is False for f in self.findings)
        concluded = {f.check for f in self.findings if f.ok is True}
        return not failed and {"proof", "status"} <= concluded

    def failures(self, *checks: str) -> list[Finding]:
        return [f for f in self.findings if f.ok is False and (not checks or f.check in checks)]

    @property
    def simulated(self) -> bool:
        """The credential says the built-in simulated solver played it: a demo level."""
        subject = self.credential.get("credentialSubject") if self.credential else None
        result = _tier_result(subject) if isinstance(subject, Mapping) else {}
        return result.get(SIMULATED_MEMBER) is True

    def departures(self) -> list[Finding]:
        """Departures from the standards and the published schema."""
        return self.failures("acx-schema", "vc2", "ob3")

    def to_wire(self) -> JsonObject:
        return {
            "verified": self.verified,
            "trusted": self.trusted,
            "revoked": self.revoked,
            "simulated": self.simulated,
            "findings": [finding_wire(f) for f in self.findings],
        }


def verify_level(
    data: bytes,
    *,
    resolve: KeyResolver,
    now: datetime,
    rom_digest: str | None = None,
    publisher_id: str | None = None,
    publisher_keyids: Collection[str] = (),
    published_issuer_keys: Collection[str] | None = None,
    status_fetch: Fetch | None = None,
    evidence: EvidenceLookup | None = None,
    gate: Gate = Gate(),  # noqa: B008 - a frozen value
) -> LevelReport:
    """Check a level credential (module docstring); never raises for a bad credential."""
    findings: list[Finding] = []
    if len(data) > MAX_CREDENTIAL_BYTES:
        return LevelReport((verdict("json", False, "$", "credential too large"),), None, None, None)
    try:
        credential = parse_strict(data)
    except CanonicalJsonError as e:
        return LevelReport((verdict("json", False, "$", e.message),), None, None, None)
    if not isinstance(credential, dict):
        return LevelReport((verdict("json", False, "$", "not a JSON object"),), None, None, None)
    findings += schema_departures(credential)
    findings += standard_departures(credential)
    issuer = credential.get("issuer")
    issuer_id = issuer.get("id") if isinstance(issuer, Mapping) else issuer
    subject = credential.get("credentialSubject")
    subject = subject if isinstance(subject, Mapping) else {}
    result = _tier_result(subject)
    proof = _proof(credential, issuer_id, resolve, findings)
    trusted: bool | None = None
    if proof is None:
        findings.append(verdict("issuer", None, "$.issuer", "no verified proof key to look up"))
    elif published_issuer_keys is None:
        findings.append(
            verdict("issuer", None, "$.issuer", "no trust registry given: issuer key not looked up")
        )
    else:
        trusted = issuer_key_published(proof.key, published_issuer_keys)
        message = f"issuer key {proof.key.key_id} " + (
            "is published" if trusted else "is not in the trust registry"
        )
        findings.append(verdict("issuer", trusted, "$.proof.verificationMethod", message))
    subject_id = subject.get("id")
    reasons = self_issued(
        issuer_id=str(issuer_id),
        subject_id=str(subject_id),
        issuer_key=proof.key if proof else None,
        publisher_id=publisher_id,
        publisher_keyids=publisher_keyids,
    )
    findings += [verdict("self-issuance", False, "$.issuer.id", r) for r in reasons] or [
        verdict("self-issuance", True, "$.issuer.id", "the issuer is not the subject's controller")
    ]
    findings += _gate(result, gate)
    if rom_digest is not None:
        bound = result.get("acx:cartridgeRomDigest")
        findings.append(
            verdict(
                "rom-binding",
                bound == rom_digest,
                "$.credentialSubject.result[0]['acx:cartridgeRomDigest']",
                "bound to the ROM digest" if bound == rom_digest else "ROM digest binding mismatch",
            )
        )
    revoked = _status(credential, issuer_id, status_fetch, resolve, now, findings)
    findings += _validity(credential, now)
    findings += _evidence(credential, result, proof, evidence)
    if result.get(SIMULATED_MEMBER) is True:
        findings.append(
            verdict(
                "solver",
                None,
                f"$.credentialSubject.result[0]['{SIMULATED_MEMBER}']",
                "DEMO level: the built-in simulated solver played it; nothing from the cartridge"
                " ran, so it measures nothing",
            )
        )
    return LevelReport(tuple(findings), credential, revoked, trusted)


def _tier_result(subject: Mapping[str, Json]) -> Mapping[str, Json]:
    results = subject.get("result")
    for result in results if isinstance(results, list) else []:
        if isinstance(result, Mapping) and "acx:ratingMu" in result:
            return result
    return {}


def _proof(
    credential: Mapping[str, Json], issuer_id: Json, resolve: KeyResolver, findings: list[Finding]
) -> VerifiedProof | None:
    try:
        proof = verify_proof(credential, resolve)
    except ProofInvalid as e:
        findings.append(verdict("proof", False, "$.proof", e.message))
        return None
    if proof.proof_purpose != "assertionMethod":
        findings.append(
            verdict("proof", False, "$.proof.proofPurpose", "proofPurpose is not assertionMethod")
        )
        return None
    if not isinstance(issuer_id, str) or not proof.verification_method.startswith(issuer_id + "#"):
        findings.append(
            verdict(
                "proof",
                False,
                "$.proof.verificationMethod",
                f"{proof.verification_method} is not a key of the issuer {issuer_id}",
            )
        )
        return None
    findings.append(
        verdict(
            "proof",
            True,
            "$.proof",
            f"eddsa-jcs-2022 proof by {proof.verification_method} verifies",
        )
    )
    return proof


def _number(value: Json) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _gate(result: Mapping[str, Json], gate: Gate) -> list[Finding]:
    path = "$.credentialSubject.result[0]"
    mu, sigma = _number(result.get("acx:ratingMu")), _number(result.get("acx:ratingSigma"))
    games = result.get("acx:gamesPlayed")
    if mu is None or sigma is None or not isinstance(games, int) or isinstance(games, bool):
        return [
            verdict(
                "gate", False, path, "no readable acx:ratingMu, acx:ratingSigma, acx:gamesPlayed"
            )
        ]
    out = [verdict("gate", False, path, f) for f in gate.failures(sigma, games)]
    level = level_for(mu - 3 * sigma)
    tier = career_tier(level)
    if result.get("acx:acxLevel") != level:
        out.append(
            verdict(
                "gate",
                False,
                f"{path}['acx:acxLevel']",
                f"acx:acxLevel {result.get('acx:acxLevel')!r} is not round(mu - 3 sigma) = {level}",
            )
        )
    if result.get("acx:careerTier") != tier:
        out.append(
            verdict(
                "gate",
                False,
                f"{path}['acx:careerTier']",
                f"acx:careerTier {result.get('acx:careerTier')!r} is not {tier} (level {level})",
            )
        )
    achieved = result.get("achievedLevel")
    if not isinstance(achieved, str) or not (
        achieved == tier or achieved.endswith(f"#tier-{tier}")
    ):
        out.append(
            verdict(
                "gate",
                False,
                f"{path}.achievedLevel",
                f"achievedLevel {achieved!r} does not name tier {tier}",
            )
        )
    return out or [
        verdict(
            "gate",
            True,
            path,
            f"sigma {sigma:.3f} < {gate.sigma_max}, games {games} >= {gate.min_games},"
            f" level {level} {tier}",
        )
    ]


def _status(
    credential: Mapping[str, Json],
    issuer_id: Json,
    fetch: Fetch | None,
    resolve: KeyResolver,
    now: datetime,
    findings: list[Finding],
) -> bool | None:
    entry = credential.get("credentialStatus")
    if not isinstance(entry, Mapping):
        findings.append(
            verdict(
                "status",
                False,
                "$.credentialStatus",
                "no BitstringStatusListEntry: the level is not revocable",
            )
        )
        return None
    purpose = entry.get("statusPurpose")
    if purpose != "revocation":
        # SPEC §10.1: the entry MUST be a revocation entry; one for another purpose leaves the
        # level unrevocable (found by the tamper suite: a set suspension bit read as "clear").
        findings.append(
            verdict(
                "status",
                False,
                "$.credentialStatus.statusPurpose",
                f"statusPurpose {purpose!r} is not revocation: the level is not revocable",
            )
        )
        return None
    if fetch is None:
        findings.append(
            verdict("status", None, "$.credentialStatus", "status list not dereferenced")
        )
        return None
    try:
        result = check_status(
            entry,
            fetch,
            resolve,
            now=now,
            expected_issuer=issuer_id if isinstance(issuer_id, str) else None,
        )
    except StatusCheckError as e:
        findings.append(verdict("status", False, "$.credentialStatus", e.message))
        return None
    if result.status:
        # A set bit is never "clear", whatever its purpose (revocation is the only one reached).
        findings.append(
            verdict(
                "status",
                False,
                "$.credentialStatus",
                f"credential revoked (status bit {result.index} set)",
            )
        )
        return True
    findings.append(
        verdict(
            "status", True, "$.credentialStatus", f"{result.purpose} bit {result.index} is clear"
        )
    )
    return False


def _validity(credential: Mapping[str, Json], now: datetime) -> list[Finding]:
    out = []
    for name, later in (("validFrom", False), ("validUntil", True)):
        value = credential.get(name)
        if not isinstance(value, str):
            continue
        try:
            moment = parse_instant(value)
        except InvalidRequest:
            continue  # reported as a vc2 departure
        if (later and now > moment) or (not later and now < moment):
            out.append(verdict("validity", False, f"$.{name}", f"not valid now ({name} {value})"))
    return out


def _content_address_mismatch(
    item: Json, link: Json, envelope: Json, trajectory_sha256: str
) -> str | None:
    """Why the envelope read is not the one the evidence entry names by digest, else None.

    The entry names its trajectory by digest twice (``id`` as ``ni:///sha-256;...`` and
    ``acx:digestMultibase``) and its envelope by the link (an ``ni:`` name or a
    ``<hex>.dsse.json`` URL); each name given must be the digest of what was read, so another
    of the issuer's signed envelopes cannot stand in for the one the credential links (found
    by the tamper suite, issue 15). The envelope's digest is over its RFC 8785 bytes.
    """
    trajectory = bytes.fromhex(trajectory_sha256)
    names = [item.get("acx:digestMultibase")] if isinstance(item, Mapping) else []
    for name in names:
        if not isinstance(name, str):
            continue
        try:
            named = digest_from_multibase(name)
        except EngramError:
            return "acx:digestMultibase is not a readable digest"
        if named != trajectory:
            return "acx:digestMultibase is not the digest of the trajectory the envelope carries"
    ident = item.get("id") if isinstance(item, Mapping) else None
    if isinstance(ident, str) and ident.startswith(_NI) and ident != ni_uri(trajectory):
        return "the evidence id is not the ni: name of the trajectory the envelope carries"
    if isinstance(link, str):
        envelope_hex = hashlib.sha256(canonicalize(envelope)).hexdigest()
        file_name = envelope_file_name(link)
        if file_name is not None and file_name != f"{envelope_hex}.dsse.json":
            return "the envelope read is not the one acx:dsseEnvelope names by digest"
    return None


_NI = "ni:///sha-256;"


def _evidence(
    credential: Mapping[str, Json],
    result: Mapping[str, Json],
    proof: VerifiedProof | None,
    lookup: EvidenceLookup | None,
) -> list[Finding]:
    items = credential.get("evidence")
    if not isinstance(items, list) or not items:
        return [verdict("evidence", False, "$.evidence", "no evidence linked")]
    if proof is None:
        return [verdict("evidence", None, "$.evidence", "not checked: no verified issuer key")]
    out: list[Finding] = []
    games: list[Game] = []
    unread = 0
    for index, item in enumerate(items):
        path = f"$.evidence[{index}]"
        link = item.get("acx:dsseEnvelope") if isinstance(item, Mapping) else None
        envelope: Json = link if isinstance(link, Mapping) else None
        if isinstance(link, str) and lookup is not None:
            raw = lookup(link)
            if raw is not None:
                try:
                    envelope = parse_strict(raw)
                except CanonicalJsonError as e:
                    out.append(
                        verdict("evidence", False, path, f"envelope is not I-JSON: {e.message}")
                    )
                    continue
        if envelope is None:
            unread += 1
            continue
        if not isinstance(envelope, dict):
            out.append(
                verdict("evidence", False, path, "evidence does not verify: not a JSON object")
            )
            continue
        try:
            checked = check_evidence(envelope, proof.key)
        except (EngramError, ValueError, KeyError, TypeError) as e:
            message = e.message if isinstance(e, EngramError) else str(e)
            out.append(verdict("evidence", False, path, f"evidence does not verify: {message}"))
            continue
        mismatch = _content_address_mismatch(item, link, envelope, checked.trajectory_sha256)
        if mismatch is not None:
            out.append(verdict("evidence", False, path, mismatch))
            continue
        if checked.rom_digest != result.get(
            "acx:cartridgeRomDigest"
        ) or checked.benchmark_digest != result.get("acx:benchmarkDigest"):
            out.append(
                verdict("evidence", False, path, "the trajectory is for another ROM or benchmark")
            )
            continue
        games.append(Game(checked.difficulty, checked.passed))
    if unread:
        out.append(
            verdict(
                "evidence",
                None,
                "$.evidence",
                f"{unread} of {len(items)} envelopes not available to check",
            )
        )
    if out or unread:
        return out
    expected = result.get("acx:gamesPlayed")
    if len(games) != expected:
        return [
            verdict(
                "evidence",
                False,
                "$.evidence",
                f"{len(games)} trajectories for gamesPlayed {expected}",
            )
        ]
    replay = rate(games)
    mu, sigma = _number(result.get("acx:ratingMu")), _number(result.get("acx:ratingSigma"))
    if (
        mu is None
        or sigma is None
        or abs(replay.mu - mu) > 1e-6
        or abs(replay.sigma - sigma) > 1e-6
    ):
        return [
            verdict(
                "evidence",
                False,
                "$.evidence",
                f"replaying the evidence gives mu {replay.mu:.6f} sigma {replay.sigma:.6f},"
                " not the recorded rating",
            )
        ]
    return [
        verdict(
            "evidence",
            True,
            "$.evidence",
            f"{len(games)} signed trajectories replay to the recorded rating",
        )
    ]


__all__ = ["EvidenceLookup", "LevelReport", "verify_level"]
