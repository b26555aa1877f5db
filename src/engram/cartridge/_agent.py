"""Export: an agent package directory (the reference's sample layout) into cartridge contents.

Spec: lboel/acx@85f1358 SPEC.md §3.2 (meta keys), §5, §6, §7.1-§7.7 and the reference CLI's
``export <agent-package-dir>``; docs/spec/acx.md §12.

An agent package is a directory with ``manifest.json`` (``name``, ``artifactId``,
``artifactVersion``, ``description``, ``license``, ``authors``, ``tags``, ``provider``, ``model``,
``role``, ``level``, ``techStack``, ``exportedAt``), optionally ``memory-records.json`` (AGENTIBUS
memory artifacts), the knowledge files (``IDENTITY.md``, ``SKILLS.md``, ...) and, as engram
additions, ``skills/<name>/`` agentskills folders, ``harness-requirements.json``,
``loop-context-policy.json`` and ``capabilities.json`` (records or ``{taskType, stack,
domain}`` seeds). A package without ``skills/`` gets the one expertise skill the reference
writes. Field-learned memories (a ``repoId``) are quarantined unless ``include_field_learned``,
and then need the installation salt (§7.2).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from engram.cartridge._build import Contents, File, new_cartridge_id
from engram.cartridge._capabilities import build_capability, capability_problems, to_purl
from engram.cartridge._embed import ENGINE, ENGINE_TEXT
from engram.cartridge._harness import HARNESS_FILE, default_requirements, harness_problems
from engram.cartridge._package import (
    LANCE_SCHEMA_FILE,
    LOOP_POLICY_FILE,
    LOOP_VERSIONS,
    PACKAGE_SPEC_FILE,
    SPEC_VERSION,
    build_package_spec,
    default_loop_policy,
    lance_schema,
)
from engram.cartridge._paths import check_path
from engram.cartridge._record_tables import CAPABILITIES
from engram.cartridge._records import (
    array,
    canonical_repo_identity,
    codebase_fingerprint,
    export_record,
    repo_literals,
)
from engram.cartridge._skills import REVERSE_DNS, derive_skills
from engram.cartridge._sqlar import EXEC_MODE, FILE_MODE
from engram.core.bulk import gc_paused
from engram.core.canonical import Json, JsonObject, parse_strict
from engram.core.clock import format_instant
from engram.core.jsonio import dumps_text
from engram.errors import CanonicalJsonError, CartridgeFormatError

KNOWLEDGE_FILES = (
    "IDENTITY.md", "SKILLS.md", "MEMORY.md", "CAREER.md", "EQUIPMENT.md", "LEARNING_PATH.md",
    "EXCHANGE.md", "STYLE.md",
)  # fmt: skip
MAX_PACKAGE_FILE = 16 * 1024**2
_ARTIFACT_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?"
)
_ROLE_DOMAIN = {
    "frontend_dev": "frontend", "designer": "frontend", "ux_researcher": "frontend",
    "backend_dev": "backend", "fullstack_dev": "backend", "devops_engineer": "infrastructure",
    "security_expert": "infrastructure", "qa_engineer": "testing", "architect": "architecture",
    "cto": "architecture", "lead_developer": "architecture", "product_owner": "product",
    "product_expert": "product",
}  # fmt: skip


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _read(path: Path) -> bytes:
    """A regular file's bytes, refusing links, special files and oversize files."""
    info = path.lstat()
    if not stat.S_ISREG(info.st_mode):
        raise CartridgeFormatError(f"{path}: only regular files go into a cartridge")
    if info.st_size > MAX_PACKAGE_FILE:
        raise CartridgeFormatError(f"{path} is over {MAX_PACKAGE_FILE} bytes")
    return path.read_bytes()


def _json(path: Path) -> Any:
    try:
        return parse_strict(_read(path))
    except CanonicalJsonError as e:
        raise CartridgeFormatError(f"{path}: {e.message}") from e


