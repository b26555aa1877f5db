"""Skills: six-key agentskills.io frontmatter and the re-derivable ``acx_skill`` index.

Spec: acx-cartridge-conformance §12 item 7; docs/spec/acx.md §5. A skill lives wholly in ROM
at ``rom/skills/<name>/`` with a ``SKILL.md`` whose frontmatter has at most the six
agentskills.io keys - ``name`` and ``description`` (required), ``license``, ``compatibility``,
``metadata`` (string-to-string map) and ``allowed-tools`` (space-separated) - and no other
top-level key. Host-specific fields (a harness's ``model``, ``context``, ``hooks`` ...) travel
only in ``rom/skills/<name>/acx.ext.json``, an object whose every key is a reverse-DNS
namespace; it becomes the index's ``ext`` column.

The ``acx_skill`` index is derived from those ROM bytes alone, so a verifier re-derives it and
compares; its ``content_sha256`` is the SKILL.md object's oid in the ROM manifest.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engram.cartridge._frontmatter import parse_frontmatter, split_frontmatter
from engram.core.canonical import canonicalize, parse_strict
from engram.errors import CanonicalJsonError, CartridgeFormatError

SKILL_SCHEMA_VERSION = "acx.skill/1"
SKILLS_ROOT = "rom/skills"
SKILL_FILE = "SKILL.md"
EXT_FILE = "acx.ext.json"
FRONTMATTER_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
"""The six agentskills.io keys, the only top-level keys a cartridge skill may use."""

NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
REVERSE_DNS = re.compile(r"[a-z][a-z0-9-]*(?:\.[a-z0-9][a-z0-9-]*)+")
"""A reverse-DNS name (``com.example.tool``): lowercase labels, at least two of them."""


@dataclass(frozen=True)
class SkillRow:
    """One ``acx_skill`` row; the JSON columns hold RFC 8785 text."""

    name: str
    path: str
    description: str
    license: str | None
    compatibility: str | None
    metadata: str
    allowed_tools: str
    ext: str
    content_sha256: str
    schema_version: str = SKILL_SCHEMA_VERSION

    def as_tuple(self) -> tuple[object, ...]:
        return (
            self.name,
            self.path,
            self.description,
            self.license,
            self.compatibility,
            self.metadata,
            self.allowed_tools,
            self.ext,
            self.content_sha256,
            self.schema_version,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "description": self.description,
            "license": self.license,
            "compatibility": self.compatibility,
            "metadata": parse_strict(self.metadata),
            "allowedTools": parse_strict(self.allowed_tools),
            "ext": parse_strict(self.ext),
            "contentSha256": self.content_sha256,
            "schemaVersion": self.schema_version,
        }


def skill_row(name: str, skill_md: bytes, ext_json: bytes | None) -> SkillRow:
    """Validate one skill's ROM bytes and derive its index row (refuse what breaks the rules)."""
    where = f"{SKILLS_ROOT}/{name}/{SKILL_FILE}"
    if not NAME_PATTERN.fullmatch(name) or len(name) > 64:
        raise CartridgeFormatError(
            f"skill directory {name!r}: a skill name is 1-64 lowercase letters, digits and "
            "single hyphens"
        )
    try:
        text = skill_md.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CartridgeFormatError(f"{where} is not UTF-8") from e
    front, _body = split_frontmatter(text, where)
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
    return SkillRow(
        name=name,
        path=where,
        description=description,
        license=_text(fields, "license", where, required=False, limit=256),
        compatibility=_text(fields, "compatibility", where, required=False, limit=500),
        metadata=canonicalize(metadata).decode(),
        allowed_tools=canonicalize(tools.split() if tools else []).decode(),
        ext=canonicalize(_ext(name, ext_json)).decode(),
        content_sha256=hashlib.sha256(skill_md).hexdigest(),
    )


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


def _ext(name: str, ext_json: bytes | None) -> dict[str, Any]:
    if ext_json is None:
        return {}
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


__all__ = [
    "EXT_FILE",
    "FRONTMATTER_KEYS",
    "NAME_PATTERN",
    "REVERSE_DNS",
    "SKILLS_ROOT",
    "SKILL_FILE",
    "SKILL_SCHEMA_VERSION",
    "SkillRow",
    "skill_row",
]
