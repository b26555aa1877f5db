"""Capability records (§6) and their A2A AgentCard mapping (§6.3).

Spec: lboel/acx@85f1358 SPEC.md §6.1-§6.3; the published ``capability-sellable-claim.schema.json``;
docs/spec/acx.md §9.

A record asserts "performs well at *taskType* on *stack* for *domain*". ``id`` is ``cap-`` + the
first 16 hex of SHA-256 over ``taskType|sorted(stack).join(",")|domain``; ``taskType`` is a v1
seed token or a reverse-DNS-prefixed private token (an unknown seed-shaped token is refused);
``stack`` entries are purls of registered types, normalised through :data:`PURL_ALIASES`.
``verified: true`` is only a claim: a record is proven only by a level credential verified against
trusted issuers (engram.level, item 13; ``workflow ready --credentials``), so what reads the
cartridge alone (inspect, card) renders every record as unproven.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Set

from engram.cartridge._records import array
from engram.cartridge._schemas import issues
from engram.core.canonical import Json, JsonObject
from engram.errors import CartridgeFormatError

SCHEMA = "capability-sellable-claim"
EXTENSION_URI = "https://acx.dev/a2a/ext/capability/v1"
TASK_TYPES = frozenset(
    {
        "build-dag", "write-migration", "design-api", "implement-feature", "refactor", "debug",
        "review", "test-authoring", "optimize-performance", "harden-security", "write-docs",
        "deploy", "incident-response", "data-modeling", "schema-design", "prompt-engineering",
        "dependency-upgrade",
    }
)  # fmt: skip
DOMAINS = (
    "frontend",
    "backend",
    "infrastructure",
    "testing",
    "architecture",
    "leadership",
    "product",
)
PURL_TYPES = frozenset(
    {
        "alpm", "apk", "bitbucket", "bitnami", "cargo", "cocoapods", "composer", "conan", "conda",
        "cpan", "cran", "deb", "docker", "gem", "generic", "github", "golang", "hackage", "hex",
        "huggingface", "luarocks", "maven", "mlflow", "npm", "nuget", "oci", "pub", "pypi", "qpkg",
        "rpm", "swid", "swift",
    }
)  # fmt: skip
"""The purl types registered in the purl specification (ECMA-427); no other type is minted."""
PURL_ALIASES: dict[str, str] = {
    "airflow": "pkg:pypi/apache-airflow",
    "apache-airflow": "pkg:pypi/apache-airflow",
    "dbt": "pkg:pypi/dbt-core",
    "dbt-core": "pkg:pypi/dbt-core",
    "snowflake": "pkg:generic/snowflake",
    "postgres": "pkg:generic/postgresql",
    "postgresql": "pkg:generic/postgresql",
    "sqlite": "pkg:generic/sqlite",
    "react": "pkg:npm/react",
    "nuxt": "pkg:npm/nuxt",
    "vue": "pkg:npm/vue",
    "typescript": "pkg:npm/typescript",
    "node": "pkg:generic/nodejs",
    "nodejs": "pkg:generic/nodejs",
    "python": "pkg:generic/python",
    "django": "pkg:pypi/django",
    "fastapi": "pkg:pypi/fastapi",
    "pytest": "pkg:pypi/pytest",
    "docker": "pkg:generic/docker",
    "kubernetes": "pkg:generic/kubernetes",
    "terraform": "pkg:generic/terraform",
    "rust": "pkg:generic/rust",
    "go": "pkg:generic/go",
}
_PRIVATE_TASK = re.compile(r"[a-z0-9.-]+\.[a-z0-9.-]+:[a-z0-9]+(?:-[a-z0-9]+)*")
_PURL = re.compile(r"pkg:([a-z0-9.+-]+)/.+")


def to_purl(token: str) -> str:
    """A free-form stack token as a purl (aliases first; unknown services are ``pkg:generic``)."""
    text = token.strip().lower()
    if text.startswith("pkg:"):
        return text
    if text in PURL_ALIASES:
        return PURL_ALIASES[text]
    return "pkg:generic/" + (re.sub(r"[^a-z0-9._-]+", "-", text).strip("-") or "unknown")


def capability_id(task_type: str, stack: Iterable[str], domain: str) -> str:
    text = f"{task_type}|{','.join(sorted(stack))}|{domain}"
    return "cap-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def build_capability(*, task_type: str, stack: Iterable[str], domain: str, at: str) -> JsonObject:
    """A self-declared (``verified: false``) record, as export writes one."""
    purls = sorted({to_purl(s) for s in stack})
    record: JsonObject = {
        "schemaVersion": "acx.capability/1",
        "id": capability_id(task_type, purls, domain),
        "taskType": task_type,
        "stack": list[Json](purls),
        "domain": domain,
        "proficiency": {
            "scale": "acx.proficiency/trueskill-1",
            "mu": 25,
            "sigma": 8.333,
            "score": 0,
            "confidence": 0,
            "verified": False,
        },
        "evidenceRefs": [],
        "sampleCount": 0,
        "lastDemonstratedAt": at,
        "license": "LicenseRef-acx-proprietary",
        "createdAt": at,
        "updatedAt": at,
    }
    problems = capability_problems(record, "capability")
    if problems:
        raise CartridgeFormatError("; ".join(problems))
    return record


def capability_problems(record: Mapping[str, Json], where: str) -> list[str]:
    """Schema, vocabulary, purl and id rules of §6.2."""
    found = issues(SCHEMA, dict(record), where)
    if found:
        return found
    task = str(record["taskType"])
    if task not in TASK_TYPES and not _PRIVATE_TASK.fullmatch(task):
        found.append(
            f"{where}: taskType {task!r} is not a v1 seed token and has no reverse-DNS prefix"
        )
    stack = [str(s) for s in array(record["stack"])]
    for purl in stack:
        match = _PURL.fullmatch(purl)
        if match is None or match.group(1) not in PURL_TYPES:
            found.append(f"{where}: stack entry {purl!r} is not a purl of a registered type")
    if record["id"] != capability_id(task, stack, str(record["domain"])):
        found.append(f"{where}: id is not cap-<sha256_16> of taskType|sorted stack|domain")
    return found


def cartridge_capability_problems(
    record: Mapping[str, Json], where: str, field_learned: Set[str]
) -> list[str]:
    """:func:`capability_problems` of a record stored in a cartridge, and §6.1's rule that it
    is not minted from a memory of the cartridge whose ``portable`` flag is false."""
    found = capability_problems(record, where)
    found.extend(
        f"{where}: minted from the field-learned memory {ref.get('ref')!r} "
        "(§6.1: only portable memory may back a capability)"
        for ref in array(record.get("evidenceRefs"))
        if isinstance(ref, dict)
        and ref.get("kind") == "memory-artifact"
        and ref.get("ref") in field_learned
    )
    return found


def skill_display(record: Mapping[str, Json]) -> str:
    names = [str(s).split("/", 1)[-1].split("@")[0] for s in array(record.get("stack"))]
    return f"{record['taskType']} · {', '.join(names) or 'any stack'}"


def agent_card(
    *,
    meta: Mapping[str, str],
    records: Iterable[Mapping[str, Json]],
    url: str,
) -> JsonObject:
    """The A2A 1.0 AgentCard of §6.3: one AgentSkill per record, full records in an extension.

    ``signatures`` (a JWS over the card) is left to the publisher that serves the card.
    """
    recs = [dict(r) for r in records]
    publisher = meta.get("acx.publisher_id", "")
    labels = publisher.split(".")
    org_url = "https://" + ".".join(reversed(labels[:2])) if len(labels) >= 2 else url
    if labels[:2] == ["io", "github"] and len(labels) >= 3:
        org_url = f"https://github.com/{labels[2]}"
    skills: list[Json] = [
        {
            "id": r["id"],
            "name": skill_display(r),
            "description": f"Performs {r['taskType']} work in the {r['domain']} domain"
            + (" (unproven: no resolved level attestation)"),
            "tags": [r["taskType"], r["domain"]]
            + [str(s).split("/", 1)[-1].split("@")[0] for s in array(r.get("stack"))],
            "examples": [],
        }
        for r in recs
    ]
    return {
        "name": meta.get("acx.agent_name") or meta.get("acx.artifact_id", ""),
        "description": meta.get("acx.description", ""),
        "version": meta.get("acx.artifact_version", ""),
        "provider": {"organization": publisher, "url": org_url},
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {
            "extensions": [
                {"uri": EXTENSION_URI, "required": False, "params": {"records": list[Json](recs)}}
            ]
        },
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "securitySchemes": {},
        "security": [],
        "skills": skills,
    }


__all__ = [
    "DOMAINS",
    "EXTENSION_URI",
    "PURL_ALIASES",
    "PURL_TYPES",
    "TASK_TYPES",
    "agent_card",
    "build_capability",
    "capability_id",
    "capability_problems",
    "cartridge_capability_problems",
    "skill_display",
    "to_purl",
]
