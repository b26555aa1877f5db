"""The level credential: W3C VC 2.0 + Open Badges 3.0 ``OpenBadgeCredential`` with SPEC §10's
``acx:`` members (lboel/acx@85f1358 §10.1; docs/spec/acx-levels.md §2).

Correct by both standards and by the published ACX schema at once:

- VC 2.0: ``@context`` starts with ``https://www.w3.org/ns/credentials/v2``; ``type`` has
  ``VerifiableCredential``; ``id`` is a ``urn:uuid``; ``validFrom``; ``credentialStatus``;
- OB 3.0: ``type`` has ``OpenBadgeCredential``; ``name``; ``issuer`` is a Profile (``id``,
  ``type: ["Profile"]``, ``name``); the subject is an ``AchievementSubject`` with ``id``; the
  Achievement has ``id``, ``type``, ``name``, ``description``, ``criteria.narrative`` and three
  ResultDescriptions whose ids are URIs: the career-tier rubric (``RubricCriterionLevel``,
  listing the eight tiers as ``rubricCriterionLevel`` entries), the conservative rating 0-50
  (``ScaledScore``) and the held-out pass@1 (``Percent``); each Result names its
  ResultDescription's id, and ``achievedLevel`` is the URI of the achieved tier's level;
- ACX: the ``acx:`` members on the tier Result; μ and σ are decimal strings, as the published
  schema types them (full precision, so the gate and the level can be re-derived exactly).

A level issued by the built-in simulated solver (a demo: nothing from the cartridge ran) says so
in the signed credential itself: ``acx:simulatedSolver: true`` on the tier Result, and a name,
description and narrative that claim no re-execution (docs/spec/acx-levels.md §3).
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.core.canonical import Json, JsonObject
from engram.level._benchmark import Benchmark
from engram.level._rating import TIERS, Rating

VC_V2 = "https://www.w3.org/ns/credentials/v2"
OB_V3 = "https://purl.imsglobal.org/spec/ob/v3p0/context-3.0.3.json"
ACX_LEVEL = "https://acx.dev/ns/level/v1"
CONTEXT = (VC_V2, OB_V3, ACX_LEVEL)
SIMULATED_MEMBER = "acx:simulatedSolver"
TIER_FLOORS = {"intern": 0, "junior": 5, "mid": 10, "senior": 15, "staff": 20, "principal": 25,
               "distinguished": 30, "legend": 35}  # fmt: skip


def achievement_id(benchmark_id: str, version: str) -> str:
    return f"https://acx.dev/achievement/{benchmark_id}/{version}"


def tier_level_id(achievement: str, tier: str) -> str:
    return f"{achievement}#tier-{tier}"


def number_text(value: float) -> str:
    """A float as the shortest decimal that reads back as the same double."""
    return repr(float(value))


def level_credential(
    *,
    credential_id: str,
    issuer_id: str,
    issuer_name: str,
    subject_id: str,
    valid_from: str,
    benchmark: Benchmark,
    rating: Rating,
    level: int,
    tier: str,
    rom_digest: str,
    evidence: Sequence[JsonObject],
    status_list_url: str,
    status_index: int,
    valid_until: str | None = None,
    simulated: bool = False,
) -> JsonObject:
    """The unsigned credential (sign it with :func:`engram.level.internals.add_proof`);
    ``simulated`` for a level the built-in simulated solver played (a demo), which the credential
    then says."""
    achievement = achievement_id(benchmark.id, benchmark.version)
    tier_rd, rating_rd, pass_rd = (
        f"{achievement}#{n}" for n in ("career-tier", "rating", "passrate")
    )
    rubric: list[Json] = [
        {
            "id": tier_level_id(achievement, name),
            "type": ["RubricCriterionLevel"],
            "name": name,
            "level": str(TIER_FLOORS[name]),
            "description": f"acxLevel >= {TIER_FLOORS[name]}",
        }
        for name in TIERS
    ]
    result: JsonObject = {
        "type": ["Result"],
        "resultDescription": tier_rd,
        "achievedLevel": tier_level_id(achievement, tier),
        "acx:ratingMu": number_text(rating.mu),
        "acx:ratingSigma": number_text(rating.sigma),
        "acx:gamesPlayed": rating.games,
        "acx:acxLevel": level,
        "acx:careerTier": tier,
        "acx:cartridgeRomDigest": rom_digest,
        "acx:benchmarkId": benchmark.id,
        "acx:benchmarkVersion": benchmark.version,
        "acx:benchmarkDigest": benchmark.digest,
        "acx:heldOutSliceDigest": benchmark.held_out_slice_digest,
    }
    gate = "TrueSkill conservative rating R=mu-3sigma gated at sigma<1.5 over >=30 games."
    name = f"ACX level {level} ({tier}) on {benchmark.name}"
    description = (
        f"The provable character level of an Agent Cartridge on {benchmark.coordinate},"
        " earned by an independent verifier's re-execution of its ROM."
    )
    narrative = (
        f"Independently re-executed on a sealed held-out slice of {benchmark.name} "
        f"({benchmark.version}); {gate}"
    )
    if simulated:
        result[SIMULATED_MEMBER] = True
        name = f"DEMO, simulated solver: {name}"
        description = (
            f"A demonstration level on {benchmark.coordinate}: NOT a measurement of the"
            " cartridge. Nothing from the cartridge ran; a built-in simulated solver decided"
            " each task from a hash of the ROM digest."
        )
        narrative = (
            "DEMO ONLY, no re-execution: engram's built-in simulated solver decided each task of"
            f" a held-out slice of {benchmark.name} ({benchmark.version}) from a hash of the ROM"
            f" digest; nothing from the cartridge ran. {gate}"
        )
    credential: JsonObject = {
        "@context": list(CONTEXT),
        "id": credential_id,
        "type": ["VerifiableCredential", "OpenBadgeCredential"],
        "name": name,
        "issuer": {"id": issuer_id, "type": ["Profile"], "name": issuer_name},
        "validFrom": valid_from,
        "credentialSubject": {
            "id": subject_id,
            "type": ["AchievementSubject"],
            "achievement": {
                "id": achievement,
                "type": ["Achievement"],
                "name": f"ACX Level — {benchmark.name}",
                "description": description,
                "criteria": {"narrative": narrative},
                "resultDescription": [
                    {
                        "id": tier_rd,
                        "type": ["ResultDescription"],
                        "name": "Career Tier",
                        "resultType": "RubricCriterionLevel",
                        "rubricCriterionLevel": rubric,
                    },
                    {
                        "id": rating_rd,
                        "type": ["ResultDescription"],
                        "name": "Conservative rating (0-50)",
                        "resultType": "ScaledScore",
                        "valueMin": "0",
                        "valueMax": "50",
                    },
                    {
                        "id": pass_rd,
                        "type": ["ResultDescription"],
                        "name": "Held-out pass@1",
                        "resultType": "Percent",
                        "valueMin": "0",
                        "valueMax": "100",
                    },
                ],
            },
            "result": [
                result,
                {
                    "type": ["Result"],
                    "resultDescription": rating_rd,
                    "value": f"{rating.conservative:.2f}",
                },
                {
                    "type": ["Result"],
                    "resultDescription": pass_rd,
                    "value": f"{100 * rating.pass_rate:.1f}",
                },
            ],
        },
        "evidence": list(evidence),
        "credentialStatus": {
            "id": f"{status_list_url}#{status_index}",
            "type": "BitstringStatusListEntry",
            "statusPurpose": "revocation",
            "statusListIndex": str(status_index),
            "statusListCredential": status_list_url,
        },
    }
    if valid_until is not None:
        credential["validUntil"] = valid_until
    return credential


__all__ = [
    "ACX_LEVEL",
    "CONTEXT",
    "OB_V3",
    "SIMULATED_MEMBER",
    "TIER_FLOORS",
    "VC_V2",
    "achievement_id",
    "level_credential",
    "number_text",
    "tier_level_id",
]
