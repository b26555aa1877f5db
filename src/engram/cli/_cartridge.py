"""``engram cartridge``: export, inspect, verify, strip, spec, ls, keygen, upgrade, card; and,
from their own modules (``SUBCOMMAND_MODULES``), check, activate, load and import
(``_cartridge_host``), trust (``_cartridge_trust``), level, policy, push, pull, discover,
attach-level and new.

lboel/acx@85f1358 SPEC.md §3-§8 and the reference CLI's verbs; docs/spec/acx.md §13. Each command
parses its arguments, calls one function of ``engram.cartridge``, ``engram.trust`` or
``engram.transfer`` and renders the result; the library loads when a command runs, not for its
help (issue 33). ``verify`` exits 1 when the cartridge is tampered.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._app import LazySubgroup, cli
from engram.cli._cartridge_options import (
    intact_rom,
    local_key_option,
    local_keyids,
    salt,
)
from engram.cli._cartridge_options import now as clock_now
from engram.cli._common import (
    EXISTING_FILE,
    database_option,
    emit,
    json_option,
    trust_registry_option,
)
from engram.cli._seat import ote_option
from engram.core.jsonio import dumps_text
from engram.errors import InvalidRequest, KeyFileError

if TYPE_CHECKING:
    from engram.core.canonical import JsonObject
    from engram.trust import TrustRegistry

_FILE = EXISTING_FILE


@cli.group("cartridge", cls=LazySubgroup)
def cartridge_group() -> None:
    """Agent Cartridges (.acx): signed SQLite files carrying skills, memory and a harness."""


@cartridge_group.command("export")
@click.argument(
    "package", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path))
@click.option("--publisher", required=True, help="Reverse-DNS publisher id (io.github.alice).")
@click.option("--sign-key", type=_FILE, help="Ed25519 private key (engram cartridge keygen).")
@click.option("--include-field-learned", is_flag=True, help="Ship field-learned memory (SAVE).")
@click.option("--installation-salt-file", type=_FILE, help=">= 256-bit org secret (§7.2).")
@click.option("--artifact-id", default=None)
@click.option("--artifact-version", default=None)
@click.option("--ring", default=None, help="Also export this ring's memories (M2, M3, M4).")
@ote_option
@database_option
def export_command(
    package: Path | None,
    out: Path,
    publisher: str,
    sign_key: Path | None,
    include_field_learned: bool,
    installation_salt_file: Path | None,
    artifact_id: str | None,
    artifact_version: str | None,
    ring: str | None,
    ote: Path | None,
    database: str | None,
) -> None:
    """Build a signed cartridge from an agent package directory (and/or a ring's memories)."""
    from contextlib import ExitStack

    from engram.cartridge import ExportOptions
    from engram.core.keys import load_private_key
    from engram.transfer import export_cartridge

    key = load_private_key(sign_key) if sign_key else None
    options = ExportOptions(
        publisher,
        clock_now(),
        include_field_learned=include_field_learned,
        installation_salt=salt(installation_salt_file),
        artifact_id=artifact_id,
        artifact_version=artifact_version,
        default_skill=package is not None,
    )
    with ExitStack() as stack:
        engine = None
        if ring is not None:
            from engram.cli._seat import seat_engine

            engine = stack.enter_context(seat_engine(ote, database))
        done = export_cartridge(out, options, package=package, engine=engine, ring=ring, key=key)
    built = done.built
    click.echo(f"cartridge id:   {built.cartridge_id}")
    click.echo(f"rom hash:       {built.manifest_hash}")
    click.echo(f"keyid:          {built.keyid or 'unsigned (legacy)'}")
    click.echo(f"memories:       {built.memories} ({done.quarantined} field-learned quarantined)")
    click.echo(f"wrote:          {out}")


@cartridge_group.command("verify")
@click.argument("file", type=_FILE)
@trust_registry_option
@local_key_option
@json_option
def verify_command(
    file: Path, trust_registry: TrustRegistry | None, local_keys: tuple[Path, ...], as_json: bool
) -> None:
    """The §4.5 trust state (tampered, legacy, portable, trusted, local); exit 1 if tampered."""
    from engram.cartridge import Cartridge, verify
    from engram.trust import TrustState

    with Cartridge.open(file) as cartridge:
        report = verify(cartridge, registry=trust_registry, local_keyids=local_keyids(local_keys))
    lines = [
        f"status:   {report.status}",
        f"trust:    {report.state.value}",
        f"summary:  {report.reason}",
        f"manifest: {report.manifest_hash}",
        f"keyid:    {report.keyid or '-'}",
        f"signedAt: {report.to_wire()['signedAt'] or '-'}",
    ]
    lines += [f"warning:  {w}" for w in report.warnings]
    lines += [f"issue:    {p}" for p in report.problems[:20]]
    emit(report.to_wire(), as_json, lines)
    if report.state is TrustState.TAMPERED:
        raise click.exceptions.Exit(1)


@cartridge_group.command("inspect")
@click.argument("file", type=_FILE)
@json_option
def inspect_command(file: Path, as_json: bool) -> None:
    """Meta, ROM objects, skills, capabilities, memory by zone and attestations."""
    from engram.cartridge import Cartridge, derive_skills, verify_rom
    from engram.cartridge.internals import list_attestations

    with Cartridge.open(file) as cartridge:
        report, rom = verify_rom(cartridge)
        attestations = list_attestations(cartridge)
    skills = derive_skills(rom.files)
    kinds: dict[str, int] = {}
    for obj in rom.objects:
        kinds[obj.kind] = kinds.get(obj.kind, 0) + 1
    zones: dict[str, int] = {}
    for m in rom.memories.values():
        zones[m.zone] = zones.get(m.zone, 0) + 1
    caps = {cid: rom.capability(cid) for cid in rom.capabilities}
    signed = rom.signed_meta
    value = {
        "trust": report.to_wire(),
        "meta": {k: {"value": v, "signed": k in signed} for k, v in sorted(rom.meta.items())},
        "romObjects": {"total": len(rom.objects), "byKind": kinds},
        "skills": [s.to_wire() for s in skills],
        "capabilities": list(caps.values()),
        "memory": zones,
        "attestations": [a.to_wire() for a in attestations],
    }
    lines = ["== meta =="]
    lines += [
        f"  {k} = {v}{'' if k in signed else '  (unsigned)'}" for k, v in sorted(rom.meta.items())
    ]
    lines += [
        "== ROM objects ==",
        f"  total: {len(rom.objects)}  ("
        + ", ".join(f"{k}:{n}" for k, n in sorted(kinds.items()))
        + ")",
    ]
    lines += ["== skills (acx_skill) =="] + [f"  - {s.name}: {s.description[:100]}" for s in skills]
    lines += ["== capabilities =="] + [_capability_line(c) for c in caps.values()]
    lines += ["== memory (by zone) =="] + [f"  {z}: {n}" for z, n in sorted(zones.items())]
    lines += ["== attestations =="] + (
        [f"  - {a.att_id} ({a.type})" for a in attestations] or ["  (none)"]
    )
    lines += ["== trust ==", f"  {report.state.value}: {report.reason}"]
    emit(value, as_json, lines)


def _capability_line(record: JsonObject) -> str:
    # inspect shows a tampered cartridge too, so a member the schema requires may be missing.
    stack, proficiency = record.get("stack"), record.get("proficiency")
    names = "+".join(str(s) for s in stack) if isinstance(stack, list) else ""
    verified = proficiency.get("verified") if isinstance(proficiency, dict) else None
    return f"  - {record.get('taskType')}[{names}]  verified={str(verified).lower()} (unproven)"


@cartridge_group.command("strip")
@click.argument("file", type=_FILE)
@click.argument("target", required=False, type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path))
def strip_command(file: Path, target: Path | None, out: Path | None) -> None:
    """Copy FILE without its SAVE zone and prove the ROM hash is unchanged (§3.4)."""
    from engram.cartridge import strip

    destination = out or target
    if destination is None:
        raise InvalidRequest("strip needs an output: engram cartridge strip FILE OUT.acx")
    result = strip(file, destination)
    click.echo(f"rom hash before strip: {result.before}")
    click.echo(f"rom hash after  strip: {result.after}")
    proof = "EQUAL (ROM intact; SAVE removed)" if result.equal else "DIFFERENT"
    click.echo(f"hash-equality proof:   {proof}")
    click.echo(f"wrote:                 {destination}")
    if not result.equal:
        raise click.exceptions.Exit(1)


