"""Conformance of a credential to VC 2.0, Open Badges 3.0 and the published ACX level schema.

No JSON Schema for OB 3.0 can be vendored here (1EdTech publishes draft 2019-09 schemas at
purl.imsglobal.org), so the OB 3.0 data-model rules a level credential meets are written out
below, one finding per departure, each naming the JSON path (docs/spec/acx-levels.md §2):
W3C VC Data Model 2.0 §4 (``@context`` first item, ``type``, ``issuer``, ``validFrom``), OB 3.0
§8 (OpenBadgeCredential ``id``/``name``/``issuer`` Profile/``validFrom``; AchievementSubject
``id`` or ``identifier``; Achievement ``id``/``type``/``name``/``description``/``criteria``;
ResultDescription ``id``/``type``/``name``/``resultType``; Result ``resultDescription`` = a
ResultDescription id and ``achievedLevel`` = the URI of one of its RubricCriterionLevels).
The published ACX schema (``_schemas/acx-level-credential.published.schema.json``, copied from
lboel/acx@85f1358) is applied as it is, so its own departures are reported too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import TypeGuard

from jsonschema import Draft202012Validator

from engram.core.bounds import check_shape
from engram.core.canonical import Json, JsonObject, parse_strict
from engram.core.clock import parse_instant
from engram.core.findings import Finding, verdict
from engram.errors import InvalidRequest
from engram.level._credential import OB_V3, VC_V2

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


FINDING_MEMBERS = {"check": "rule", "ok": "ok", "path": "path", "message": "message"}
"""A level finding in JSON: ``{check, ok, path, message}``, ``ok`` True (held), False (broken)
or None (could not be checked); the finding is engram's one type (``engram.core.findings``)."""


def finding_wire(found: Finding) -> JsonObject:
    return found.to_wire(**FINDING_MEMBERS)


@cache
def published_schema() -> JsonObject:
    raw = (
        resources.files("engram.level")
        .joinpath("_schemas", "acx-level-credential.published.schema.json")
        .read_bytes()
    )
    value = parse_strict(raw)
    assert isinstance(value, dict)
    return value


def schema_departures(credential: Mapping[str, Json]) -> list[Finding]:
    check_shape(credential, "the credential")
    validator = Draft202012Validator(published_schema())
    errors = sorted(validator.iter_errors(credential), key=lambda e: (e.json_path, e.message))
    return [verdict("acx-schema", False, e.json_path, e.message) for e in errors]


def _is_uri(value: Json) -> TypeGuard[str]:
    return isinstance(value, str) and bool(_URI.match(value))


def _array(value: Json) -> list[Json]:
    """A list member, or nothing to walk: a credential is untrusted input."""
    return value if isinstance(value, list) else []


def _types(value: Json) -> list[Json]:
    return value if isinstance(value, list) else [value]


