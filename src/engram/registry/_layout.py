"""Registry coordinates, canonical paths and SemVer order.

Spec: lboel/acx@85f1358 SPEC.md §17.1 (the coordinate ``(artifactType, publisherId, id, version,
digest)`` and the canonical git paths), §17.2 (SemVer precedence; build metadata has none), the
reference registry's own README (``templates/<id>/``); docs/spec/acx-registry.md §1-§2.

Paths are relative to the registry folder (``registry/`` in a repository) and always written
with ``/``. Every path segment that comes from an artifact is checked against the same patterns
the published schemas use, so no artifact can name a path outside the layout.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import semver

AGENT = "agent"
WORKFLOW = "workflow"
AGENT_GRAPH = "agent-graph"

CARTRIDGES = "cartridges"
CALS = "cals"
GRAPHS = "graphs"
TEMPLATES = "templates"


@dataclass(frozen=True)
class ArtifactType:
    """Everything the registry knows about one kind of signed artifact, declared once (issue 28):
    where its files live, what they end with, where the index lists them and how the Exchange
    names them. The index, the gate, the history check, ``share`` and the static site read this
    table; only the summariser (how an artifact is verified and projected) is per kind, in
    ``_summaries``."""

    name: str
    """The coordinate's ``artifactType``."""
    collection: str
    """The registry folder that holds it."""
    file_suffix: str
    """What its files end with (the walk, the history check, the download name)."""
    path_tail: str
    """How its canonical path ends after ``<version>``."""
    index_key: str
    """Its list in ``index.json`` (and its count in ``engram registry check``)."""
    count_key: str
    """Its count in ``index.json``."""
    label: str
    """The Exchange's name for one."""
    page: str
    """The Exchange's page folder."""
    share_words: tuple[str, ...]
    """What ``share`` accepts for it, the first one named in its refusal."""


ARTIFACTS: tuple[ArtifactType, ...] = (
    ArtifactType(
        AGENT, CARTRIDGES, ".acx", "/cartridge.acx", "cartridges", "count", "Agent", "agents",
        ("agent",),
    ),
    ArtifactType(
        WORKFLOW, CALS, ".cal.json", ".cal.json", "workflows", "workflowCount", "Workflow",
        "workflows", ("workflow",),
    ),
    ArtifactType(
        AGENT_GRAPH, GRAPHS, ".agent-graph.json", ".agent-graph.json", "agentGraphs",
        "agentGraphCount", "Agent Graph", "graphs", ("graph", "agent-graph"),
    ),
)  # fmt: skip
"""The registry's artifact types, in the order the index lists them (§17.1)."""
ARTIFACT = {a.name: a for a in ARTIFACTS}
ARTIFACT_TYPES = tuple(ARTIFACT)
INDEX_FILE = "index.json"
STATUS_FILE = "status.json"
TRUST_FILE = "trust-registry.json"