def _pretty(value: Json) -> bytes:
    return (dumps_text(value, indent=2) + "\n").encode("utf-8")


def collect_skills(skills_dir: Path, mtime: int = 0) -> dict[str, File]:
    """Every file of every skill under ``skills_dir`` as ROM path -> (content, mode, mtime)."""
    if not skills_dir.is_dir():
        raise CartridgeFormatError(f"skills directory {skills_dir} does not exist")
    files: dict[str, File] = {}
    for entry in sorted(skills_dir.iterdir()):
        if entry.is_symlink() or not entry.is_dir():
            raise CartridgeFormatError(f"{entry}: a skills directory holds one folder per skill")
        for root, dirs, names in os.walk(entry, followlinks=False):
            dirs.sort()
            for name in sorted(names) + [d for d in dirs if Path(root, d).is_symlink()]:
                source = Path(root, name)
                content = _read(source)
                relative = source.relative_to(skills_dir).as_posix()
                mode = EXEC_MODE if source.lstat().st_mode & 0o111 else FILE_MODE
                files[check_path(f"rom/skills/{relative}")] = (content, mode, mtime)
    return files


def _expertise_skill(name: str, manifest: JsonObject) -> bytes:
    role = manifest.get("role") or "engineering"
    stack = [str(t) for t in array(manifest.get("techStack"))]
    description = (
        f"Specialized {role} expertise on {', '.join(stack) or 'general stacks'}. "
        "Use when a task matches this agent's demonstrated domain."
    )[:1024]
    lines = "\n".join(f"- {t} ({to_purl(t)})" for t in stack) or "- general"
    return (
        f"---\nname: {name}\ndescription: {description}\nlicense: Apache-2.0\nmetadata:\n"
        f"  version: 1.0.0\n---\n\n# {manifest.get('name')} — {role}\n\n"
        f"Portable, codebase-agnostic expertise.\n\n## When to use\n{description}\n\n"
        f"## Stack\n{lines}\n"
    ).encode()


@dataclass(frozen=True)
class ExportOptions:
    publisher_id: str
    now: datetime
    include_field_learned: bool = False
    installation_salt: bytes | None = None
    artifact_id: str | None = None
    artifact_version: str | None = None
    default_skill: bool = True
    """Write the reference's one expertise skill when the package has no ``skills/``."""


