"""Using a verified cartridge in a host: activation (§8.5), skill install, the roster, upgrade.

Spec: lboel/acx@85f1358 SPEC.md §5.1 (skills installable where a host looks for them), §8.5
(the handshake; refusal never mutates SAVE) and the reference CLI's ``check``/``load``;
docs/spec/acx.md §10 and §13.

- :func:`activate` verifies, refuses a trust state the caller does not accept, negotiates the
  signed harness manifest against the host and writes the accepted compliance descriptor to
  ``save/harness-compliance.json`` - only on ``accept``; a refusal raises
  :class:`ActivationRefused` carrying the descriptor and the MCP error, and leaves every byte.
- :func:`install_skills` writes every ROM skill, byte for byte, under the host's skills folder
  (``~/.claude/skills``, ``~/.codex/skills``, ``.cursor/skills``), never outside it.
- :func:`roster` lists the cartridges of a folder with their trust state, one line each.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from engram.cartridge._build import write_save
from engram.cartridge._container import Cartridge
from engram.cartridge._errors import ActivationRefused, UntrustedCartridge
from engram.cartridge._harness import (
    HARNESS_FILE,
    Host,
    harness_problems,
    negotiate,
    preflight,
    unsupported_harness_error,
)
from engram.cartridge._host_dirs import HOST_SKILL_DIRS
from engram.cartridge._rom import Rom
from engram.cartridge._skills import SKILLS_ROOT, derive_skills
from engram.cartridge._verify import TrustReport, verify_rom
from engram.core.canonical import Json, JsonObject, canonicalize, parse_strict
from engram.errors import CartridgeFormatError, EngramError
from engram.trust import TrustRegistry, TrustState

COMPLIANCE_FILE = "save/harness-compliance.json"
DEFAULT_ACCEPT = frozenset({TrustState.TRUSTED, TrustState.LOCAL})


def require_state(report: TrustReport, accept: Collection[TrustState]) -> None:
    """Refuse a report whose state is not accepted (``tampered`` never is).

    A ``portable`` report whose signature could not be checked (no public key in the file or
    the registry) is accepted only where ``legacy`` is: nothing vouched for its bytes, so an
    editor who recomputed every digest and dropped the key must not pass as a signed file.
    """
    allowed = ", ".join(sorted(s.value for s in accept if s is not TrustState.TAMPERED))
    if report.state is TrustState.TAMPERED or report.state not in accept:
        raise UntrustedCartridge(
            f"cartridge is {report.state.value} ({report.reason}); accepted: {allowed or 'none'}",
            counts_as=report.state.value,
        )
    unchecked = report.state is TrustState.PORTABLE and not report.signature_verified
    if unchecked and TrustState.LEGACY not in accept:
        raise UntrustedCartridge(
            f"cartridge is portable but its signature was not checked ({report.reason}): "
            f"it counts as legacy; accepted: {allowed or 'none'}",
            counts_as=TrustState.LEGACY.value,
        )


def _array(value: Json) -> list[Json]:
    return value if isinstance(value, list) else [value]


def _reread(persisted: bytes) -> JsonObject:
    """The compliance descriptor as read back from the canonical bytes just made of it."""
    value = parse_strict(persisted)
    if not isinstance(value, dict):  # pragma: no cover - canonicalize() of a JsonObject
        raise CartridgeFormatError("the compliance descriptor did not read back as an object")
    return value


# Any: the harness document _harness reads after harness_problems has accepted it (that module
# keeps Any for schema-accepted documents).
def harness_of(rom: Rom) -> tuple[dict[str, Any], bytes]:
    data = rom.files.get(HARNESS_FILE)
    if data is None:
        raise CartridgeFormatError(f"cartridge has no {HARNESS_FILE} (§8.1)")
    doc = rom.json_file(HARNESS_FILE)
    problems = harness_problems(doc)
    if problems:
        raise CartridgeFormatError("; ".join(problems[:5]))
    assert doc is not None
    return doc, data


@dataclass(frozen=True)
class Activation:
    report: TrustReport
    descriptor: JsonObject


def check_host(rom: Rom, host: Host) -> JsonObject:
    """The §8.5 compliance descriptor for ``host`` (no file is touched)."""
    doc, data = harness_of(rom)
    return negotiate(doc, data, host)


def activate(
    path: str | os.PathLike[str],
    host: Host,
    *,
    registry: TrustRegistry | None = None,
    local_keyids: Collection[str] = (),
    accept: Collection[TrustState] = DEFAULT_ACCEPT,
    now: datetime | None = None,
) -> Activation:
    with Cartridge.open(path) as cartridge:
        report, rom = verify_rom(cartridge, registry=registry, local_keyids=local_keyids, now=now)
    require_state(report, accept)
    doc, data = harness_of(rom)
    descriptor = negotiate(doc, data, host)
    if descriptor["verdict"] != "accept":
        unmet = descriptor["unmet"]
        error = unsupported_harness_error(descriptor, host)
        raise ActivationRefused(
            "activation refused (Unsupported harness): " + "; ".join(map(str, _array(unmet))),
            descriptor=descriptor,
            error=error,
        )
    persisted = canonicalize(descriptor) + b"\n"
    failing = preflight(_reread(persisted), doc)
    if failing:  # §8.5 step 6: the self-check reads what would be persisted
        raise ActivationRefused(f"preflight: required roles unsatisfied: {failing}")
    write_save(path, {COMPLIANCE_FILE: persisted}, mtime=int((now or datetime.now()).timestamp()))
    return Activation(report, descriptor)


def install_skills(rom: Rom, target: Path) -> list[Path]:
    """Write every ROM skill under ``target/<name>/`` byte for byte; return the files written.

    Each file gets the mode of its sqlar row, 0644 or 0755 (the only modes a cartridge may
    carry), as ``sqlite3 -Ax`` would extract it.
    """
    derive_skills(rom.files)  # refuses a skill that breaks §5 before anything is written
    written: list[Path] = []
    root = target.resolve()
    for name, content in sorted(rom.files.items()):
        if not name.startswith(SKILLS_ROOT + "/"):
            continue
        relative = name[len(SKILLS_ROOT) + 1 :]
        destination = (root / relative).resolve()
        if root not in destination.parents:
            raise CartridgeFormatError(f"{name} would be written outside {root}")
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_bytes(content)
        destination.chmod(0o755 if rom.modes.get(name, 0) & 0o111 else 0o644)
        written.append(destination)
    return written


@dataclass(frozen=True)
class RosterLine:
    path: Path
    state: str
    artifact: str
    version: str
    publisher: str
    skills: int
    memories: int
    manifest_hash: str
    error: str | None = None

    def to_wire(self) -> JsonObject:
        return {
            "path": str(self.path), "trust": self.state, "artifactId": self.artifact,
            "artifactVersion": self.version, "publisherId": self.publisher, "skills": self.skills,
            "memories": self.memories, "manifestHash": self.manifest_hash, "error": self.error,
        }  # fmt: skip


def roster(directory: Path, *, registry: TrustRegistry | None = None) -> list[RosterLine]:
    """Every ``*.acx`` under ``directory`` (recursively), verified; a bad file is a line too."""
    lines: list[RosterLine] = []
    for path in sorted(directory.rglob("*.acx")):
        try:
            with Cartridge.open(path) as cartridge:
                report, rom = verify_rom(cartridge, registry=registry)
            lines.append(
                RosterLine(
                    path,
                    report.state.value,
                    report.artifact_id,
                    report.artifact_version,
                    report.publisher_id,
                    len(derive_skills(rom.files)),
                    len(rom.memories),
                    report.manifest_hash,
                )
            )
        except EngramError as e:
            lines.append(RosterLine(path, "error", "", "", "", 0, 0, "", f"{e.code}: {e.message}"))
    return lines


__all__ = [
    "COMPLIANCE_FILE",
    "DEFAULT_ACCEPT",
    "HOST_SKILL_DIRS",
    "Activation",
    "RosterLine",
    "activate",
    "check_host",
    "harness_of",
    "install_skills",
    "require_state",
    "roster",
]
