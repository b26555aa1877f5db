"""``engram cartridge build | verify | inspect | strip | sign | activate | export | import``.

lboel/acx@85f1358 SPEC.md §12 items 1-11; docs/spec/acx.md §11-§12. Each command parses, calls
``engram.cartridge`` and renders. ``export`` and ``import`` are also the seam between two domain
packages that must not import each other: memories leave a ring through
``engram.memory.export_memories`` and arrive through ``engram.memory.import_memories`` (one
transaction, which re-indexes their vectors); which records may arrive is decided by
``engram.cartridge.plan_import``. ``verify`` exits 1 when the cartridge is tampered.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from engram.cartridge import (
    ACTIVATION_FILE,
    DEFAULT_ACCEPT,
    FIELD_LEARNED,
    ROLES,
    TRANSFERABLE,
    Cartridge,
    HostCapabilities,
    TrustRegistry,
    TrustState,
    activate,
    artifact_fingerprint,
    build,
    collect_skills,
    load_trust_registry,
    plan_import,
    seal,
    strip,
    verify,
    verify_rom,
)
from engram.cli._app import cli
from engram.cli._db import database_option
from engram.cli._memory import ote_option, seat_engine
from engram.core.canonical import parse_object, parse_strict
from engram.core.clock import SystemClock
from engram.core.jsonio import dumps_text
from engram.core.keys import PrivateKey, load_private_key
from engram.errors import CanonicalJsonError, Forbidden, InvalidRequest
from engram.memory import MemoryEngine, export_memories, import_memories, memory_id

_HEX = re.compile(r"[0-9a-f]{16,64}")
_KEY = click.Path(exists=True, dir_okay=False, path_type=Path)
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@cli.group("cartridge")
def cartridge_group() -> None:
    """Agent Cartridges (.acx): signed SQLite files carrying skills and portable memory."""


def _jsonl(path: Path) -> list[Any]:
    items: list[Any] = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if line.strip():
            try:
                items.append(parse_strict(line))
            except CanonicalJsonError as e:
                raise InvalidRequest(f"{path}:{number}: {e.message}") from e
    return items


def _registry(path: Path | None) -> TrustRegistry | None:
    return None if path is None else load_trust_registry(path.read_bytes())


def _own(paths: Iterable[Path]) -> frozenset[str]:
    return frozenset(load_private_key(p).public_key().key_id for p in paths)


def _harness(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    return parse_object(
        path.read_bytes(), what=f"harness requirements {path}", error=InvalidRequest
    )


def _emit(value: Any, as_json: bool, lines: Iterable[str]) -> None:
    if as_json:
        click.echo(dumps_text(value, indent=2))
    else:
        for line in lines:
            click.echo(line)


def _build_options(command: Any) -> Any:
    for option in reversed(
        [
            click.option("--skills", type=click.Path(file_okay=False, path_type=Path)),
            click.option("--publisher", required=True, help="Reverse-DNS publisherId."),
            click.option("--sign-key", type=_KEY, help="Ed25519 private key (PEM or OpenSSH)."),
            click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path)),
            click.option("--artifact-id", default=None, help="Default: the output file's stem."),
            click.option("--artifact-version", default="1.0.0", show_default=True),
            click.option("--harness", type=_FILE, help="acx.harness.v1 JSON (default: all roles)."),
        ]
    ):
        command = option(command)
    return command


def _build(
    out: Path,
    *,
    records: list[Any],
    skills: Path | None,
    publisher: str,
    sign_key: Path | None,
    artifact_id: str | None,
    artifact_version: str,
    harness: Path | None,
) -> None:
    key: PrivateKey | None = load_private_key(sign_key) if sign_key else None
    result = build(
        out,
        publisher_id=publisher,
        artifact_id=artifact_id or re.sub(r"[^a-z0-9._-]", "-", out.stem.lower()),
        artifact_version=artifact_version,
        clock=SystemClock(),
        skills=collect_skills(skills) if skills else None,
        records=records,
        harness=_harness(harness),
        key=key,
    )
    signed = f"signed by {result.keyid}" if result.keyid else "unsigned (legacy)"
    click.echo(
        f"{out}: {result.skills} skill(s), {result.records} memory record(s), "
        f"manifest sha256:{result.manifest_hash}, {signed}"
    )


@cartridge_group.command("build")
@_build_options
@click.option("--memories", type=_FILE, help="Memory records, one JSON object per line.")
def build_command(memories: Path | None, out: Path, **options: Any) -> None:
    """Build a cartridge from a skills folder and memory records (scrubbed, then signed)."""
    _build(out, records=_jsonl(memories) if memories else [], **options)


@cartridge_group.command("verify")
@click.argument("file", type=_FILE)
@click.option("--trust", "trust", type=_FILE, help="Trust registry (public keys only).")
@click.option("--own-key", "own_keys", multiple=True, type=_KEY, help="This host's own key.")
@click.option("--json", "as_json", is_flag=True)
def verify_command(
    file: Path, trust: Path | None, own_keys: tuple[Path, ...], as_json: bool
) -> None:
    """Print the trust state (tampered, legacy, portable, trusted, local); exit 1 if tampered."""
    with Cartridge.open(file) as cartridge:
        report = verify(cartridge, registry=_registry(trust), own_keyids=_own(own_keys))
    _emit(report.to_json(), as_json, [f"{report.state.value}: {report.reason}"])
    if report.state is TrustState.TAMPERED:
        raise click.exceptions.Exit(1)


@cartridge_group.command("inspect")
@click.argument("file", type=_FILE)
@click.option("--json", "as_json", is_flag=True)
def inspect_command(file: Path, as_json: bool) -> None:
    """Show a cartridge's identity, skills, memory, harness requirements and SAVE files."""
    with Cartridge.open(file) as cartridge:
        report, rom = verify_rom(cartridge)
        save = [n for n, e in cartridge.entries().items() if n.startswith("save/") and not e.is_dir]
    tiers = {t: sum(r["tier"] == t for r in rom.records) for t in (TRANSFERABLE, FIELD_LEARNED)}
    value = {
        **report.to_json(),
        "skills": [row.to_json() for row in rom.skills],
        "memory": {"records": len(rom.records), **tiers},
        "harness": rom.harness,
        "save": save,
    }
    lines = [
        f"{report.artifact_id} {report.artifact_version} by {report.publisher_id}",
        f"manifest sha256:{report.manifest_hash} ({report.state.value})",
        f"skills: {', '.join(r.name for r in rom.skills) or 'none'}",
        f"memory: {len(rom.records)} record(s) ({tiers[TRANSFERABLE]} transferable, "
        f"{tiers[FIELD_LEARNED]} field-learned)",
        f"harness: roles {', '.join(rom.harness['requiredRoles'])}; MCP >= "
        f"{rom.harness['mcp']['minProtocolRevision']}",
        f"save: {len(save)} file(s)",
    ]
    _emit(value, as_json, lines)


