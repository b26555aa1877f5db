"""``engram cartridge``: export, inspect, verify, strip, spec, ls, check, load, import, activate,
keygen, trust, upgrade, card.

lboel/acx@85f1358 SPEC.md §3-§8 and the reference CLI's verbs; docs/spec/acx.md §13. Each command
parses its arguments, calls one function of ``engram.cartridge``, ``engram.trust`` or
``engram.transfer`` and renders the result. ``verify`` exits 1 when the cartridge is tampered;
``check`` and ``activate`` exit 1 on a refused handshake.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_ssh_public_key,
)

from engram.cartridge import (
    COMPLIANCE_FILE,
    DEFAULT_ACCEPT,
    HOST_SKILL_DIRS,
    ActivationRefused,
    Cartridge,
    ExportOptions,
    Host,
    HostTool,
    Limits,
    Rom,
    activate,
    agent_card,
    check_host,
    derive_skills,
    export_records,
    harness_of,
    harness_problems,
    install_skills,
    package_contents,
    require_state,
    roster,
    set_memories,
    spec_report,
    strip,
    upgrade,
    verify_rom,
    write,
)
from engram.cli._app import LazySubgroup, cli
from engram.cli._common import F, database_option, trust_registry_option
from engram.core.canonical import Json, JsonObject, parse_object
from engram.core.jsonio import dumps_text
from engram.core.keys import PrivateKey, PublicKey, load_private_key, save_private_key
from engram.errors import InvalidRequest, KeyFileError
from engram.trust import (
    GITHUB_OIDC_ISSUER,
    KeyStatus,
    NamespaceProof,
    ProofMethod,
    TrustedKey,
    TrustRegistry,
    TrustState,
    load_trust_registry,
)

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_ACCEPT = click.Choice(["legacy", "portable", "trusted", "local"])


@cli.group("cartridge", cls=LazySubgroup)
def cartridge_group() -> None:
    """Agent Cartridges (.acx): signed SQLite files carrying skills, memory and a harness."""


def _now() -> datetime:
    return datetime.now(UTC)


def _local(paths: Iterable[Path]) -> frozenset[str]:
    return frozenset(load_private_key(p).public_key().key_id for p in paths)


def _emit(value: object, as_json: bool, lines: Iterable[str]) -> None:
    if as_json:
        click.echo(dumps_text(value, indent=2))
    else:
        for line in lines:
            click.echo(line)


def _accept(values: tuple[str, ...]) -> frozenset[TrustState]:
    return frozenset(TrustState(a) for a in values) or DEFAULT_ACCEPT


def _intact(file: Path) -> Rom:
    """The verified ROM of ``file``; a tampered cartridge is refused before anyone acts on it."""
    with Cartridge.open(file) as cartridge:
        report, rom = verify_rom(cartridge)
    require_state(report, frozenset(TrustState) - {TrustState.TAMPERED})
    return rom


def _salt(path: Path | None) -> bytes | None:
    # §7.2 makes the salt raw key bytes: a trailing 0x0a is one of them, never stripped.
    return None if path is None else path.read_bytes()


local_key_option = click.option(
    "--local-key", "local_keys", multiple=True, type=_FILE, help="This host's own signing key."
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


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
@click.option("--ote", type=click.Path(dir_okay=False, path_type=Path), default=None)
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
    import tempfile

    key = load_private_key(sign_key) if sign_key else None
    now = _now()
    options = ExportOptions(
        publisher,
        now,
        include_field_learned=include_field_learned,
        installation_salt=_salt(installation_salt_file),
        artifact_id=artifact_id,
        artifact_version=artifact_version,
        default_skill=package is not None,
    )
    with tempfile.TemporaryDirectory() as tmp:
        source = package
        if source is None:
            if ring is None:
                raise InvalidRequest("give an agent package directory, --ring, or both")
            source = Path(tmp)
            name = artifact_id or out.stem.lower()
            (source / "manifest.json").write_text(dumps_text({"name": name}), encoding="utf-8")
        contents, quarantined = package_contents(source, options)
    if ring is not None:
        from engram.cli._seat import seat_engine
        from engram.transfer import ring_records

        with seat_engine(ote, database) as engine:
            raw = ring_records(engine, ring)
        records, more = export_records(raw, options)
        quarantined += more
        set_memories(contents, [*contents.memories, *records])
    built = write(out, contents, key=key, signed_at=now)
    click.echo(f"cartridge id:   {built.cartridge_id}")
    click.echo(f"rom hash:       {built.manifest_hash}")
    click.echo(f"keyid:          {built.keyid or 'unsigned (legacy)'}")
    click.echo(f"memories:       {built.memories} ({quarantined} field-learned quarantined)")
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
    with Cartridge.open(file) as cartridge:
        report, _rom = verify_rom(
            cartridge, registry=trust_registry, local_keyids=_local(local_keys)
        )
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
    _emit(report.to_wire(), as_json, lines)
    if report.state is TrustState.TAMPERED:
        raise click.exceptions.Exit(1)


@cartridge_group.command("inspect")
@click.argument("file", type=_FILE)
@json_option
def inspect_command(file: Path, as_json: bool) -> None:
    """Meta, ROM objects, skills, capabilities, memory by zone and attestations."""
    with Cartridge.open(file) as cartridge:
        report, rom = verify_rom(cartridge)
        attestations = cartridge.query(
            "SELECT att_id, type, media_type FROM attestations NOT INDEXED"
        )
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
        "attestations": [{"id": a, "type": t, "mediaType": m} for a, t, m in attestations],
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
        [f"  - {a} ({t})" for a, t, _m in attestations] or ["  (none)"]
    )
    lines += ["== trust ==", f"  {report.state.value}: {report.reason}"]
    _emit(value, as_json, lines)


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
    with Cartridge.open(file) as cartridge:
        _report, rom = verify_rom(cartridge)
        levels = cartridge.query(
            "SELECT count(*) FROM attestations NOT INDEXED WHERE type = 'vc-2.0'"
        )
    result = spec_report(rom, level_count=int(str(levels[0][0])))
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
    _emit(result.to_wire(), as_json, lines)
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
    _emit([r.to_wire() for r in lines_], as_json, rows if lines_ else ["no cartridges found"])


def _host(
    tools: tuple[str, ...],
    all_tools: bool,
    rom: Rom,
    revisions: tuple[str, ...],
    context_window: int,
    tool_use: bool,
    host_file: Path | None,
) -> Host:
    if host_file is not None:
        return _host_descriptor(host_file)
    harness, _ = harness_of(rom)
    contracts = {
        t["name"]: t
        for t in [*(harness.get("requiredTools") or []), *(harness.get("optionalTools") or [])]
    }
    chosen: list[HostTool] = []
    names = [n.strip() for t in tools for n in t.split(",") if n.strip()]
    if all_tools:
        names = list(contracts)
    for spec in names:
        name, _, scopes = spec.partition("=")
        granted = (
            frozenset(s for s in scopes.split("+") if s)
            if scopes
            else frozenset((contracts.get(name) or {}).get("capabilityScopes") or ())
        )
        chosen.append(HostTool(name, granted))
    return Host(
        protocol_revisions=revisions or ("2025-11-25",),
        tools=tuple(chosen),
        tool_use=tool_use,
        context_window_tokens=context_window,
        filesystem={"read": ["**"]},
    )


def _host_descriptor(host_file: Path) -> Host:
    """The ``--host-descriptor`` file: a member that is absent or null takes its default; one of
    the wrong type is refused (InvalidRequest, naming it) rather than coerced."""
    doc = parse_object(host_file.read_bytes(), what=str(host_file), error=InvalidRequest)

    def member(parent: JsonObject, name: str, kind: type[object], what: str) -> Json:
        value = parent.get(name)
        # bool is an int to isinstance; JSON keeps true/false and numbers apart.
        fits = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
        if value is not None and not fits:
            raise InvalidRequest(f"{host_file}: {what} must be {_KINDS[kind]}")
        return value

    def section(name: str) -> JsonObject:
        value = member(doc, name, dict, name)
        return value if isinstance(value, dict) else {}

    def strings(parent: JsonObject, name: str, what: str) -> tuple[str, ...]:
        value = member(parent, name, list, what)
        items = value if isinstance(value, list) else []
        if not all(isinstance(item, str) for item in items):
            raise InvalidRequest(f"{host_file}: {what} must be an array of strings")
        return tuple(str(item) for item in items)

    tools: list[HostTool] = []
    listed = member(doc, "tools", list, "tools")
    for index, tool in enumerate(listed if isinstance(listed, list) else []):
        where = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise InvalidRequest(f"{host_file}: {where} must be an object")
        name = tool.get("name")
        if not isinstance(name, str):
            raise InvalidRequest(f"{host_file}: {where}.name must be a string")
        schema = member(tool, "inputSchema", dict, f"{where}.inputSchema")
        tools.append(
            HostTool(
                name,
                frozenset(strings(tool, "scopes", f"{where}.scopes")),
                schema if isinstance(schema, dict) else None,
            )
        )
    model, network = section("model"), section("network")
    tool_use = member(model, "toolUse", bool, "model.toolUse")
    window = member(model, "contextWindowTokens", int, "model.contextWindowTokens")
    egress = member(network, "egress", str, "network.egress")
    filesystem = section("filesystem")
    return Host(
        protocol_revisions=strings(doc, "protocolRevisions", "protocolRevisions"),
        tools=tuple(tools),
        tool_use=tool_use if isinstance(tool_use, bool) else True,
        context_window_tokens=window if isinstance(window, int) else 200000,
        filesystem={name: strings(filesystem, name, f"filesystem.{name}") for name in filesystem},
        network_egress=egress if isinstance(egress, str) else "none",
    )


_KINDS: dict[type[object], str] = {
    bool: "true or false",
    dict: "an object",
    int: "an integer",
    list: "an array",
    str: "a string",
}


def _host_options(command: F) -> F:
    for option in reversed(
        [
            click.option(
                "--tools", "tools", multiple=True, help="Host tools: NAME[=SCOPE+SCOPE],..."
            ),
            click.option("--all-tools", is_flag=True, help="The host has every declared tool."),
            click.option(
                "--mcp-revision", "revisions", multiple=True, help="MCP revisions the host speaks."
            ),
            click.option("--context-window", default=200_000, show_default=True, type=int),
            click.option("--tool-use/--no-tool-use", default=True, show_default=True),
            click.option(
                "--host-descriptor", "host_file", type=_FILE, help="Host capabilities as JSON."
            ),
        ]
    ):
        command = option(command)
    return command


@cartridge_group.command("check")
@click.argument("file", type=_FILE)
@_host_options
@json_option
def check_command(
    file: Path,
    tools: tuple[str, ...],
    all_tools: bool,
    revisions: tuple[str, ...],
    context_window: int,
    tool_use: bool,
    host_file: Path | None,
    as_json: bool,
) -> None:
    """Harness preflight: would this host accept FILE's signed requirements? (writes nothing)"""
    rom = _intact(file)
    host = _host(tools, all_tools, rom, revisions, context_window, tool_use, host_file)
    descriptor: dict[str, Any] = check_host(rom, host)  # engram's own descriptor shape
    lines = [f"verdict: {descriptor['verdict']}"]
    lines += [
        f"  {b['role']:<18} -> {b['boundTool'] or '(unbound)'}  "
        f"{'ok' if b['satisfied'] else 'UNMET'}"
        for b in descriptor["bindings"]
    ]
    lines += [f"  unmet: {u}" for u in descriptor["unmet"]]
    _emit(descriptor, as_json, lines)
    if descriptor["verdict"] != "accept":
        raise click.exceptions.Exit(1)