PUBLISHER_SEGMENT = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9][a-z0-9-]*")
"""A publisher id that is one path segment (the index schema's ``publisher``)."""
ARTIFACT_ID = re.compile(r"[a-z][a-z0-9._-]{0,127}")
AGENT_ID = re.compile(r"[a-z][a-z0-9-]{0,63}")
SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+(?:[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
SUFFIX = {a.name: a.path_tail for a in ARTIFACTS}
COLLECTION = {a.name: a.collection for a in ARTIFACTS}


@dataclass(frozen=True, order=True)
class Coordinate:
    """The immutable identity of one published artifact (§17.1)."""

    artifact_type: str
    publisher_id: str
    id: str
    version: str
    digest: str

    @property
    def series(self) -> tuple[str, str, str]:
        """What ``latest`` is chosen within: ``(artifactType, publisherId, id)``."""
        return (self.artifact_type, self.publisher_id, self.id)

    @property
    def path(self) -> str:
        return canonical_path(self.artifact_type, self.publisher_id, self.id, self.version)

    def to_wire(self) -> dict[str, str]:
        return {
            "artifactType": self.artifact_type,
            "publisherId": self.publisher_id,
            "id": self.id,
            "version": self.version,
            "digest": self.digest,
        }


def canonical_path(artifact_type: str, publisher_id: str, artifact_id: str, version: str) -> str:
    """§17.1: ``cartridges/<p>/<id>/<v>/cartridge.acx``, ``cals/<p>/<id>/<v>.cal.json``,
    ``graphs/<p>/<id>/<v>.agent-graph.json`` (relative to the registry folder)."""
    return (
        f"{COLLECTION[artifact_type]}/{publisher_id}/{artifact_id}/{version}{SUFFIX[artifact_type]}"
    )


def identity_problem(
    artifact_type: str, publisher_id: object, artifact_id: object, version: object
) -> str | None:
    """Why these values cannot form a registry path, or None."""
    if not isinstance(publisher_id, str) or not PUBLISHER_SEGMENT.fullmatch(publisher_id):
        return f"publisher {publisher_id!r} is not a path-safe reverse-DNS id"
    pattern = AGENT_ID if artifact_type == AGENT else ARTIFACT_ID
    if not isinstance(artifact_id, str) or not pattern.fullmatch(artifact_id):
        return f"id {artifact_id!r} is not a valid {artifact_type} id"
    if not isinstance(version, str) or not SEMVER.fullmatch(version):
        return f"version {version!r} is not SemVer"
    return None


def https_url(value: object) -> bool:
    """An absolute ``https`` URL of at most 2048 characters, no whitespace, no credentials."""
    if not isinstance(value, str) or len(value) > 2048 or any(c.isspace() for c in value):
        return False
    parts = urlsplit(value)
    return (
        parts.scheme == "https"
        and bool(parts.hostname)
        and not parts.username
        and not parts.password
    )


def inside(root: Path, relative: str) -> Path:
    """``root/relative`` after checking every segment: no ``..``, ``.`` or empty segment and no
    symbolic link on the way (§17.6 item 2); raises ``ValueError`` naming the reason."""
    if root.is_symlink():
        raise ValueError(f"the registry folder {root} is a symbolic link")
    current = root
    for part in relative.split("/"):
        if part in ("", ".", ".."):
            raise ValueError(f"{relative} is not a registry path")
        current = current / part
        if current.is_symlink():
            raise ValueError(f"{relative}: symbolic links are refused")
    return current


def semver_key(version: str) -> semver.Version:
    """SemVer 2.0.0 precedence (``semver``); build metadata is ignored, as the spec says."""
    return semver.Version.parse(version).replace(build=None)


@dataclass(frozen=True)
class Found:
    """A file under a collection, or why it cannot be read safely."""

    path: Path
    relative: str
    unsafe: str | None = None


def walk(root: Path, collection: str, suffix: str) -> list[Found]:
    """Every file under ``root/collection`` ending in ``suffix``, in sorted order, each checked:
    a symbolic link anywhere (file or folder) and any non-regular file is reported unsafe, never
    followed (§17.6 item 2)."""
    base = root / collection
    found: list[Found] = []
    if not base.exists() and not base.is_symlink():
        return found
    if base.is_symlink():
        return [Found(base, collection, "symbolic links are forbidden in the registry")]

    def visit(folder: Path) -> None:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            path = Path(entry.path)
            relative = path.relative_to(root).as_posix()
            if entry.is_symlink():
                found.append(Found(path, relative, "symbolic links are forbidden in the registry"))
            elif entry.is_dir(follow_symlinks=False):
                visit(path)
            elif not stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
                found.append(Found(path, relative, "only regular files belong in the registry"))
            elif entry.name.endswith(suffix):
                found.append(Found(path, relative))

    visit(base)
    return found


__all__ = [
    "AGENT",
    "AGENT_GRAPH",
    "AGENT_ID",
    "ARTIFACT",
    "ARTIFACTS",
    "ARTIFACT_ID",
    "ARTIFACT_TYPES",
    "CALS",
    "CARTRIDGES",
    "COLLECTION",
    "DIGEST",
    "GRAPHS",
    "INDEX_FILE",
    "PUBLISHER_SEGMENT",
    "SEMVER",
    "STATUS_FILE",
    "SUFFIX",
    "TEMPLATES",
    "TRUST_FILE",
    "WORKFLOW",
    "ArtifactType",
    "Coordinate",
    "Found",
    "canonical_path",
    "https_url",
    "identity_problem",
    "inside",
    "semver_key",
    "walk",
]
