"""``share``: place one verified artifact at its canonical coordinate, never over other bytes.

Spec: lboel/acx@85f1358 SPEC.md §17.1 (immutable coordinates; "even when a caller requests an
overwrite"), §17.7 (sign and submit through ``share ... --dry-run`` and an ordinary pull
request), §16.9 (``share graph`` is fail-closed; ``--force`` MUST NOT replace different bytes),
§17.4 (a graph's pinned workflows must resolve); docs/spec/acx-registry.md §8.

The artifact is verified exactly as the index builder verifies it (signature, publishable
profile, ROM-only clean cartridge, identity); its path comes from that verified identity. An
identical file already there is a no-op; different bytes there are refused (there is no force).
The file is written under a temporary name and linked into place, so it appears whole or not at
all and can never replace a file that appeared meanwhile. Nothing touches git or a network.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from engram.core.canonical import JsonObject
from engram.registry._artifacts import Summary
from engram.registry._layout import (
    AGENT,
    AGENT_GRAPH,
    ARTIFACTS,
    WORKFLOW,
    canonical_path,
    inside,
)
from engram.registry._problems import Problem, RegistryRefused, problem, problem_line
from engram.registry._summaries import SUMMARIZE
from engram.trust import TrustRegistry
from engram.workflow import verify_workflow
from engram.workflow.internals import load_document

KINDS = {word: a.name for a in ARTIFACTS for word in a.share_words}
"""What ``share`` accepts for each artifact type (``_layout.ARTIFACTS``)."""
_SAY = [a.share_words[0] for a in ARTIFACTS]


@dataclass(frozen=True)
class Shared:
    artifact_type: str
    destination: Path
    path: str
    changed: bool
    dry_run: bool
    entry: dict[str, Any]
    reason: str

    def to_wire(self) -> JsonObject:
        return {
            "artifactType": self.artifact_type,
            "path": self.path,
            "destination": str(self.destination),
            "changed": self.changed,
            "dryRun": self.dry_run,
            "reason": self.reason,
            "digest": self.entry.get("digest"),
            "publisher": self.entry.get("publisher"),
            "trust": self.entry.get("trust"),
        }


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _inside(root: Path, relative: str) -> Path:
    try:
        return inside(root, relative)
    except ValueError as e:
        raise RegistryRefused(str(e)) from e


def _pins(summary: Summary, root: Path, now: datetime) -> list[Problem]:
    """A graph's ``acx-workflow`` loops must name workflows the registry holds with that digest."""
    problems = []
    for loop in summary.entry.get("loops", []):
        if loop["kind"] != "acx-workflow":
            continue
        where = f"loop {loop['id']!r}"
        key = (loop["workflowPublisherId"], loop["workflowId"], loop["workflowVersion"])
        if None in key or loop["digest"] is None:
            problems.append(
                problem(
                    summary.entry["path"], "registry.pinned-dependencies", f"{where} is not pinned"
                )
            )
            continue
        path = root / canonical_path(WORKFLOW, *key)
        if not path.is_file() or path.is_symlink():
            problems.append(
                problem(
                    summary.entry["path"],
                    "registry.pinned-dependencies",
                    f"{where}: {canonical_path(WORKFLOW, *key)} is not in the registry",
                )
            )
            continue
        verification = verify_workflow(load_document(path.read_bytes(), what=str(path)), now=now)
        if not verification.signed or verification.digest != loop["digest"]:
            problems.append(
                problem(
                    summary.entry["path"],
                    "registry.pinned-dependencies",
                    f"{where}: the registry's workflow has digest {verification.digest}, "
                    f"not the pinned {loop['digest']}",
                )
            )
    return problems