@cartridge_group.command("spec")
@click.argument("file", type=_FILE)
@json_option
def spec_command(file: Path, as_json: bool) -> None:
    """Validate the closed acx.package-spec/1 profile and every artifact it names (§7.7)."""
    from engram.cartridge import Cartridge, spec_report, verify_rom
    from engram.cartridge.internals import level_count

    with Cartridge.open(file) as cartridge:
        _report, rom = verify_rom(cartridge)
        levels = level_count(cartridge)
    result = spec_report(rom, level_count=levels)
    lines = []
    if result.spec is not None:
        engine = dumps_text(result.spec.get("embeddingEngine"))
        lines.append(f"package-spec: {result.spec.get('schemaVersion')}  engine={engine}")
        lines.append("artifacts:")
        listed = result.spec.get("artifacts")
        for a in listed if isinstance(listed, list) else []:
            if isinstance(a, dict):
                mark = "*" if a.get("required") else " "
                role, schema = a.get("role", ""), a.get("schema", "")
                lines.append(f"  {mark} {role:<16} {schema:<28} {a.get('kind')}")
    lines.append("validation: CLEAN" if result.clean else "validation: NOT CLEAN")
    lines += [f"  - {i}" for i in result.issues]
    emit(result.to_wire(), as_json, lines)
    if not result.clean:
        raise click.exceptions.Exit(1)


