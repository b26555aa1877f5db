"""History-aware immutability of accepted artifact paths, read from git itself.

Spec: lboel/acx@85f1358 SPEC.md §17.1 ("The publication gate MUST compare a proposal with the
accepted base registry ... and reject modification, deletion, or rename of an existing canonical
artifact path, even when a caller requests an overwrite"; "git history can establish that a path
already existed, but it never substitutes for cryptographic verification"); the reference's
``tools/check-registry-immutability.mjs``; docs/spec/acx-registry.md §7.

Two checks, both over the signed collections (``cartridges/``, ``cals/``, ``graphs/``):

1. **Against the base** (``since``): ``git diff --name-status --no-renames BASE`` over the working
   tree may only add paths; a modification, a deletion, a type change or a rename (which
   ``--no-renames`` shows as a deletion plus an addition) is refused. ``BASE`` must be an ancestor
   of ``HEAD``: a rewritten history is refused outright.
2. **Write-once across history** (stronger than the reference): for every path ever added in the
   history of ``HEAD``, the bytes it has now (the working tree's blob id) must be the bytes it was
   first added with. This catches the replacement a base comparison cannot see: a path deleted in
   one accepted push and re-added with other bytes in a later one. Without ``since`` the whole
   history is audited: every modification or deletion of an accepted path is refused.

``git`` is run as a subprocess with a fixed argument list (no shell), ``-z`` output, and the
registry folder as its only pathspec root.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from engram.errors import InvalidRequest
from engram.registry._layout import ARTIFACTS
from engram.registry._problems import Problem, problem, problem_order

COLLECTIONS = tuple(a.collection for a in ARTIFACTS)
ARTIFACT_SUFFIXES = tuple(a.file_suffix for a in ARTIFACTS)
RULE = "registry.immutable-history"
REPLACED = "registry.history-replacement"
_STATUS = {"M": "modified", "D": "deleted", "T": "changed in type", "A": "added"}


@dataclass(frozen=True)
class Event:
    commit: str
    status: str
    blob: str
    path: str


def _git(cwd: Path, *args: str) -> str:
    git = shutil.which("git")
    if git is None:
        raise InvalidRequest("the history check needs git on PATH")
    done = subprocess.run(
        [git, "-C", str(cwd), *args], capture_output=True, text=True, check=False, timeout=300
    )
    if done.returncode != 0:
        raise InvalidRequest(f"git {args[0]}: {done.stderr.strip() or 'failed'}")
    return done.stdout


def _is_artifact(path: str, prefix: str) -> bool:
    inside = path[len(prefix) :] if path.startswith(prefix) else None
    return (
        inside is not None
        and inside.split("/", 1)[0] in COLLECTIONS
        and inside.endswith(ARTIFACT_SUFFIXES)
    )


def _events(top: Path, prefix: str) -> list[Event]:
    specs = [f"{prefix}{c}" for c in COLLECTIONS]
    out = _git(
        top,
        "log",
        "--reverse",
        "--no-renames",
        "--raw",
        "--no-abbrev",
        "-z",
        "--format=%x01%H",
        "HEAD",
        "--",
        *specs,
    )
    events: list[Event] = []
    for chunk in out.split("\x01")[1:]:
        commit, _, rest = chunk.partition("\0")
        tokens = rest.lstrip("\n").split("\0")
        for meta, path in zip(tokens[0::2], tokens[1::2], strict=False):
            fields = meta.lstrip("\n").split()
            if len(fields) == 5 and _is_artifact(path, prefix):
                events.append(Event(commit, fields[4][0], fields[3], path))
    return events


def _current_blob(top: Path, path: str) -> str | None:
    if not (top / path).is_file():
        return None
    return _git(top, "hash-object", "--no-filters", "--", path).strip()


def history_problems(registry: Path, *, since: str | None = None) -> list[Problem]:
    """Every immutability finding for the registry folder ``registry`` (module doc)."""
    try:
        top = Path(_git(registry, "rev-parse", "--show-toplevel").strip())
    except InvalidRequest as e:
        raise InvalidRequest(f"{registry} is not inside a git repository: {e.message}") from e
    relative = registry.resolve().relative_to(top.resolve()).as_posix()
    prefix = "" if relative == "." else relative + "/"
    problems: list[Problem] = []

    def show(path: str) -> str:
        return path[len(prefix) :]

    if since is not None:
        base = _git(top, "rev-parse", "--verify", "--end-of-options", f"{since}^{{commit}}").strip()
        ancestor = subprocess.run(
            [
                shutil.which("git") or "git",
                "-C",
                str(top),
                "merge-base",
                "--is-ancestor",
                base,
                "HEAD",
            ],
            capture_output=True,
            check=False,
        )
        if ancestor.returncode != 0:
            return [
                problem(
                    ".",
                    RULE,
                    f"{since} ({base[:12]}) is not an ancestor of HEAD: "
                    "accepted history was rewritten",
                )
            ]
        diff = _git(
            top,
            "diff",
            "--name-status",
            "--no-renames",
            "-z",
            base,
            "--",
            *(f"{prefix}{c}" for c in COLLECTIONS),
        )
        tokens = diff.split("\0")
        for status, path in zip(tokens[0::2], tokens[1::2], strict=False):
            if _is_artifact(path, prefix) and status[:1] != "A":
                what = _STATUS.get(status[:1], status)
                problems.append(
                    problem(
                        show(path),
                        RULE,
                        f"an accepted artifact path was {what}; publish a new SemVer instead",
                    )
                )
    first: dict[str, Event] = {}
    for event in _events(top, prefix):
        earliest = first.get(event.path)
        if earliest is None:
            if event.status == "A":
                first[event.path] = event
            continue
        if since is None and event.status in ("M", "T", "D"):
            what = _STATUS[event.status]
            problems.append(
                problem(
                    show(event.path),
                    RULE,
                    f"{what} in commit {event.commit[:12]} after it was accepted in "
                    f"{earliest.commit[:12]}",
                )
            )
        if event.status == "A" and event.blob != earliest.blob:
            problems.append(
                problem(
                    show(event.path),
                    REPLACED,
                    f"re-added in commit {event.commit[:12]} with other bytes than first "
                    f"accepted in {earliest.commit[:12]}",
                )
            )
    for path, event in sorted(first.items()):
        now = _current_blob(top, path)
        if now is not None and now != event.blob:
            problems.append(
                problem(
                    show(path),
                    REPLACED,
                    f"holds other bytes than first accepted in commit {event.commit[:12]}",
                )
            )
    return sorted(set(problems), key=problem_order)


__all__ = ["history_problems"]
