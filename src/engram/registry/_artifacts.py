"""Each live artifact, verified from its bytes, then turned into its index entry: cartridges and
templates here, signed workflows and Agent Graphs in ``_documents`` (one shared verification
step, one summariser per kind).

Spec: lboel/acx@85f1358 SPEC.md §17.1 (current-byte validation, path binding, ROM-bound
cartridge identity), §17.3 (signed lineage), §17.6 item 3 (what "verified" covers for each kind),
§4.5 (the trust taxonomy), §10 and §6 (levels and capabilities are claims until resolved); the
reference's ``tools/build-registry-index.mjs`` for the entry members; docs/spec/acx-registry.md §3.

Every function here returns ``(entry, problems)``; an artifact with any problem is not indexed.
Nothing is taken from a file name: publisher, id and version come from the verified artifact
(a cartridge's ROM-bound ``acx.publisher_id``/``acx.artifact_id``/``acx.artifact_version``, a
signed document's ``integrity.publisherId``, ``id`` and ``version``) and the path must agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from engram.cartridge import Cartridge, spec_report, verify_rom
from engram.core.canonical import Json, JsonObject, parse_strict
from engram.errors import CanonicalJsonError, EngramError
from engram.registry._layout import (
    AGENT,
    ARTIFACT_ID,
    Coordinate,
    canonical_path,
    identity_problem,
)
from engram.registry._problems import Problem, problem
from engram.trust import TrustRegistry, TrustState

LevelResolver = Callable[[bytes, str], "ResolvedLevel | None"]
"""(credential bytes, ROM digest) -> a proven level, or None when it cannot be resolved here."""


@dataclass(frozen=True)
class ResolvedLevel:
    acx_level: int
    career_tier: str
    verification_state: str = "verified"


@dataclass(frozen=True)
class Summary:
    coordinate: Coordinate | None
    entry: dict[str, Any]
    problems: list[Problem]
    source_time: str | None = None
    document: dict[str, Any] | None = None


def _json_list(text: str | None) -> list[Json]:
    if not text:
        return []
    try:
        value: Json = parse_strict(text)
    except CanonicalJsonError:
        return []
    return value if isinstance(value, list) else []


def trust_status(state: TrustState, warnings: tuple[str, ...] = ()) -> str:
    """The reference's ``trustStatus`` beside ``trust``: ``invalid`` for tampered; ``warning``
    for a legacy cartridge and for a portable verdict that carries a warning; else ``verified``."""
    if state is TrustState.TAMPERED:
        return "invalid"
    if state is TrustState.LEGACY or (state is TrustState.PORTABLE and warnings):
        return "warning"
    return "verified"


# -- cartridges ------------------------------------------------------------------------------


def _save_rows(cartridge: Cartridge) -> dict[str, int]:
    def count(sql: str) -> int:
        return int(str(cartridge.query(sql)[0][0]))

    counts = {
        "memory": count("SELECT count(*) FROM memory NOT INDEXED WHERE zone = 'save'"),
        "files": count("SELECT count(*) FROM sqlar NOT INDEXED WHERE substr(name, 1, 5) = 'save/'"),
        "objects": count("SELECT count(*) FROM objects NOT INDEXED WHERE zone = 'save'"),
    }
    if cartridge.has("vectors"):
        try:
            counts["vectors"] = count("SELECT count(*) FROM vectors WHERE zone = 'save'")
        except EngramError:
            counts["vectors"] = 0  # a vec0 table this SQLite cannot read is never read
    return counts


def _capabilities(cartridge: Cartridge) -> list[JsonObject]:
    if not cartridge.has("capabilities"):
        return []
    out: list[JsonObject] = []
    for (text,) in cartridge.query("SELECT json FROM capabilities NOT INDEXED ORDER BY id"):
        try:
            record: Json = parse_strict(str(text))
        except CanonicalJsonError:
            continue
        if not isinstance(record, dict):
            continue
        proficiency = record.get("proficiency")
        claimed = isinstance(proficiency, dict) and proficiency.get("verified") is True
        stack = record.get("stack")
        out.append(
            {
                "taskType": str(record.get("taskType", "")),
                "stack": [str(s) for s in stack] if isinstance(stack, list) else [],
                "domain": record.get("domain") if isinstance(record.get("domain"), str) else None,
                "claimedVerified": claimed,
                # A stored `verified` flag is never proof (§17.6): only a resolved level
                # credential referenced as evidence could make this true.
                "verified": False,
                "verificationState": "unresolved",
            }
        )
    return out


def _levels(
    cartridge: Cartridge, rom_digest: str, resolve: LevelResolver | None
) -> tuple[JsonObject | None, JsonObject]:
    claimed: tuple[int, str | None] | None = None
    proven: ResolvedLevel | None = None
    for (document,) in cartridge.query(
        "SELECT document FROM attestations NOT INDEXED WHERE type = 'vc-2.0' "
        "ORDER BY created_at, att_id"
    ):
        data = str(document).encode("utf-8")
        try:
            credential: Json = parse_strict(data)
        except CanonicalJsonError:
            continue
        subject = credential.get("credentialSubject") if isinstance(credential, dict) else None
        results = subject.get("result") if isinstance(subject, dict) else None
        first = (
            results[0]
            if isinstance(results, list) and results and isinstance(results[0], dict)
            else {}
        )
        level = first.get("acx:acxLevel")
        tier = first.get("acx:careerTier")
        if (
            isinstance(level, int)
            and not isinstance(level, bool)
            and (claimed is None or level > claimed[0])
        ):
            claimed = (level, tier if isinstance(tier, str) else None)
        resolved = resolve(data, rom_digest) if resolve is not None else None
        if resolved is not None and (proven is None or resolved.acx_level > proven.acx_level):
            proven = resolved
    level_entry: JsonObject | None = None
    if proven is not None:
        level_entry = {
            "acxLevel": proven.acx_level,
            "careerTier": proven.career_tier,
            "boundToRom": True,
            "proven": True,
            "verificationState": proven.verification_state,
        }
    claim: JsonObject = {
        "acxLevel": claimed[0] if claimed else None,
        "careerTier": claimed[1] if claimed else None,
        "verificationState": "verified" if proven else "unresolved",
    }
    return level_entry, claim


def summarize_cartridge(
    root: Path,
    relative: str | None,
    *,
    trust: TrustRegistry | None,
    now: datetime,
    resolve_level: LevelResolver | None = None,
    source: Path | None = None,
) -> Summary:
    """``relative`` is where the cartridge sits in the registry; with ``source`` (a file to be
    shared) and no ``relative``, the canonical path is derived from the verified identity."""
    path = source if source is not None else root / str(relative)
    shown = relative or (source.name if source is not None else "?")
    problems: list[Problem] = []

    def refuse(rule: str, message: str) -> Summary:
        return Summary(None, {"path": shown}, [*problems, problem(shown, rule, message)])

    try:
        with Cartridge.open(path) as cartridge:
            report, rom = verify_rom(cartridge, registry=trust, now=now)
            levels = int(
                str(
                    cartridge.query(
                        "SELECT count(*) FROM attestations NOT INDEXED WHERE type = 'vc-2.0'"
                    )[0][0]
                )
            )
            spec = spec_report(rom, level_count=levels)
            save = _save_rows(cartridge)
            capabilities = _capabilities(cartridge)
            level, claim = _levels(cartridge, report.manifest_hash, resolve_level)
            meta = rom.signed_meta
    except EngramError as e:
        return refuse("registry.live-verify", f"not a readable cartridge: {e.message}")
    if report.state is TrustState.TAMPERED:
        return refuse("registry.live-verify", f"tampered: {report.reason}")
    if report.state is TrustState.LEGACY:
        return refuse(
            "registry.live-verify", "unsigned (legacy): only signed cartridges are published"
        )
    if not spec.clean:
        return refuse(
            "registry.live-verify", "package spec not clean: " + "; ".join(spec.issues[:5])
        )
    if any(save.values()):
        shown = ", ".join(f"{k}={v}" for k, v in save.items() if v)
        return refuse(
            "registry.live-verify", f"published cartridges are ROM-only; SAVE holds {shown}"
        )
    publisher = report.publisher_id
    artifact_id = meta.get("acx.artifact_id")
    version = meta.get("acx.artifact_version")
    wrong = identity_problem(AGENT, publisher, artifact_id, version)
    if wrong:
        return refuse("registry.path-binding", f"ROM-bound identity: {wrong}")
    assert artifact_id is not None
    assert version is not None
    if not report.cartridge_id.startswith(f"{publisher}/{artifact_id}@"):
        return refuse(
            "registry.path-binding",
            f"acx.cartridge_id {report.cartridge_id!r} is not {publisher}/{artifact_id}@<uuid>",
        )
    expected = canonical_path(AGENT, publisher, artifact_id, version)
    if relative is None:
        relative = expected
    if relative != expected:
        return refuse("registry.path-binding", f"the verified cartridge belongs at {expected}")
    coordinate = Coordinate(AGENT, publisher, artifact_id, version, report.manifest_hash)
    role = meta.get("acx.role") or "agent"
    entry: dict[str, Any] = {
        "id": artifact_id,
        "slug": f"{publisher}__{artifact_id}",
        "path": relative,
        "name": meta.get("acx.agent_name") or artifact_id,
        "publisher": publisher,
        "role": role,
        "provider": meta.get("acx.provider", ""),
        "model": meta.get("acx.model", ""),
        "version": version,
        "description": meta.get("acx.description")
        or f"A portable {role.replace('_', ' ')} cartridge.",
        "license": meta.get("acx.license") or None,
        "authors": [a for a in _json_list(meta.get("acx.authors")) if isinstance(a, dict)],
        "tags": [str(t) for t in _json_list(meta.get("acx.tags"))],
        "homepage": meta.get("acx.homepage") or None,
        "trust": report.state.value,
        "trustStatus": report.status,
        "specClean": True,
        "romHash": report.manifest_hash,
        "digest": report.manifest_hash,
        "bytes": path.stat().st_size,
        "capabilities": capabilities,
        "level": level,
        "levelClaim": claim,
    }
    return Summary(coordinate, entry, problems, meta.get("acx.created_at"))


# -- templates -----------------------------------------------------------------------------

TEMPLATE_DESCRIPTION = (
    "An editable ACX starter package. Inspect and personalize every file before export."
)
TEMPLATE_TAGS = ["agent", "portable", "starter", "template"]


def summarize_template(root: Path, folder: str, files: list[str]) -> Summary:
    """``templates/<id>/``: unsigned editable source, indexed as such (never as verified)."""
    relative = f"{folder}/manifest.json"
    template_id = folder.rsplit("/", 1)[-1]
    try:
        manifest: Json = parse_strict((root / relative).read_bytes())
    except (OSError, CanonicalJsonError) as e:
        return Summary(
            None,
            {"path": relative},
            [problem(relative, "registry.templates", f"manifest.json: {e}")],
        )
    if not isinstance(manifest, dict) or not ARTIFACT_ID.fullmatch(template_id):
        return Summary(
            None, {"path": relative}, [problem(relative, "registry.templates", "not a template")]
        )
    listed = manifest.get("name")
    name = listed if isinstance(listed, str) else None
    if not name or name.upper().startswith("TODO"):
        name = " ".join(
            w[:1].upper() + w[1:] for w in template_id.replace("_", "-").split("-") if w
        )
    version = manifest.get("packageVersion") or manifest.get("schemaVersion")
    tags = manifest.get("tags")
    entry = {
        "id": template_id,
        "version": version if isinstance(version, str) else None,
        "name": name,
        "description": manifest.get("description")
        if isinstance(manifest.get("description"), str)
        else TEMPLATE_DESCRIPTION,
        "license": manifest.get("license") if isinstance(manifest.get("license"), str) else None,
        "tags": [str(t) for t in tags] if isinstance(tags, list) else list(TEMPLATE_TAGS),
        "publisher": manifest.get("publisher")
        if isinstance(manifest.get("publisher"), str)
        else "ACX community",
        "path": relative,
        "fileCount": len(files),
        "files": sorted(files),
        "signed": False,
        "trust": "unsigned",
        "trustStatus": "warning",
    }
    return Summary(None, entry, [])


__all__ = [
    "LevelResolver",
    "ResolvedLevel",
    "Summary",
    "summarize_cartridge",
    "summarize_template",
    "trust_status",
]