@cartridge_group.command("activate")
@click.argument("file", type=_FILE)
@_host_options
@trust_registry_option
@local_key_option
@click.option(
    "--accept",
    "accept",
    multiple=True,
    type=_ACCEPT,
    help="Trust states to accept (default: trusted, local).",
)
@json_option
def activate_command(
    file: Path,
    tools: tuple[str, ...],
    all_tools: bool,
    revisions: tuple[str, ...],
    context_window: int,
    tool_use: bool,
    host_file: Path | None,
    trust_registry: TrustRegistry | None,
    local_keys: tuple[Path, ...],
    accept: tuple[str, ...],
    as_json: bool,
) -> None:
    """The §8.5 handshake; only an accepted one writes SAVE (save/harness-compliance.json)."""
    rom = _intact(file)
    host = _host(tools, all_tools, rom, revisions, context_window, tool_use, host_file)
    try:
        done = activate(
            file,
            host,
            registry=trust_registry,
            local_keyids=_local(local_keys),
            accept=_accept(accept),
        )
    except ActivationRefused as e:
        if as_json and e.error is not None:
            click.echo(dumps_text({"descriptor": e.descriptor, "error": e.error}, indent=2))
            raise click.exceptions.Exit(1) from e
        raise
    _emit(
        done.descriptor,
        as_json,
        [
            f"activated ({done.report.state.value}): verdict accept, "
            f"MCP {done.descriptor['protocolRevision']}",
            f"recorded in {COMPLIANCE_FILE}",
        ],
    )