def standard_departures(credential: Mapping[str, Json]) -> list[Finding]:
    """Every departure from VC 2.0 and OB 3.0 (module docstring), in document order."""
    out: list[Finding] = []

    def vc(path: str, message: str) -> None:
        out.append(verdict("vc2", False, path, message))

    def ob(path: str, message: str) -> None:
        out.append(verdict("ob3", False, path, message))

    context = credential.get("@context")
    if not isinstance(context, list) or not context or context[0] != VC_V2:
        vc("$['@context']", f"the first @context item must be {VC_V2}")
    elif not any(
        isinstance(c, str) and c.startswith("https://purl.imsglobal.org/spec/ob/v3p0/context-3.0")
        for c in context
    ):
        ob("$['@context']", f"no Open Badges 3.0 context (e.g. {OB_V3})")
    types = _types(credential.get("type"))
    if "VerifiableCredential" not in types:
        vc("$.type", "type must include VerifiableCredential")
    if not {"OpenBadgeCredential", "AchievementCredential"} & set(types):
        ob("$.type", "type must include OpenBadgeCredential")
    if "id" not in credential:
        ob("$.id", "an OpenBadgeCredential must have an id (a URI)")
    elif not _is_uri(credential["id"]):
        vc("$.id", f"id {credential['id']!r} is not a URI")
    if not isinstance(credential.get("name"), str):
        ob("$.name", "an OpenBadgeCredential must have a name")
    issuer = credential.get("issuer")
    if isinstance(issuer, str):
        if not _is_uri(issuer):
            vc("$.issuer", "issuer is not a URI")
        ob("$.issuer", "the issuer must be a Profile object (id, type Profile)")
    elif isinstance(issuer, Mapping):
        if not _is_uri(issuer.get("id")):
            vc("$.issuer.id", "issuer.id must be a URI")
        if "Profile" not in _types(issuer.get("type")):
            ob("$.issuer.type", "issuer.type must include Profile")
    else:
        vc("$.issuer", "a credential must have an issuer")
    for name in ("validFrom", "validUntil"):
        if name not in credential:
            if name == "validFrom":
                ob("$.validFrom", "an OpenBadgeCredential must have validFrom")
            continue
        stamp = credential[name]
        try:
            if not isinstance(stamp, str):
                raise InvalidRequest(f"{name} is not a string")
            parse_instant(stamp)
        except InvalidRequest:
            vc(f"$.{name}", f"{name} is not a dateTimeStamp")
    subject = credential.get("credentialSubject")
    if not isinstance(subject, Mapping):
        vc("$.credentialSubject", "a credential must have a credentialSubject object")
        return out
    if "id" not in subject and "identifier" not in subject:
        ob("$.credentialSubject", "the AchievementSubject needs an id or an identifier")
    if "AchievementSubject" not in _types(subject.get("type")):
        ob("$.credentialSubject.type", "credentialSubject.type must include AchievementSubject")
    achievement = subject.get("achievement")
    descriptions: dict[str, Mapping[str, Json]] = {}
    if not isinstance(achievement, Mapping):
        ob("$.credentialSubject.achievement", "an AchievementSubject must have an achievement")
    else:
        base = "$.credentialSubject.achievement"
        if not _is_uri(achievement.get("id")):
            ob(f"{base}.id", "an Achievement must have an id that is a URI")
        if "Achievement" not in _types(achievement.get("type")):
            ob(f"{base}.type", "achievement.type must include Achievement")
        for name in ("name", "description"):
            if not isinstance(achievement.get(name), str):
                ob(f"{base}.{name}", f"an Achievement must have a {name}")
        criteria = achievement.get("criteria")
        if not isinstance(criteria, Mapping) or not ({"id", "narrative"} & set(criteria)):
            ob(f"{base}.criteria", "an Achievement must have criteria with an id or a narrative")
        for index, rd in enumerate(_array(achievement.get("resultDescription"))):
            path = f"{base}.resultDescription[{index}]"
            if not isinstance(rd, Mapping):
                ob(path, "a ResultDescription is an object")
                continue
            rd_id = rd.get("id")
            if not _is_uri(rd_id):
                ob(f"{path}.id", f"ResultDescription id {rd_id!r} is not a URI")
            else:
                descriptions[rd_id] = rd
            if "ResultDescription" not in _types(rd.get("type")):
                ob(f"{path}.type", "type must include ResultDescription")
            for name in ("name", "resultType"):
                if name not in rd:
                    ob(f"{path}.{name}", f"a ResultDescription must have {name}")
            if rd.get("resultType") == "RubricCriterionLevel" and not rd.get(
                "rubricCriterionLevel"
            ):
                ob(f"{path}.rubricCriterionLevel", "a RubricCriterionLevel result lists its levels")
    for index, result in enumerate(_array(subject.get("result"))):
        path = f"$.credentialSubject.result[{index}]"
        if not isinstance(result, Mapping):
            ob(path, "a Result is an object")
            continue
        if "Result" not in _types(result.get("type")):
            ob(f"{path}.type", "type must include Result")
        ref = result.get("resultDescription")
        if ref is not None and ref not in descriptions:
            ob(
                f"{path}.resultDescription",
                f"{ref!r} is not the id of a ResultDescription of the achievement",
            )
        level = result.get("achievedLevel")
        if level is None:
            continue
        if not _is_uri(level):
            ob(f"{path}.achievedLevel", f"achievedLevel {level!r} is not a URI")
        if ref is None:
            ob(
                f"{path}.resultDescription",
                "a Result with achievedLevel must name its ResultDescription",
            )
        elif isinstance(ref, str) and ref in descriptions:
            levels = [
                lv.get("id")
                for lv in _array(descriptions[ref].get("rubricCriterionLevel"))
                if isinstance(lv, Mapping)
            ]
            if level not in levels:
                ob(
                    f"{path}.achievedLevel",
                    f"achievedLevel {level!r} is not a RubricCriterionLevel of {ref}",
                )
    for index, item in enumerate(_array(credential.get("evidence"))):
        path = f"$.evidence[{index}]"
        if not isinstance(item, Mapping) or "Evidence" not in _types(item.get("type")):
            ob(f"{path}.type", "an Evidence entry's type must include Evidence")
        elif "id" in item and not _is_uri(item["id"]):
            vc(f"{path}.id", "evidence id is not a URI")
        digest = item.get("acx:digestMultibase") if isinstance(item, Mapping) else None
        if isinstance(digest, str) and digest[:1] not in ("u", "z"):
            out.append(
                verdict(
                    "acx-schema",
                    False,
                    f"{path}['acx:digestMultibase']",
                    f"{digest[:16]}... is not a multibase multihash (read as sha256:<hex>)",
                )
            )
    return out


__all__ = [
    "FINDING_MEMBERS",
    "Finding",
    "finding_wire",
    "published_schema",
    "schema_departures",
    "standard_departures",
]