def package_contents(package_dir: Path, options: ExportOptions) -> tuple[Contents, int]:
    """The contents of a cartridge built from ``package_dir``; also the quarantined count."""
    if not REVERSE_DNS.fullmatch(options.publisher_id):
        raise CartridgeFormatError(
            f"--publisher {options.publisher_id!r} is not a reverse-DNS id (e.g. io.github.alice)"
        )
    if not package_dir.is_dir():
        raise CartridgeFormatError(f"agent package {package_dir} is not a directory")
    manifest_path = package_dir / "manifest.json"
    if not manifest_path.is_file():
        raise CartridgeFormatError(f"agent package {package_dir} has no manifest.json")
    manifest = _json(manifest_path)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("name"), str):
        raise CartridgeFormatError(f"{manifest_path}: an object with at least a name")
    artifact_id = options.artifact_id or manifest.get("artifactId") or slug(manifest["name"])
    version = options.artifact_version or manifest.get("artifactVersion") or "1.0.0"
    if not isinstance(artifact_id, str) or not _ARTIFACT_ID.fullmatch(artifact_id):
        raise CartridgeFormatError(f"artifact id {artifact_id!r} is not lowercase-hyphenated")
    if not isinstance(version, str) or not _SEMVER.fullmatch(version):
        raise CartridgeFormatError(f"artifact version {version!r} is not SemVer")
    created = manifest.get("exportedAt") or format_instant(options.now)
    meta: dict[str, str] = {
        "acx.spec_version": SPEC_VERSION,
        "acx.cartridge_id": new_cartridge_id(options.publisher_id, artifact_id),
        "acx.artifact_id": artifact_id,
        "acx.artifact_version": version,
        "acx.created_at": str(created),
        "acx.embedding_engine": ENGINE_TEXT,
        "acx.vec0_format": "1",
        "acx.publisher_id": options.publisher_id,
        "acx.agent_name": manifest["name"],
        "acx.package_spec": PACKAGE_SPEC_FILE,
        "acx.lance_schema": LANCE_SCHEMA_FILE,
    }
    for key, member in (
        ("acx.description", "description"),
        ("acx.license", "license"),
        ("acx.provider", "provider"),
        ("acx.model", "model"),
        ("acx.role", "role"),
    ):
        if isinstance(manifest.get(member), str) and manifest[member]:
            meta[key] = manifest[member]
    if isinstance(manifest.get("level"), int):
        meta["acx.declared_level"] = str(manifest["level"])
    for key, member in (("acx.authors", "authors"), ("acx.tags", "tags")):
        if isinstance(manifest.get(member), list):
            meta[key] = dumps_text(manifest[member])
    files: dict[str, File] = {}
    mtime = 0
    for name in KNOWLEDGE_FILES:
        if (package_dir / name).is_file():
            files[f"rom/knowledge/{name}"] = (_read(package_dir / name), FILE_MODE, mtime)
    if (package_dir / "skills").is_dir():
        files |= collect_skills(package_dir / "skills", mtime)
    elif options.default_skill:
        skill = "expertise-" + (slug(str(manifest.get("role") or "engineering")) or "engineering")
        files[f"rom/skills/{skill}/SKILL.md"] = (
            _expertise_skill(skill, manifest),
            FILE_MODE,
            mtime,
        )
    skills = derive_skills({k: v[0] for k, v in files.items()})
    harness = (
        _json(package_dir / "harness-requirements.json")
        if (package_dir / "harness-requirements.json").is_file()
        else default_requirements()
    )
    problems = harness_problems(harness, strict=True)
    if problems:
        raise CartridgeFormatError("; ".join(problems[:5]))
    files[HARNESS_FILE] = (_pretty(harness), FILE_MODE, mtime)
    policy = (
        _json(package_dir / "loop-context-policy.json")
        if (package_dir / "loop-context-policy.json").is_file()
        else default_loop_policy(str(ENGINE["id"]))
    )
    if not isinstance(policy, dict) or policy.get("schemaVersion") not in LOOP_VERSIONS:
        raise CartridgeFormatError(
            "loop-context-policy.json: schemaVersion must be acx.loop-context-policy/1 or /1.1"
        )
    files[LOOP_POLICY_FILE] = (_pretty(policy), FILE_MODE, mtime)
    raw_records = (
        _json(package_dir / "memory-records.json")
        if (package_dir / "memory-records.json").is_file()
        else []
    )
    if not isinstance(raw_records, list) or not all(isinstance(r, dict) for r in raw_records):
        raise CartridgeFormatError("memory-records.json must be a list of objects")
    records, quarantined = export_records(raw_records, options)
    tables = {CAPABILITIES.prefix: _capabilities(package_dir, manifest, str(created))}
    files[LANCE_SCHEMA_FILE] = (_pretty(lance_schema(ENGINE)), FILE_MODE, mtime)
    spec = build_package_spec(
        cartridge_id=meta["acx.cartridge_id"],
        engine=ENGINE,
        memories=len(records),
        skills=len(skills),
        table_counts={prefix: len(rows) for prefix, rows in tables.items()},
    )
    files[PACKAGE_SPEC_FILE] = (_pretty(spec), FILE_MODE, mtime)
    save_codebases = {r["codebaseFingerprint"] for r in records if r["zone"] == "save"}
    if len(save_codebases) == 1:
        meta["acx.save_codebase_fingerprint"] = str(next(iter(save_codebases)))
    return Contents(meta, files, records, tables, repo_literals(raw_records)), quarantined