@cartridge_group.command("load")
@click.argument("file", type=_FILE)
@click.option(
    "--host",
    "host",
    type=click.Choice(sorted(HOST_SKILL_DIRS)),
    default="claude",
    show_default=True,
)
@click.option(
    "--skills-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Default: the host's skills folder.",
)
@click.option("--print-only", is_flag=True, help="List what would be installed; write nothing.")
@trust_registry_option
@click.option(
    "--accept",
    "accept",
    multiple=True,
    type=_ACCEPT,
    help="Trust states to accept (default: any but tampered).",
)
def load_command(
    file: Path,
    host: str,
    skills_dir: Path | None,
    print_only: bool,
    trust_registry: TrustRegistry | None,
    accept: tuple[str, ...],
) -> None:
    """Install FILE's skills where HOST looks for them, byte for byte."""
    with Cartridge.open(file) as cartridge:
        report, rom = verify_rom(cartridge, registry=trust_registry)
    require_state(
        report, _accept(accept) if accept else frozenset(set(TrustState) - {TrustState.TAMPERED})
    )
    target = (skills_dir or Path(HOST_SKILL_DIRS[host])).expanduser()
    skills = derive_skills(rom.files)
    if print_only:
        for s in skills:
            click.echo(f"{s.name}: {target / s.name}")
        return
    written = install_skills(rom, target)
    click.echo(
        f"{report.state.value}: installed {len(skills)} skill(s), {len(written)} file(s) "
        f"into {target}"
    )


