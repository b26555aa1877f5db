"""``index.json`` (``acx.registry-index/1``), rebuilt deterministically from verified bytes only.

Spec: lboel/acx@85f1358 SPEC.md §17.1 (full coordinate, canonical path, safe display metadata,
verification summary, lifecycle status, ``latest``), §17.2 (SemVer), §17.4 (pinned workflow
dependencies resolved exactly), §17.5 (the ledger validated and projected), and
``registry-index.schema.json``; the reference's ``tools/build-registry-index.mjs``;
docs/spec/acx-registry.md §3-§4.

Determinism: the same registry folder (and the same trust registry) gives the same bytes.
``generatedAt`` is the newest source time (a cartridge's ``acx.created_at``, a document's
``signedAt``, the ledger's ``updatedAt``), never the clock; collections are sorted as the
reference sorts them; the JSON is written with two-space indentation in the members' fixed order
and a final newline. The index is an allowlist and a discovery projection, never a trust root.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from engram.core.clock import parse_instant
from engram.core.jsonio import dumps_text
from engram.errors import EngramError, InvalidRequest
from engram.graph import PinnedWorkflow, resolve_pins
from engram.registry._artifacts import LevelResolver, Summary, summarize_template
from engram.registry._layout import (
    AGENT,
    AGENT_GRAPH,
    ARTIFACTS,
    INDEX_FILE,
    STATUS_FILE,
    TEMPLATES,
    TRUST_FILE,
    WORKFLOW,
    Coordinate,
    semver_key,
    walk,
)
from engram.registry._policy import policy_problems
from engram.registry._problems import Problem, problem, problem_order
from engram.registry._status import EPOCH, Ledger, load_ledger
from engram.registry._summaries import SUMMARIZE, Summarize
from engram.trust import TrustRegistry, load_trust_registry
from engram.workflow.internals import packaged_schema

SCHEMA_VERSION = "acx.registry-index/1"
ALLOWED_BESIDE = ("README.md",)
"""Files a collection may hold besides its artifacts: the generated discovery card."""


@dataclass
class IndexBuild:
    # Any (here and in Summary.entry, the site's views): index entries engram builds itself from
    # documents that already passed check_workflow/check_graph/verify_rom, read back deeply by the
    # site renderer; typing them as Json would need a narrowing at every member it reads.
    index: dict[str, Any]
    problems: list[Problem]
    accepted: dict[Coordinate, dict[str, Any]] = field(default_factory=dict)
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Accepted workflow and graph documents by registry path (the static Exchange needs them)."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_bytes(self) -> bytes:
        return index_bytes(self.index)


def index_bytes(index: dict[str, Any]) -> bytes:
    return (dumps_text(index, indent=2, sort_keys=False) + "\n").encode("utf-8")


@cache
def _index_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        packaged_schema("engram.registry", "registry-index.schema.json")
    )


def load_registry_trust(
    root: Path, given: TrustRegistry | None
) -> tuple[TrustRegistry | None, list[Problem]]:
    """The trust registry to verify against: the one given, else the registry's own file."""
    if given is not None:
        return given, []
    path = root / TRUST_FILE
    if not path.is_file():
        return None, []
    try:
        return load_trust_registry(path.read_bytes()), []
    except EngramError as e:
        return None, [
            problem(
                TRUST_FILE, "registry.namespace-trust", f"unreadable trust registry: {e.message}"
            )
        ]


def _stray_files(root: Path) -> list[Problem]:
    """Files in a signed collection that are neither an artifact nor an allowed discovery card."""
    problems = []
    for artifact in ARTIFACTS:
        collection, suffix = artifact.collection, artifact.file_suffix
        for found in walk(root, collection, ""):
            if (
                found.unsafe is None
                and not found.relative.endswith(suffix)
                and found.path.name not in ALLOWED_BESIDE
            ):
                problems.append(
                    problem(
                        found.relative,
                        "registry.canonical-paths",
                        f"not a {suffix} artifact and not allowed under {collection}/",
                    )
                )
    return problems


