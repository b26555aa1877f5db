"""``registry check``: the gate a registry's CI runs on a pull request.

Spec: lboel/acx@85f1358 SPEC.md §17.7 ("The PR gate MUST rerun publication validation, signature
verification, dependency resolution, status validation, registry-index generation, and tests
against the submitted bytes"), §17.1 (history-aware immutability); docs/spec/acx-registry.md §7.

In order: the file policy, every live artifact verified and indexed (:func:`build_index`, which
also validates the ledger and resolves pins), the history check against ``since`` (or the whole
history), and the committed ``index.json`` compared byte for byte with the fresh build.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from engram.core.canonical import JsonObject
from engram.errors import InvalidRequest
from engram.registry._artifacts import LevelResolver
from engram.registry._history import history_problems
from engram.registry._index import IndexBuild, build_index
from engram.registry._layout import ARTIFACTS, INDEX_FILE
from engram.registry._problems import Problem, problem, problem_order, problem_wire
from engram.trust import TrustRegistry


@dataclass
class CheckReport:
    build: IndexBuild
    problems: list[Problem]
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_wire(self) -> JsonObject:
        index = self.build.index
        return {
            "ok": self.ok,
            "counts": {
                **{a.index_key: index[a.count_key] for a in ARTIFACTS},
                "templates": index["templateCount"],
            },
            "problems": [problem_wire(p) for p in self.problems],
            "notes": list(self.notes),
        }


def check_registry(
    root: Path,
    *,
    now: datetime,
    since: str | None = None,
    trust: TrustRegistry | None = None,
    history: bool = True,
    resolve_level: LevelResolver | None = None,
) -> CheckReport:
    build = build_index(root, now=now, trust=trust, resolve_level=resolve_level)
    problems = list(build.problems)
    notes: list[str] = []
    if history:
        try:
            problems += history_problems(root, since=since)
        except InvalidRequest as e:
            if since is not None:
                raise
            notes.append(f"history not checked: {e.message}")
    committed = root / INDEX_FILE
    if not committed.is_file():
        problems.append(
            problem(
                INDEX_FILE,
                "registry.pr-gate",
                "no index.json: run `engram registry index` and commit it",
            )
        )
    elif committed.read_bytes() != build.to_bytes():
        problems.append(
            problem(
                INDEX_FILE,
                "registry.pr-gate",
                "index.json is not the fresh build of these bytes: "
                "run `engram registry index` and commit it",
            )
        )
    return CheckReport(build, sorted(set(problems), key=problem_order), notes)


__all__ = ["CheckReport", "check_registry"]