def share(
    kind: str,
    file: Path,
    registry: Path,
    *,
    now: datetime,
    trust: TrustRegistry | None = None,
    publisher_id: str | None = None,
    dry_run: bool = False,
) -> Shared:
    artifact_type = KINDS.get(kind)
    if artifact_type is None:
        raise RegistryRefused(f"share {kind!r}: say {', '.join(_SAY[:-1])} or {_SAY[-1]}")
    if not file.is_file() or file.is_symlink():
        raise RegistryRefused(f"{file} is not a regular file")
    summary = SUMMARIZE[artifact_type](registry, None, trust=trust, now=now, source=file)
    problems = list(summary.problems)
    if summary.coordinate is None and not problems:
        problems.append(problem(file.name, "registry.live-verify", "not shareable"))
    if summary.coordinate is not None and artifact_type == AGENT_GRAPH:
        problems += _pins(summary, registry, now)
    if (
        summary.coordinate is not None
        and publisher_id
        and publisher_id != summary.coordinate.publisher_id
    ):
        problems.append(
            problem(
                file.name,
                "registry.path-binding",
                f"--publisher {publisher_id} is not the signed publisher "
                f"{summary.coordinate.publisher_id}",
            )
        )
    if problems:
        raise RegistryRefused("share refused: " + "; ".join(problem_line(p) for p in problems[:5]))
    assert summary.coordinate is not None
    relative = summary.coordinate.path
    destination = _inside(registry, relative)
    if destination.exists():
        if not destination.is_file() or _digest(destination) != _digest(file):
            raise RegistryRefused(
                f"{relative} already holds other bytes: a published coordinate is never "
                "replaced; publish a new SemVer"
            )
        return Shared(
            artifact_type,
            destination,
            relative,
            False,
            dry_run,
            summary.entry,
            "identical artifact already present",
        )
    if dry_run:
        return Shared(
            artifact_type,
            destination,
            relative,
            True,
            True,
            summary.entry,
            "would copy the verified artifact",
        )
    destination.parent.mkdir(parents=True, exist_ok=True)
    _inside(registry, relative)  # again, now that the folders exist
    fd, temp_name = tempfile.mkstemp(prefix=".share-", dir=destination.parent)
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(file.read_bytes())
            out.flush()
            os.fsync(out.fileno())
        temp.chmod(0o644)
        if _digest(temp) != _digest(file):
            raise RegistryRefused(f"{file} changed while it was copied")
        try:
            os.link(temp, destination)  # fails if the path appeared meanwhile: never overwrite
        except FileExistsError as e:
            raise RegistryRefused(f"{relative} appeared while sharing; nothing was replaced") from e
    finally:
        temp.unlink(missing_ok=True)
    if artifact_type == AGENT:
        card = destination.parent / "README.md"
        if not card.exists():
            card.write_text(discovery_card(summary.entry), encoding="utf-8")
    return Shared(
        artifact_type,
        destination,
        relative,
        True,
        False,
        summary.entry,
        "copied the verified artifact",
    )


def _inline(value: object) -> str:
    return " ".join(str(value or "").replace("|", "/").split())


def discovery_card(entry: dict[str, Any]) -> str:
    """The generated, non-authoritative README beside a shared cartridge."""
    capabilities = (
        "\n".join(
            f"- `{_inline(c['taskType'])}`"
            + (f" ({', '.join(f'`{_inline(s)}`' for s in c['stack'])})" if c["stack"] else "")
            for c in entry["capabilities"]
        )
        or "- No capability claims declared."
    )
    claim = entry["levelClaim"]
    level = (
        f"{entry['level']['careerTier']} · Lv.{entry['level']['acxLevel']} · ROM-bound, proven"
        if entry["level"]
        else (
            f"Lv.{claim['acxLevel']} claimed, not independently proven"
            if claim["acxLevel"] is not None
            else "none claimed"
        )
    )
    return (
        f"# {_inline(entry['name'])}\n\n"
        "| Field | Value |\n| --- | --- |\n"
        f"| Publisher (signed claim) | `{_inline(entry['publisher'])}` |\n"
        f"| Version | `{_inline(entry['version'])}` |\n"
        f"| Role | `{_inline(entry['role'])}` |\n"
        f"| Level | {level} |\n"
        f"| ROM digest | `{_inline(entry['romHash'])}` |\n"
        f"| Trust when shared | `{_inline(entry['trust'])}` |\n\n"
        f"## Capabilities (claims)\n\n{capabilities}\n\n"
        "## Verify before loading\n\n```bash\n"
        "engram cartridge verify cartridge.acx\nengram cartridge spec cartridge.acx\n```\n\n"
        "This card is generated from the signed cartridge; the cartridge, not this file, is "
        "authoritative.\n"
    )


__all__ = ["KINDS", "Shared", "discovery_card", "share"]