def _collect(
    root: Path, collection: str, suffix: str, summarize: Any, problems: list[Problem]
) -> list[Summary]:
    out = []
    for found in walk(root, collection, suffix):
        if found.unsafe:
            problems.append(problem(found.relative, "registry.site-paths", found.unsafe))
            continue
        summary = summarize(found.relative)
        if summary.problems or summary.coordinate is None:
            problems.extend(
                summary.problems
                or [problem(found.relative, "registry.live-verify", "not accepted")]
            )
            continue
        out.append(summary)
    return out


def _unique(summaries: list[Summary], problems: list[Problem]) -> list[Summary]:
    seen: dict[tuple[str, str, str, str], str] = {}
    kept = []
    for s in summaries:
        assert s.coordinate is not None
        key = (
            s.coordinate.artifact_type,
            s.coordinate.publisher_id,
            s.coordinate.id,
            s.coordinate.version,
        )
        if key in seen:
            problems.append(
                problem(
                    s.entry["path"],
                    "registry.coordinate",
                    f"duplicate coordinate, also at {seen[key]}",
                )
            )
            continue
        seen[key] = s.entry["path"]
        kept.append(s)
    return kept


def _mark_latest(summaries: list[Summary]) -> None:
    best: dict[tuple[str, str, str], tuple[Any, Summary]] = {}
    for s in summaries:
        assert s.coordinate is not None
        key = semver_key(s.coordinate.version)
        current = best.get(s.coordinate.series)
        if current is None or key > current[0]:
            best[s.coordinate.series] = (key, s)
    for s in summaries:
        assert s.coordinate is not None
        s.entry["latest"] = best[s.coordinate.series][1] is s


def _dependencies(
    graphs: list[Summary], workflows: list[Summary], now: datetime, problems: list[Problem]
) -> list[Summary]:
    """§17.4: each pinned ``acx-workflow`` loop resolves to the exact accepted coordinate."""
    by_coordinate = {
        (w.coordinate.publisher_id, w.coordinate.id, w.coordinate.version): w
        for w in workflows
        if w.coordinate
    }
    kept = []
    for graph in graphs:
        dependencies = []
        failed = False
        for loop in graph.entry["loops"]:
            if loop["kind"] != "acx-workflow":
                continue
            key = (loop["workflowPublisherId"], loop["workflowId"], loop["workflowVersion"])
            workflow = by_coordinate.get(key)
            if None in key or loop["digest"] is None:
                status = "unpinned"
            elif workflow is None:
                status = "missing"
            else:
                assert workflow.coordinate is not None
                status = (
                    "resolved"
                    if workflow.coordinate.digest == loop["digest"]
                    else "digest-mismatch"
                )
            if status != "resolved":
                failed = True
                problems.append(
                    problem(
                        graph.entry["path"],
                        "registry.pinned-dependencies",
                        f"loop {loop['id']!r}: workflow {key[0]}/{key[1]}@{key[2]} is {status}",
                    )
                )
                continue
            assert workflow is not None
            dependencies.append(
                {
                    "loopId": loop["id"],
                    "artifactType": "workflow",
                    "publisherId": key[0],
                    "id": key[1],
                    "version": key[2],
                    "digest": loop["digest"],
                    "status": "resolved",
                    "path": workflow.entry["path"],
                    "registryStatus": workflow.entry["registryStatus"]["status"],
                }
            )
        if not failed and graph.document is not None:
            offered = [
                PinnedWorkflow(w.entry["path"], w.document)
                for w in workflows
                if w.document is not None
            ]
            for issue in resolve_pins(graph.document, offered, now=now):
                failed = True
                problems.append(
                    problem(graph.entry["path"], "registry.pinned-dependencies", str(issue))
                )
        if failed:
            continue
        graph.entry["dependencies"] = dependencies
        graph.entry["dependenciesResolved"] = True
        kept.append(graph)
    return kept


def _templates(root: Path, problems: list[Problem]) -> list[dict[str, Any]]:
    base = root / TEMPLATES
    if not base.is_dir() or base.is_symlink():
        return []
    entries = []
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink()):
        if not (folder / "manifest.json").is_file():
            continue
        files = [
            f.relative.removeprefix(f"{TEMPLATES}/{folder.name}/")
            for f in walk(root, f"{TEMPLATES}/{folder.name}", "")
            if f.unsafe is None
        ]
        summary = summarize_template(root, f"{TEMPLATES}/{folder.name}", files)
        problems.extend(summary.problems)
        if not summary.problems:
            entries.append(summary.entry)
    return entries


