"""Skills (§5): the ROM layout, six-key frontmatter, and the re-derivable ``acx_skill`` index.

Spec: lboel/acx@85f1358 SPEC.md §5.1-§5.5 and §12 item 7; docs/spec/acx.md §7.

A skill is ``rom/skills/<name>/SKILL.md`` plus optional ``references/``, ``scripts/`` and
``assets/`` files one level down; ``<name>`` equals the frontmatter ``name``. The frontmatter
has only the six agentskills.io keys; host-superset fields travel in ``acx_skill.ext``, an object
keyed by reverse-DNS namespaces, whose signed source is ``rom/skills/<name>/acx.ext.json``
(engram's choice: the index is an unsigned cache, so what it says must be derivable from ROM).
:func:`derive_skills` rebuilds every index row from ROM bytes alone; :func:`index_problems`
compares a stored index with it (``content_sha256`` equals the SKILL.md object's hash in the
manifest, so the signature covers skills transitively).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from engram.cartridge._container import Cartridge
from engram.cartridge._frontmatter import parse_frontmatter, split_frontmatter
from engram.core.canonical import JsonObject, canonicalize, parse_strict
from engram.errors import CanonicalJsonError, CartridgeFormatError

SKILL_SCHEMA_VERSION = "acx.skill/1"
SKILLS_ROOT = "rom/skills"
SKILL_FILE = "SKILL.md"
EXT_FILE = "acx.ext.json"
RESOURCE_DIRS = ("references", "scripts", "assets")
FRONTMATTER_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
REVERSE_DNS = re.compile(r"[a-z][a-z0-9-]*(?:\.[a-z0-9][a-z0-9-]*)+")
MAX_BODY_TOKENS = 5000
MAX_BODY_LINES = 500


@dataclass(frozen=True)
class Skill:
    """One skill as derived from ROM: its index row and its files."""

    name: str
    description: str
    license: str | None
    compatibility: str | None
    skill_version: str | None
    sqlar_path: str
    body_tokens: int
    body_lines: int
    content_sha256: str
    resources: tuple[JsonObject, ...]
    ext: JsonObject | None
    metadata: dict[str, str]
    allowed_tools: tuple[str, ...]

    def row(self) -> JsonObject:
        """The ``acx_skill`` row (JSON columns as RFC 8785 text)."""
        return {
            "name": self.name,
            "description": self.description,
            "license": self.license,
            "compatibility": self.compatibility,
            "skill_version": self.skill_version,
            "sqlar_path": self.sqlar_path,
            "body_tokens": self.body_tokens,
            "content_sha256": self.content_sha256,
            "resources": canonicalize(list(self.resources)).decode(),
            "ext": None if self.ext is None else canonicalize(self.ext).decode(),
            "schema_version": SKILL_SCHEMA_VERSION,
        }

    def to_wire(self) -> JsonObject:
        return {
            **{k: v for k, v in self.row().items() if k not in ("resources", "ext")},
            "resources": list(self.resources),
            "ext": self.ext,
            "metadata": dict(self.metadata),
            "allowedTools": list(self.allowed_tools),
        }


def skill_names(files: Mapping[str, bytes]) -> list[str]:
    return sorted({p.split("/")[2] for p in files if p.startswith(SKILLS_ROOT + "/")})


def derive_skills(files: Mapping[str, bytes], max_skill_md_bytes: int = 1024**2) -> list[Skill]:
    """Every skill's index row re-derived from ROM files; a broken skill is refused."""
    return [derive_skill(name, files, max_skill_md_bytes) for name in skill_names(files)]


def derive_skill(name: str, files: Mapping[str, bytes], max_skill_md_bytes: int) -> Skill:
    base = f"{SKILLS_ROOT}/{name}"
    where = f"{base}/{SKILL_FILE}"
    resources: list[JsonObject] = []
    for path in sorted(p for p in files if p.startswith(base + "/")):
        parts = path[len(base) + 1 :].split("/")
        if parts in ([SKILL_FILE], [EXT_FILE]):
            continue
        if len(parts) != 2 or parts[0] not in RESOURCE_DIRS:
            raise CartridgeFormatError(
                f"{path}: a skill holds SKILL.md and files directly under references/, scripts/ "
                "or assets/ (SPEC §5.1)"
            )
        resources.append(
            {
                "path": path,
                "bytes": len(files[path]),
                "sha256": hashlib.sha256(files[path]).hexdigest(),
            }
        )
    resources.sort(
        key=lambda r: (RESOURCE_DIRS.index(str(r["path"]).split("/")[3]), str(r["path"]))
    )
    skill_md = files.get(where)
    if skill_md is None:
        raise CartridgeFormatError(f"skill directory {base!r} has no {SKILL_FILE}")
    if len(skill_md) > max_skill_md_bytes:
        raise CartridgeFormatError(f"{where} is over {max_skill_md_bytes} bytes")
    if not NAME_PATTERN.fullmatch(name) or len(name) > 64:
        raise CartridgeFormatError(
            f"skill directory {name!r}: a name is 1-64 lowercase letters, digits, single hyphens"
        )
    try:
        text = skill_md.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CartridgeFormatError(f"{where} is not UTF-8") from e
    front, body = split_frontmatter(text, where)
    fields = parse_frontmatter(front, where)
    extra = sorted(set(fields) - set(FRONTMATTER_KEYS))
    if extra:
        raise CartridgeFormatError(
            f"{where}: frontmatter key(s) {extra} are not among the six agentskills.io keys "
            f"{list(FRONTMATTER_KEYS)}; host-specific fields go under a reverse-DNS key in "
            f"{EXT_FILE}"
        )
    declared = _text(fields, "name", where, required=True, limit=64)
    if declared != name:
        raise CartridgeFormatError(f"{where}: name {declared!r} does not match its directory")
    description = _text(fields, "description", where, required=True, limit=1024)
    assert description is not None
    metadata = fields.get("metadata", {})
    if not isinstance(metadata, dict):
        raise CartridgeFormatError(f"{where}: metadata must be a map of strings")
    tools = _text(fields, "allowed-tools", where, required=False, limit=4096)
    return Skill(
        name=name,
        description=description,
        license=_text(fields, "license", where, required=False, limit=256),
        compatibility=_text(fields, "compatibility", where, required=False, limit=500),
        skill_version=metadata.get("version"),
        sqlar_path=where,
        body_tokens=math.ceil(len(skill_md) / 4),
        body_lines=body.count("\n") + 1,
        content_sha256=hashlib.sha256(skill_md).hexdigest(),
        resources=tuple(resources),
        ext=_ext(name, files.get(f"{base}/{EXT_FILE}")),
        metadata=dict(metadata),
        allowed_tools=tuple(tools.split()) if tools else (),
    )


