"""``engram workflow lint | ready | sign | verify | inspect | digest``: ACX Workflows.

lboel/acx@85f1358 SPEC.md §14 and docs/spec/acx-workflows.md §"Command line". Each command reads
one ``.cal.json`` file, calls :mod:`engram.workflow` and renders a table (``--json`` for the
machine form). A verdict that does not hold (lint errors, not ready, a signature that is not
sound) exits 1 after printing its report; an unreadable file is an error line and exit 2.
None of these commands runs a task, a verification command or a RAC check.

What ``engram graph`` shares with these commands (reading a document, the trust registry and own
keys, the lint and signature tables, signing) lives in ``cli/_acx_documents.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from engram.cli._acx_documents import (
    DIRECTORY,
    FILE,
    MAX_CREDENTIAL_BYTES,
    cell,
    console,
    emit_json,
    lint_command,
    lint_table,
    own_keyids,
    read_bytes,
    report_check,
    sign_file,
    sign_options,
    verification_table,
)
from engram.cli._app import LazySubgroup, cli
from engram.cli._common import load_trust_registry_file, trust_registry_option
from engram.cli._level_keys import status_list_option
from engram.core.canonical import JsonObject
from engram.core.clock import SystemClock
from engram.core.files import read_regular
from engram.core.jsonio import dumps_text

if TYPE_CHECKING:
    from engram.trust import TrustRegistry
    from engram.workflow import CartridgeOffer, LintReport, ReadyReport
    from engram.workflow.internals import LevelCredential, LevelOutcome


def _load(data: bytes, what: str) -> JsonObject:
    from engram.workflow import load_workflow

    return load_workflow(data, what=what)


def _lint(document: JsonObject, publish: bool) -> LintReport:
    from engram.workflow import lint_workflow

    return lint_workflow(document, publish=publish)


@cli.group("workflow", cls=LazySubgroup)
def workflow_group() -> None:
    """ACX Workflows (acx.cal/1): lint, staff from cartridges, sign, verify, inspect."""


@workflow_group.command("lint")
@click.argument("file", type=FILE)
@click.option("--publish", is_flag=True, help="Also require the publication profile (§14.1).")
@click.option("--json", "as_json", is_flag=True)
def lint_cmd(file: Path, publish: bool, as_json: bool) -> None:
    """Check portable structure (and with --publish the publication profile); exit 1 if invalid."""
    lint_command(_load, _lint, file, publish, as_json)


@workflow_group.command("ready")
@click.argument("file", type=FILE)
@click.option("--cartridges", type=DIRECTORY, help="Folder searched for *.acx cartridges.")
@trust_registry_option
@click.option(
    "--credentials",
    type=DIRECTORY,
    help="Folder of level credentials (*.json) and their evidence (*.dsse.json).",
)
@click.option(
    "--issuers", type=FILE, help="Trust registry of level issuers (needed with --credentials)."
)
@status_list_option("The credentials' status list (file or URL); default: each one's URL.")
@click.option("--json", "as_json", is_flag=True)
def ready_cmd(
    file: Path, cartridges: Path | None, trust_registry: TrustRegistry | None,
    credentials: Path | None, issuers: Path | None, status_list: str | None, as_json: bool,
) -> None:  # fmt: skip
    """Verify the signature, then staff every participant from --cartridges; exit 1 if not ready.

    A slot's minLevel is met only by a level a credential in --credentials proves: verified
    under a key --issuers publishes, bound to that cartridge's ROM, status bit read and clear,
    evidence replayed.
    """
    from engram.level.internals import pinned_fetch
    from engram.workflow import (
        find_cartridges,
        load_workflow,
        prove_levels,
        read_cartridge_offer,
        ready,
        verify_workflow,
    )
    from engram.workflow.internals import read_offers

    if credentials is not None and issuers is None:
        raise click.UsageError("--credentials needs --issuers (the level issuers' trust registry)")
    document = load_workflow(read_bytes(file), what=str(file))
    trust, now = trust_registry, SystemClock().now()
    verification = verify_workflow(document, registry=trust, now=now)

    def reader(path: Path) -> CartridgeOffer:
        return read_cartridge_offer(path, registry=trust, now=now)

    # Cartridges are read only after the workflow's own signature has been decided.
    offers, unreadable = (
        read_offers(find_cartridges(cartridges), reader) if cartridges else ([], [])
    )
    outcomes: list[LevelOutcome] = []
    if credentials is not None and issuers is not None:
        issuer_registry = load_trust_registry_file(issuers)
        offers, outcomes = prove_levels(
            offers,
            level_credentials(credentials),
            issuers=issuer_registry,
            now=now,
            status_fetch=pinned_fetch(status_list),
        )
    report = ready(
        document, offers, verification=verification, unreadable=unreadable, levels=outcomes
    )
    if as_json:
        emit_json(report.to_wire())
    else:
        _print_ready(report, file, cartridges)
    if not report.ready:
        raise click.exceptions.Exit(1)


MAX_CREDENTIALS = 10_000


def level_credentials(folder: Path) -> list[LevelCredential]:
    """Each ``*.json`` under ``folder`` but ``*.dsse.json`` (evidence), sorted, bounded, read
    through :func:`read_regular`; evidence is looked up beside each credential."""
    from engram.workflow import DocumentError
    from engram.workflow.internals import LevelCredential

    found: list[LevelCredential] = []
    for path in sorted(folder.rglob("*.json")):
        if path.name.endswith(".dsse.json") or path.is_symlink() or not path.is_file():
            continue
        if len(found) >= MAX_CREDENTIALS:
            raise DocumentError(f"more than {MAX_CREDENTIALS} credentials under {folder}")
        data = read_regular(path, limit=MAX_CREDENTIAL_BYTES, what="credential")
        found.append(LevelCredential(str(path), data, _evidence_beside(path.parent)))
    return found


def _evidence_beside(folder: Path) -> Callable[[str], bytes | None]:
    from engram.level.internals import envelope_file_name

    def lookup(link: str) -> bytes | None:
        name = envelope_file_name(link)
        path = folder / name if name else None
        if path is None or not path.is_file():
            return None
        return read_regular(path, limit=MAX_CREDENTIAL_BYTES, what="evidence")

    return lookup


def _print_ready(report: ReadyReport, file: Path, cartridges: Path | None) -> None:
    from rich.table import Table
    from rich.text import Text

    out = console()
    out.print(verification_table(report.verification, f"{file} signature"))
    if report.lint.issues:
        out.print(lint_table(report.lint, "structure"))
    if report.staffing:
        roster = f"roster {cartridges}" if cartridges else "no --cartridges given"
        table = Table(title=f"staffing ({roster})", title_justify="left")
        for column in ("participant", "bind", "cartridge", "trust", "why"):
            table.add_column(column, overflow="fold")
        for s in report.staffing:
            chosen = s.selected.label if s.selected else ("—" if s.required else "— (optional)")
            trust = s.selected.trust.value if s.selected else ""
            table.add_row(s.alias, s.bind, chosen, trust, s.reason)
        out.print(table)
    if report.rac:
        table = Table(
            title="required available context (a host checks these)", title_justify="left"
        )
        for column in ("", "id", "kind", "check", "description"):
            table.add_column(column, overflow="fold")
        for item in report.rac:
            check = item.get("check")
            hint = ""
            if isinstance(check, dict):
                hint = f"{check.get('type', '')} {check.get('hint', '')}".strip()
            mark = "□" if item.get("required") else "·"
            cells = [cell(item.get(name)) for name in ("id", "kind")]
            table.add_row(mark, *cells, hint, cell(item.get("description")))
        out.print(table)
    if report.levels:
        table = Table(title="level credentials", title_justify="left")
        for column in ("credential", "cartridge", "level", "why"):
            table.add_column(column, overflow="fold")
        for o in report.levels:
            level = f"{o.level.acx_level} {o.level.career_tier or ''}".strip() if o.level else "—"
            table.add_row(o.source, o.cartridge or "—", level, o.reason)
        out.print(table)
    for line in report.approvals:
        out.print(Text.assemble(("approval", "yellow"), " ", line))
    for line in [*report.warnings, *report.unreadable]:
        out.print(Text.assemble(("warning", "yellow"), " ", line))
    if report.ready:
        out.print(Text.assemble(("ready", "green"), ": every required participant is staffed"))
    else:
        out.print(Text("not ready:", "red"))
        for line in report.missing:
            out.print(f"  - {line}")


@workflow_group.command("sign")
@sign_options
def sign_cmd(file: Path, publisher: str, sign_key: Path, out: Path | None) -> None:
    """Sign a publishable workflow (acx.workflow-signature/1); write it to -o or stdout."""
    from engram.workflow import sign_workflow

    sign_file(_load, sign_workflow, file, publisher, sign_key, out)


@workflow_group.command("verify")
@click.argument("file", type=FILE)
@trust_registry_option
@click.option("--own-key", "own_keys", multiple=True, type=FILE, help="This host's own key.")
@click.option("--json", "as_json", is_flag=True)
def verify_cmd(
    file: Path, trust_registry: TrustRegistry | None, own_keys: tuple[Path, ...], as_json: bool
) -> None:
    """Recompute the digest and check every signature binding; exit 1 unless sound and valid."""
    from engram.workflow import check_workflow, load_workflow

    document = load_workflow(read_bytes(file), what=str(file))
    check = check_workflow(
        document,
        registry=trust_registry,
        now=SystemClock().now(),
        local_keyids=own_keyids(own_keys),
    )
    report_check(check, str(file), as_json)


@workflow_group.command("inspect")
@click.argument("file", type=FILE)
@trust_registry_option
@click.option("--json", "as_json", is_flag=True)
def inspect_cmd(file: Path, trust_registry: TrustRegistry | None, as_json: bool) -> None:
    """Show the discovery card: identity, team, tasks, context, safety, digest and trust."""
    from rich.table import Table
    from rich.text import Text

    from engram.workflow import load_workflow, verify_workflow
    from engram.workflow.internals import workflow_card

    document = load_workflow(read_bytes(file), what=str(file))
    verification = verify_workflow(document, registry=trust_registry, now=SystemClock().now())
    card: dict[str, Any] = workflow_card(document, verification)  # engram's own card shape
    if as_json:
        emit_json(card)
        return
    out = console()
    out.print(
        Text.assemble(
            (str(card["name"]), "bold"), f" {card['id']} {card['version'] or '(unversioned)'}"
        )
    )
    out.print(verification_table(verification, "signature"))
    team = Table(title="participants", title_justify="left")
    for column in ("alias", "bind", "constraints"):
        team.add_column(column, overflow="fold")
    for p in card["participants"]:
        constraint = p["romDigest"] or (dumps_text(p["slot"]) if p["slot"] else "")
        team.add_row(p["alias"] + ("" if p["required"] else " (optional)"), p["bind"], constraint)
    out.print(team)
    tasks = Table(title="tasks", title_justify="left")
    for column in ("task", "agent", "completion", "side effects", "approval", "action"):
        tasks.add_column(column, overflow="fold")
    for t in card["tasks"]:
        tasks.add_row(t["id"], t["agent"], t["completion"], t["sideEffects"], t["approval"],
                      t["action"] or "")  # fmt: skip
    out.print(tasks)
    out.print(f"capabilities: {', '.join(card['capabilities']) or 'none'}")
    out.print(f"skills: {', '.join(card['skills']) or 'none'}")
    out.print(f"RAC: {', '.join(r['id'] for r in card['rac']) or 'none'}")
    out.print(f"limits: {dumps_text(card['limits']) if card['limits'] else 'none'}")


@workflow_group.command("digest")
@click.argument("file", type=FILE)
def digest_cmd(file: Path) -> None:
    """Print the JCS digest (sha256 of the document without its integrity block)."""
    from engram.workflow import load_workflow, workflow_digest

    click.echo(workflow_digest(load_workflow(read_bytes(file), what=str(file))))


__all__ = ["workflow_group"]