@cartridge_group.command("strip")
@click.argument("file", type=_FILE)
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path))
def strip_command(file: Path, out: Path) -> None:
    """Copy FILE to OUT without its SAVE zone (the ROM hash stays the same)."""
    click.echo(f"{out}: SAVE removed, manifest sha256:{strip(file, out)}")


@cartridge_group.command("sign")
@click.argument("file", type=_FILE)
@click.option("--sign-key", required=True, type=_KEY, help="Ed25519 private key (PEM/OpenSSH).")
def sign_command(file: Path, sign_key: Path) -> None:
    """Re-derive FILE's indexes from its live ROM bytes, scrub them, and sign the manifest."""
    result = seal(file, load_private_key(sign_key))
    click.echo(f"{file}: manifest sha256:{result.manifest_hash} signed by {result.keyid}")


@cartridge_group.command("activate")
@click.argument("file", type=_FILE)
@click.option("--instance-id", required=True, help="This installation (kept in SAVE; never trust).")
@click.option(
    "--role", "roles", multiple=True, type=click.Choice(ROLES), help="A role the host has."
)
@click.option("--scope", "scopes", multiple=True, help="A capability scope the host grants.")
@click.option("--tool", "tools", multiple=True, help="An MCP tool the host exposes.")
@click.option("--mcp-revision", "revisions", multiple=True, help="An MCP revision the host speaks.")
@click.option("--trust", "trust", type=_FILE, help="Trust registry (public keys only).")
@click.option("--own-key", "own_keys", multiple=True, type=_KEY, help="This host's own key.")
@click.option(
    "--accept",
    "accept",
    multiple=True,
    type=click.Choice(["legacy", "portable", "trusted", "local"]),
    help="Trust states to accept (default: trusted, local). tampered is never accepted.",
)
@click.option("--json", "as_json", is_flag=True)
def activate_command(
    file: Path,
    instance_id: str,
    roles: tuple[str, ...],
    scopes: tuple[str, ...],
    tools: tuple[str, ...],
    revisions: tuple[str, ...],
    trust: Path | None,
    own_keys: tuple[Path, ...],
    accept: tuple[str, ...],
    as_json: bool,
) -> None:
    """Run the activation handshake against what this host offers.

    Only an agreement writes SAVE (save/activation.json); a refusal names every gap and leaves
    the file byte for byte as it was.
    """
    done = activate(
        file,
        HostCapabilities.of(roles=roles, scopes=scopes, protocol_revisions=revisions, tools=tools),
        instance_id=instance_id,
        clock=SystemClock(),
        registry=_registry(trust),
        own_keyids=_own(own_keys),
        accept={TrustState(a) for a in accept} or DEFAULT_ACCEPT,
    )
    terms = done.agreement
    value = {
        "state": done.report.state.value,
        "manifestHash": "sha256:" + done.report.manifest_hash,
        "roles": list(terms.roles),
        "scopes": list(terms.scopes),
        "mcpProtocolRevision": terms.protocol_revision,
        "save": ACTIVATION_FILE,
    }
    _emit(
        value,
        as_json,
        [
            f"activated ({done.report.state.value}): roles {', '.join(terms.roles)}; scopes "
            f"{', '.join(terms.scopes) or 'none'}; MCP {terms.protocol_revision}",
            f"recorded in {ACTIVATION_FILE}",
        ],
    )