def budget_problems(skill: Skill) -> list[str]:
    """§5.5: the L2 body stays under 5000 tokens (~4 bytes each) and 500 lines."""
    out = []
    if skill.body_tokens >= MAX_BODY_TOKENS:
        out.append(
            f"{skill.sqlar_path}: about {skill.body_tokens} tokens; move detail to references/"
        )
    if skill.body_lines >= MAX_BODY_LINES:
        out.append(f"{skill.sqlar_path}: {skill.body_lines} lines; the body stays under 500")
    return out


def _text(
    fields: Mapping[str, object], key: str, where: str, *, required: bool, limit: int
) -> str | None:
    value = fields.get(key)
    if value is None or value == "":
        if required:
            raise CartridgeFormatError(f"{where}: frontmatter needs a non-empty {key!r}")
        return None
    if not isinstance(value, str):
        raise CartridgeFormatError(f"{where}: {key!r} must be a string")
    if len(value) > limit:
        raise CartridgeFormatError(f"{where}: {key!r} is longer than {limit} characters")
    return value


def _ext(name: str, ext_json: bytes | None) -> JsonObject | None:
    if ext_json is None:
        return None
    where = f"{SKILLS_ROOT}/{name}/{EXT_FILE}"
    try:
        ext = parse_strict(ext_json)
    except CanonicalJsonError as e:
        raise CartridgeFormatError(f"{where}: {e.message}") from e
    if not isinstance(ext, dict):
        raise CartridgeFormatError(f"{where} must be a JSON object")
    for key, value in ext.items():
        if not REVERSE_DNS.fullmatch(key):
            raise CartridgeFormatError(
                f"{where}: key {key!r} is not a reverse-DNS namespace (e.g. com.example.host)"
            )
        if not isinstance(value, dict):
            raise CartridgeFormatError(f"{where}: {key!r} must hold a JSON object")
    return dict(ext)


# Every column a host may read is compared with ROM: a column left out here would serve
# unsigned data under a trusted verdict (issue 31: ``ext`` was, and still verified).
_COMPARED = (
    "name",
    "description",
    "license",
    "compatibility",
    "skill_version",
    "body_tokens",
    "content_sha256",
    "schema_version",
)
_MAY_BE_NULL = ("skill_version",)
"""The reference leaves ``skill_version`` NULL where engram derives ``metadata.version``; a NULL
serves nothing unsigned, a value must be the derived one."""
_JSON_COLUMNS = ("resources", "ext")
_INDEX_COLUMNS = ("sqlar_path", *_COMPARED, *_JSON_COLUMNS)
_INDEX_SQL = f"SELECT {', '.join(_INDEX_COLUMNS)} FROM acx_skill NOT INDEXED LIMIT ?"  # noqa: S608 - constant column names


def _json_column(value: object) -> object:
    """A JSON text column's value (NULL stays None; unreadable text is its own marker)."""
    if value is None:
        return None
    try:
        return parse_strict(str(value))
    except CanonicalJsonError:
        return CanonicalJsonError


def index_problems(cartridge: Cartridge, skills: list[Skill]) -> list[str]:
    """Where the stored ``acx_skill`` cache disagrees with the index derived from ROM."""
    if not cartridge.has("acx_skill"):
        return []
    rows = cartridge.query(_INDEX_SQL, (cartridge.limits.max_rows + 1,))
    derived = {s.sqlar_path: s.row() for s in skills}
    problems: list[str] = []
    for row in rows:
        stored = dict(zip(_INDEX_COLUMNS, row, strict=True))
        path = str(stored["sqlar_path"])
        live = derived.pop(path, None)
        if live is None:
            problems.append(f"acx_skill row {path!r} names no skill in ROM")
            continue
        for column in _COMPARED:
            if column in _MAY_BE_NULL and stored[column] is None:
                continue
            if stored[column] != live[column]:
                problems.append(f"acx_skill {path}: {column} differs from the ROM SKILL.md")
        for column in _JSON_COLUMNS:
            if _json_column(stored[column]) != _json_column(live[column]):
                source = "ROM files" if column == "resources" else f"signed {EXT_FILE}"
                problems.append(f"acx_skill {path}: {column} differs from the {source}")
    problems.extend(f"ROM skill {path} has no acx_skill row" for path in derived)
    return problems


__all__ = [
    "EXT_FILE",
    "FRONTMATTER_KEYS",
    "NAME_PATTERN",
    "RESOURCE_DIRS",
    "REVERSE_DNS",
    "SKILLS_ROOT",
    "SKILL_FILE",
    "SKILL_SCHEMA_VERSION",
    "Skill",
    "budget_problems",
    "derive_skill",
    "derive_skills",
    "index_problems",
    "skill_names",
]