def set_memories(contents: Contents, records: Iterable[JsonObject]) -> None:
    """Give ``contents`` exactly ``records`` and a package spec whose memory count says so.

    ``records`` may be an iterator: :func:`write` goes through it once and writes the spec
    with the number it met (``Contents.counted``), so the records are never held as a list."""
    content, mode, mtime = contents.files[PACKAGE_SPEC_FILE]
    spec = parse_strict(content)
    artifacts = spec.get("artifacts") if isinstance(spec, dict) else None
    baseline = next(
        (a for a in array(artifacts) if isinstance(a, dict) and a.get("role") == "memory-baseline"),
        None,
    )
    if not isinstance(spec, dict) or baseline is None:
        raise CartridgeFormatError(f"{PACKAGE_SPEC_FILE} has no memory-baseline artifact")

    def counted(count: int) -> File:
        assert baseline is not None  # checked above
        assert isinstance(spec, dict)
        baseline["count"] = count
        return (_pretty(spec), mode, mtime)

    contents.memories = records
    contents.counted[PACKAGE_SPEC_FILE] = counted


class ExportedRecords:
    """§7.4 for every record as it is drawn, field-learned ones only when asked (then with the
    salt): an iterator, so a ring's records go from the store into the file without a list of
    them (issue 33). :attr:`quarantined` counts the field-learned records left out so far."""

    def __init__(self, raw: Iterable[JsonObject], options: ExportOptions) -> None:
        self._raw = raw
        self._options = options
        self.quarantined = 0

    def __iter__(self) -> Iterator[JsonObject]:
        options = self._options
        for record in self._raw:
            repo = record.get("repoId")
            if repo in (None, "") and record.get("portable") is not False:
                yield export_record(record)
                continue
            if not options.include_field_learned:
                self.quarantined += 1
                continue
            if options.installation_salt is None:
                raise CartridgeFormatError(
                    "--include-field-learned needs the installation salt (--installation-salt-file)"
                )
            identity = canonical_repo_identity(origin_url=f"repo://{repo}") if repo else None
            codebase = (
                record.get("codebaseFingerprint")
                if identity is None
                else codebase_fingerprint(options.installation_salt, identity)
            )
            yield export_record(record, codebase=str(codebase))


def export_records(
    raw: Iterable[JsonObject], options: ExportOptions
) -> tuple[list[JsonObject], int]:
    """:class:`ExportedRecords` as a list, and the quarantined count."""
    exported = ExportedRecords(raw, options)
    with gc_paused():
        return list(exported), exported.quarantined


def _capabilities(package_dir: Path, manifest: JsonObject, at: str) -> list[JsonObject]:
    domain = _ROLE_DOMAIN.get(str(manifest.get("role")), "backend")
    stack = [str(t) for t in array(manifest.get("techStack"))]
    records: list[JsonObject] = [
        build_capability(task_type="implement-feature", stack=stack, domain=domain, at=at)
    ]
    path = package_dir / "capabilities.json"
    if path.is_file():
        extra = _json(path)
        if not isinstance(extra, list):
            raise CartridgeFormatError(f"{path} must be a list")
        for item in extra:
            if isinstance(item, dict) and "schemaVersion" in item:
                problems = capability_problems(item, str(path))
                if problems:
                    raise CartridgeFormatError("; ".join(problems[:5]))
                records.append(item)
            elif isinstance(item, dict):
                records.append(
                    build_capability(
                        task_type=str(item.get("taskType")),
                        stack=[str(s) for s in array(item.get("stack"))],
                        domain=str(item.get("domain") or domain),
                        at=at,
                    )
                )
            else:
                raise CartridgeFormatError(f"{path}: each entry is an object")
    unique = {str(r["id"]): r for r in records}
    return [unique[k] for k in sorted(unique)]


__all__ = [
    "KNOWLEDGE_FILES",
    "ExportOptions",
    "ExportedRecords",
    "collect_skills",
    "export_records",
    "package_contents",
    "set_memories",
    "slug",
]