@cartridge_group.command("ls")
@click.argument(
    "directory",
    required=False,
    default=".",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@trust_registry_option
@json_option
def ls_command(directory: Path, trust_registry: TrustRegistry | None, as_json: bool) -> None:
    """A roster of the cartridges in DIRECTORY (recursively), each verified."""
    from engram.cartridge import roster

    lines_ = roster(directory, registry=trust_registry)
    rows = [f"{'TRUST':<9} {'ARTIFACT':<28} {'VERSION':<9} {'PUBLISHER':<24} SKILLS MEM  FILE"]
    for r in lines_:
        if r.error:
            rows.append(f"{'error':<9} {r.error[:80]}  {r.path}")
        else:
            rows.append(
                f"{r.state:<9} {r.artifact:<28} {r.version:<9} {r.publisher:<24} "
                f"{r.skills:>6} {r.memories:>3}  {r.path}"
            )
    emit([r.to_wire() for r in lines_], as_json, rows if lines_ else ["no cartridges found"])


@cartridge_group.command("keygen")
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Private key file (written 0600).",
)
def keygen_command(out: Path) -> None:
    """A publisher key pair: OUT (private, 0600) and OUT.pub (SPKI PEM, for trust registries)."""
    from engram.core.keys import PrivateKey, save_private_key

    if out.suffix == ".acx":
        raise KeyFileError(
            "a private key never goes into or beside-as a cartridge: choose a .pem path"
        )
    key = PrivateKey.generate()
    save_private_key(out, key)
    public = Path(f"{out}.pub")
    public.write_bytes(key.public_key().to_pem())
    click.echo(f"keyid:       {key.public_key().key_id}")
    click.echo(f"private key: {out} (0600; keep it out of git and out of every cartridge)")
    click.echo(f"public key:  {public}")


@cartridge_group.command("upgrade")
@click.argument("old", type=_FILE)
@click.argument("new", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--sign-key", required=True, type=_FILE, help="Ed25519 private key to sign the re-packed ROM."
)
@click.option("--installation-salt-file", type=_FILE, help="Carry field-learned memory (§7.2).")
def upgrade_command(
    old: Path, new: Path, sign_key: Path, installation_salt_file: Path | None
) -> None:
    """Re-pack a cartridge of engram's earlier layout into the SPEC.md format (re-signed)."""
    from engram.cartridge import upgrade
    from engram.core.keys import load_private_key

    done = upgrade(
        old,
        new,
        key=load_private_key(sign_key),
        now=clock_now(),
        installation_salt=salt(installation_salt_file),
    )
    click.echo(f"rom hash:  {done.built.manifest_hash}")
    click.echo(f"keyid:     {done.built.keyid}")
    click.echo(f"memories:  {done.carried} carried, {done.left_out} field-learned left out")
    click.echo(f"wrote:     {new}")


@cartridge_group.command("card")
@click.argument("file", type=_FILE)
@click.option("--url", required=True, help="Where the agent's A2A JSON-RPC endpoint is served.")
def card_command(file: Path, url: str) -> None:
    """The A2A AgentCard (agent-card.json) of FILE's capability records (§6.3)."""
    from engram.cartridge.internals import agent_card

    rom = intact_rom(file)
    records = [rom.capability(cid) for cid in rom.capabilities]
    click.echo(dumps_text(agent_card(meta=rom.signed_meta, records=records, url=url), indent=2))


__all__ = ["cartridge_group"]