def _codebase(ring_id: str) -> str:
    suffix = ring_id.split(":", 1)[-1]
    return suffix if _HEX.fullmatch(suffix) else hashlib.sha256(ring_id.encode()).hexdigest()[:16]


def ring_records(engine: MemoryEngine, ring: str) -> list[dict[str, Any]]:
    """A ring's memories as cartridge records: M2 (repo) memories are field-learned."""
    mount = engine.spec.mount_for(ring)
    ring_id = mount.ring_id if mount else ring
    records = []
    for item in export_memories(engine.store, ring_id):
        m = item.memory
        field_learned = m.ring == "M2"
        records.append(
            {
                "id": m.id,
                "kind": m.kind,
                "text": m.text,
                "entities": list(m.entities),
                "tier": FIELD_LEARNED if field_learned else TRANSFERABLE,
                "codebaseFingerprint": _codebase(m.ring_id) if field_learned else None,
                "identity": {"seatId": m.seat_id, "ringId": m.ring_id},
            }
        )
    return records


@cartridge_group.command("export")
@click.option("--ring", required=True, help="M2, M3, M4 or a ring id.")
@_build_options
@ote_option
@database_option
def export_command(
    ring: str, out: Path, ote: Path | None, database: str | None, **options: Any
) -> None:
    """Build a signed cartridge from one ring's memories (and skills from --skills)."""
    with seat_engine(ote, database) as engine:
        records = ring_records(engine, ring)
    _build(out, records=records, **options)


@cartridge_group.command("import")
@click.argument("file", type=_FILE)
@click.option("--ring", default="M4", show_default=True, help="Writable ring to import into.")
@click.option("--trust", "trust", type=_FILE, help="Trust registry (public keys only).")
@click.option("--own-key", "own_keys", multiple=True, type=_KEY, help="This host's own key.")
@click.option(
    "--accept",
    "accept",
    multiple=True,
    type=click.Choice(["legacy", "portable", "trusted", "local"]),
    help="Trust states to accept (default: trusted, local). tampered is never accepted.",
)
@click.option("--codebase-fingerprint", default=None, help="Default: this seat's M2 ring id.")
@click.option("--json", "as_json", is_flag=True)
@ote_option
@database_option
def import_command(
    file: Path,
    ring: str,
    trust: Path | None,
    own_keys: tuple[Path, ...],
    accept: tuple[str, ...],
    codebase_fingerprint: str | None,
    as_json: bool,
    ote: Path | None,
    database: str | None,
) -> None:
    """Verify FILE, apply the trust decision and merge its memories idempotently into a ring."""
    with seat_engine(ote, database) as engine:
        mount = engine.spec.mount_for(ring)
        if mount is None or not mount.writable:
            raise Forbidden(f"ring {ring!r} is not a writable mount of {engine.spec.seat.seat_id}")
        repo = engine.spec.mount_for("M2")
        codebase = codebase_fingerprint or (_codebase(repo.ring_id) if repo else None)
        existing: list[dict[str, Any]] = []
        for item in export_memories(engine.store, mount.ring_id):
            fingerprint = artifact_fingerprint(item.memory.kind, item.memory.text)
            existing.append({"id": item.memory.id, "artifactFingerprint": fingerprint})
            source = item.memory.provenance.get("acxRecordId")
            if isinstance(source, str):
                existing.append({"id": source, "artifactFingerprint": fingerprint})
        with Cartridge.open(file) as cartridge:
            plan = plan_import(
                cartridge,
                existing=existing,
                codebase_fingerprint=codebase,
                registry=_registry(trust),
                own_keyids=_own(own_keys),
                accept={TrustState(a) for a in accept} or DEFAULT_ACCEPT,
            )
        origin = (
            f"{plan.report.publisher_id}/{plan.report.artifact_id}@{plan.report.artifact_version}"
        )
        now = engine.now()
        import_memories(
            engine.store,
            [
                {
                    "memory": {
                        "id": memory_id(mount.ring_id, r["kind"], r["text"]),
                        "ring": mount.ring,
                        "ring_id": mount.ring_id,
                        "kind": r["kind"],
                        "text": r["text"],
                        "entities": r["entities"],
                        "provenance": {
                            "acxRecordId": r["id"],
                            "cartridge": origin,
                            "manifestHash": "sha256:" + plan.report.manifest_hash,
                            "trust": plan.report.state.value,
                        },
                        "thread": "",
                        "seat_id": engine.spec.seat.seat_id,
                        "status": "candidate",
                        "created_at": now,
                    },
                    "events": [],
                }
                for r in plan.records
            ],
        )
    summary = plan.to_json()
    _emit(
        summary,
        as_json,
        [
            f"{plan.report.state.value}: {origin}",
            f"imported {len(plan.records)} into {mount.ring_id}; skipped "
            f"{len(plan.duplicate_id) + len(plan.duplicate_fingerprint)} duplicate(s); "
            f"quarantined {len(plan.quarantined)} foreign field-learned",
        ],
    )