@cartridge_group.command("import")
@click.argument("file", type=_FILE)
@click.option("--ring", default="M4", show_default=True, help="Writable ring to import into.")
@trust_registry_option
@local_key_option
@click.option(
    "--accept",
    "accept",
    multiple=True,
    type=_ACCEPT,
    help="Trust states to accept (default: trusted, local).",
)
@click.option(
    "--codebase-fingerprint",
    default=None,
    help="This repo's cbf1_ fingerprint (field-learned memory of it is imported).",
)
@json_option
@click.option("--ote", type=click.Path(dir_okay=False, path_type=Path), default=None)
@database_option
def import_command(
    file: Path,
    ring: str,
    trust_registry: TrustRegistry | None,
    local_keys: tuple[Path, ...],
    accept: tuple[str, ...],
    codebase_fingerprint: str | None,
    as_json: bool,
    ote: Path | None,
    database: str | None,
) -> None:
    """Verify FILE, apply the trust decision and merge its memories idempotently into a ring."""
    from engram.cli._seat import seat_engine
    from engram.transfer import import_cartridge

    local = _local(local_keys)  # bad input fails before the store opens
    with seat_engine(ote, database) as engine:
        summary = import_cartridge(
            engine,
            file,
            ring=ring,
            codebase_fingerprint=codebase_fingerprint,
            registry=trust_registry,
            local_keyids=local,
            accept=_accept(accept),
        )
    report = summary.report
    _emit(
        summary.to_wire(),
        as_json,
        [
            f"{report.state.value}: {report.publisher_id}/{report.artifact_id}"
            f"@{report.artifact_version}",
            f"imported {summary.imported} into {summary.ring_id}; "
            f"{summary.already_known} already known; {summary.merged} merged duplicate(s); "
            f"{summary.quarantined} foreign field-learned quarantined",
        ],
    )


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


@cartridge_group.group("trust")
def trust_group() -> None:
    """Maintain a public-keys-only trust registry file (acx.trust-registry/1)."""


def _load_or_new(path: Path) -> TrustRegistry:
    return load_trust_registry(path.read_bytes()) if path.exists() else TrustRegistry.empty()