def _newest(times: Iterable[str | None]) -> str:
    best: tuple[datetime, str] | None = None
    for value in times:
        if not value:
            continue
        try:
            when = parse_instant(value)
        except InvalidRequest:
            continue
        if best is None or when > best[0]:
            best = (when, value)
    return best[1] if best else EPOCH


def build_index(
    root: Path,
    *,
    now: datetime,
    trust: TrustRegistry | None = None,
    resolve_level: LevelResolver | None = None,
) -> IndexBuild:
    """Verify every live artifact under ``root`` and project the accepted ones (module doc)."""
    if not root.is_dir():
        raise InvalidRequest(f"{root} is not a registry folder")
    problems = policy_problems(root)
    problems += _stray_files(root)
    registry, trust_problems = load_registry_trust(root, trust)
    problems += trust_problems
    status_path = root / STATUS_FILE
    ledger: Ledger = load_ledger(status_path.read_bytes() if status_path.is_file() else None)
    problems += list(ledger.problems)

    groups: dict[str, list[Summary]] = {}
    for artifact in ARTIFACTS:
        summarize = SUMMARIZE[artifact.name]
        # Only a cartridge's level is resolved (a workflow or graph carries none).
        extra = {"resolve_level": resolve_level} if artifact.name == AGENT else {}

        def summary(relative: str, summarize: Summarize = summarize, extra: Any = extra) -> Summary:
            return summarize(root, relative, trust=registry, now=now, **extra)

        found = _collect(root, artifact.collection, artifact.file_suffix, summary, problems)
        groups[artifact.name] = _unique(found, problems)
    for group in groups.values():
        _mark_latest(group)
        for s in group:
            assert s.coordinate is not None
            s.entry["registryStatus"] = ledger.lifecycle(s.coordinate)
            s.entry["latest"] = s.entry.pop("latest")  # keep the reference's member order
    groups[AGENT_GRAPH] = _dependencies(groups[AGENT_GRAPH], groups[WORKFLOW], now, problems)
    every = [s for group in groups.values() for s in group]
    accepted = {s.coordinate: s.entry for s in every if s.coordinate}
    problems += ledger.unresolved(accepted)

    groups[AGENT].sort(
        key=lambda s: (
            -((s.entry["level"] or {}).get("acxLevel") or -1),
            s.entry["name"].casefold(),
            s.entry["publisher"],
            s.entry["id"],
            _Descending(s.entry["version"]),
        )
    )
    for name, group in groups.items():
        if name != AGENT:
            group.sort(
                key=lambda s: (
                    s.entry["publisher"],
                    s.entry["id"],
                    _Descending(s.entry["version"]),
                )
            )
    templates = _templates(root, problems)
    index: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "generatedAt": _newest(
            [
                ledger.updated_at if ledger.present else None,
                *(s.source_time for s in every),
            ]
        ),
        "artifactCount": len(every) + len(templates),
    }
    for artifact in ARTIFACTS:
        index[artifact.count_key] = len(groups[artifact.name])
        index[artifact.index_key] = [s.entry for s in groups[artifact.name]]
    index["templateCount"] = len(templates)
    index["templates"] = templates
    for error in sorted(
        _index_validator().iter_errors(index), key=lambda e: list(map(str, e.absolute_path))
    )[:20]:
        where = "/".join(str(p) for p in error.absolute_path)
        problems.append(problem(INDEX_FILE, "registry.index-content", f"{where}: {error.message}"))
    documents = {
        s.entry["path"]: s.document
        for group in groups.values()
        for s in group
        if s.document is not None
    }
    return IndexBuild(index, sorted(set(problems), key=problem_order), accepted, documents)


class _Descending:
    """Sorts SemVer strings newest first."""

    def __init__(self, version: str) -> None:
        self.key = semver_key(version)

    def __lt__(self, other: _Descending) -> bool:
        return self.key > other.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.key == other.key

    def __hash__(self) -> int:
        return hash(str(self.key))


__all__ = ["SCHEMA_VERSION", "IndexBuild", "build_index", "index_bytes", "load_registry_trust"]
