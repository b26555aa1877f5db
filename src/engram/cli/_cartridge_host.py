"""``engram cartridge check | activate | import``: a cartridge meets a host (§8.5) and a store
(SPEC §7, docs/spec/acx.md §13); ``load`` is ``_cartridge_load``.

``check`` and ``activate`` describe the host from ``--tools``/``--all-tools`` and friends, or
from a ``--host-descriptor`` file that :func:`engram.cartridge.load_host_descriptor` reads;
``check`` and ``activate`` exit 1 on a refused handshake. Attached to ``engram cartridge``
through ``SUBCOMMAND_MODULES``; the library loads when a command runs, not for its help.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engram.cli._cartridge_options import (
    ACCEPT_CHOICE,
    accepted,
    intact_rom,
    local_key_option,
    local_keyids,
    way_out_of_refusal,
)
from engram.cli._common import (
    EXISTING_FILE,
    F,
    database_option,
    emit,
    json_option,
    trust_registry_option,
)
from engram.cli._seat import ote_option
from engram.core.files import read_regular
from engram.core.jsonio import dumps_text

if TYPE_CHECKING:
    from engram.cartridge import Host, Rom
    from engram.trust import TrustRegistry


def _host(
    tools: tuple[str, ...],
    all_tools: bool,
    rom: Rom,
    revisions: tuple[str, ...],
    context_window: int,
    tool_use: bool,
    host_file: Path | None,
) -> Host:
    from engram.cartridge import Host, HostTool, load_host_descriptor
    from engram.cartridge.internals import harness_of

    if host_file is not None:
        return load_host_descriptor(read_regular(host_file, what="host descriptor"), str(host_file))
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
                "--host-descriptor",
                "host_file",
                type=EXISTING_FILE,
                help="Host capabilities as JSON.",
            ),
        ]
    ):
        command = option(command)
    return command


@click.command("check")
@click.argument("file", type=EXISTING_FILE)
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
    from engram.cartridge import check_host

    rom = intact_rom(file)
    host = _host(tools, all_tools, rom, revisions, context_window, tool_use, host_file)
    descriptor: dict[str, Any] = check_host(rom, host)  # engram's own descriptor shape
    lines = [f"verdict: {descriptor['verdict']}"]
    lines += [
        f"  {b['role']:<18} -> {b['boundTool'] or '(unbound)'}  "
        f"{'ok' if b['satisfied'] else 'UNMET'}"
        for b in descriptor["bindings"]
    ]
    lines += [f"  unmet: {u}" for u in descriptor["unmet"]]
    emit(descriptor, as_json, lines)
    if descriptor["verdict"] != "accept":
        raise click.exceptions.Exit(1)


@click.command("activate")
@click.argument("file", type=EXISTING_FILE)
@_host_options
@trust_registry_option
@local_key_option
@click.option(
    "--accept",
    "accept",
    multiple=True,
    type=ACCEPT_CHOICE,
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
    from engram.cartridge import ActivationRefused, activate
    from engram.cartridge.internals import COMPLIANCE_FILE

    rom = intact_rom(file)
    host = _host(tools, all_tools, rom, revisions, context_window, tool_use, host_file)
    try:
        done = activate(
            file,
            host,
            registry=trust_registry,
            local_keyids=local_keyids(local_keys),
            accept=accepted(accept),
        )
    except ActivationRefused as e:
        if as_json and e.error is not None:
            click.echo(dumps_text({"descriptor": e.descriptor, "error": e.error}, indent=2))
            raise click.exceptions.Exit(1) from e
        raise
    emit(
        done.descriptor,
        as_json,
        [
            f"activated ({done.report.state.value}): verdict accept, "
            f"MCP {done.descriptor['protocolRevision']}",
            f"recorded in {COMPLIANCE_FILE}",
        ],
    )


@click.command("import")
@click.argument("file", type=EXISTING_FILE)
@click.option("--ring", default="M4", show_default=True, help="Writable ring to import into.")
@trust_registry_option
@local_key_option
@click.option(
    "--accept",
    "accept",
    multiple=True,
    type=ACCEPT_CHOICE,
    help="Trust states to accept (default: trusted, local).",
)
@click.option(
    "--codebase-fingerprint",
    default=None,
    help="This repo's cbf1_ fingerprint (field-learned memory of it is imported).",
)
@json_option
@ote_option
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

    local = local_keyids(local_keys)  # bad input fails before the store opens
    with seat_engine(ote, database) as engine, way_out_of_refusal():
        summary = import_cartridge(
            engine,
            file,
            ring=ring,
            codebase_fingerprint=codebase_fingerprint,
            registry=trust_registry,
            local_keyids=local,
            accept=accepted(accept),
        )
    report = summary.report
    emit(
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


__all__ = ["activate_command", "check_command", "import_command"]