def _public_key(path: Path) -> PublicKey:
    """A PEM SPKI key, an OpenSSH ``ssh-ed25519`` public key (``ssh-keygen``'s ``.pub``), or the
    public half of a private key file."""
    data = path.read_bytes()
    if b"PRIVATE KEY" in data:
        return load_private_key(path).public_key()
    if data.lstrip().startswith(b"ssh-"):
        try:
            key = load_ssh_public_key(data.strip())
        except (ValueError, UnsupportedAlgorithm) as e:
            raise InvalidRequest(f"{path}: not an OpenSSH public key") from e
        if not isinstance(key, Ed25519PublicKey):
            raise InvalidRequest(f"{path}: not an Ed25519 key (ssh-keygen -t ed25519)")
        return PublicKey.from_raw(key.public_bytes(Encoding.Raw, PublicFormat.Raw))
    return PublicKey.from_pem(data)


def _proof(text: str, at: datetime) -> NamespaceProof:
    method, _, value = text.partition(":")
    if method == "dns-txt":
        record = value if value.startswith("_acx-challenge.") else f"_acx-challenge.{value}"
        return NamespaceProof(ProofMethod.DNS_TXT, at, txt_record=record)
    if method == "github-oidc":
        return NamespaceProof(
            ProofMethod.GITHUB_OIDC, at, oidc_subject=value, oidc_issuer=GITHUB_OIDC_ISSUER
        )
    raise InvalidRequest("--proof is dns-txt:<domain> or github-oidc:repo:<owner>/<repo>:<ref>")


@trust_group.command("add")
@click.argument("registry", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--key",
    "key_path",
    required=True,
    type=_FILE,
    help="Public key PEM (or the private key file; only its public half is used).",
)
@click.option("--publisher", required=True, help="Reverse-DNS publisher id the key signs for.")
@click.option(
    "--proof",
    required=True,
    help="dns-txt:<domain> or github-oidc:repo:<owner>/<repo>:<ref> (as verified).",
)
@click.option("--days", default=365, show_default=True, type=int, help="Validity from now.")
def trust_add(registry: Path, key_path: Path, publisher: str, proof: str, days: int) -> None:
    """Add a publisher key to REGISTRY (created if missing)."""
    now = _now().replace(microsecond=0)
    public = _public_key(key_path)
    entry = TrustedKey(
        keyid=public.key_id,
        publisher_id=publisher,
        public_key=public,
        status=KeyStatus.ACTIVE,
        not_before=now - timedelta(days=1),
        not_after=now + timedelta(days=days),
        namespace_proof=_proof(proof, now - timedelta(days=1)),
    )
    updated = _load_or_new(registry).with_key(entry)
    load_trust_registry(updated.to_bytes())  # what we write must load (and hold no private key)
    registry.write_bytes(updated.to_bytes())
    click.echo(f"added {public.key_id} for {publisher} to {registry}")


@trust_group.command("list")
@click.argument("registry", type=_FILE)
@json_option
def trust_list(registry: Path, as_json: bool) -> None:
    """The keys in REGISTRY."""
    loaded = load_trust_registry(registry.read_bytes())
    _emit(
        loaded.to_wire(),
        as_json,
        [
            f"{k.keyid}  {k.publisher_id}  {k.status.value}  until {k.not_after.date()}"
            for k in loaded.keys
        ]
        or ["(empty)"],
    )


@trust_group.command("remove")
@click.argument("registry", type=_FILE)
@click.argument("keyid")
def trust_remove(registry: Path, keyid: str) -> None:
    """Remove KEYID from REGISTRY."""
    updated = load_trust_registry(registry.read_bytes()).without_key(keyid)
    registry.write_bytes(updated.to_bytes())
    click.echo(f"removed {keyid} from {registry}")


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
    done = upgrade(
        old,
        new,
        key=load_private_key(sign_key),
        now=_now(),
        installation_salt=_salt(installation_salt_file),
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
    rom = _intact(file)
    records = [rom.capability(cid) for cid in rom.capabilities]
    click.echo(dumps_text(agent_card(meta=rom.signed_meta, records=records, url=url), indent=2))


__all__ = ["Limits", "cartridge_group", "harness_problems"]
