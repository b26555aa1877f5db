"""``engram workflow lint | ready | sign | verify | inspect | digest``: ACX Workflows.

lboel/acx@85f1358 SPEC.md §14 and docs/spec/acx-workflows.md §"Command line". Each command reads
one ``.cal.json`` file, calls :mod:`engram.workflow` and renders a table (``--json`` for the
machine form). A verdict that does not hold (lint errors, not ready, a signature that is not
sound) exits 1 after printing its report; an unreadable file is an error line and exit 2.
None of these commands runs a task, a verification command or a RAC check.

The helpers here (reading a document, the trust registry and own keys, the lint table, the
signature table) are shared with ``engram graph`` (``cli/_graph.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from engram.cli._app import LazySubgroup, cli
from engram.cli._common import F, trust_registry_option
from engram.core.canonical import Json, JsonObject
from engram.core.clock import SystemClock
from engram.core.files import read_regular
from engram.core.jsonio import dumps_text
from engram.core.keys import load_private_key
from engram.level import envelope_file_name, pinned_fetch
from engram.trust import TrustRegistry, TrustRegistryError, load_trust_registry
from engram.workflow import (
    MAX_DOCUMENT_BYTES,
    ArtifactCheck,
    CartridgeOffer,
    DocumentError,
    LevelCredential,
    LevelOutcome,
    LintReport,
    ReadyReport,
    Verification,
    check_workflow,
    find_cartridges,
    lint_workflow,
    load_workflow,
    prove_levels,
    read_cartridge_offer,
    read_offers,
    ready,
    sign_workflow,
    verify_workflow,
    workflow_card,
    workflow_digest,
)

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
MAX_CREDENTIAL_BYTES = 1 << 24
DIRECTORY = click.Path(exists=True, file_okay=False, path_type=Path)


def _cell(value: object) -> str:
    """A table cell for a JSON member: empty for null or absent, else its text."""
    return "" if value is None else str(value)


def read_bytes(path: Path) -> bytes:
    """At most the document limit of a regular file (a FIFO or a huge file is refused unread)."""
    return read_regular(path, limit=MAX_DOCUMENT_BYTES, what="document", error=DocumentError)


def read_registry(path: Path | None) -> TrustRegistry | None:
    if path is None:
        return None
    data = read_regular(path, what="trust registry", error=TrustRegistryError)
    return load_trust_registry(data)


def own_keyids(paths: Iterable[Path]) -> frozenset[str]:
    return frozenset(load_private_key(p).public_key().key_id for p in paths)


def console() -> Console:
    # Piped output gets wide tables rather than rich's 80 columns: rule ids and digests stay on
    # one line for grep.
    width = None if sys.stdout.isatty() else 160
    # markup=False: every string shown comes from a document, and "[red]" in a description
    # must print as itself, not restyle the table. Styles are given as Text objects instead.
    return Console(soft_wrap=False, highlight=False, markup=False, width=width)


def emit_json(value: Json) -> None:
    click.echo(dumps_text(value, indent=2))


def lint_table(report: LintReport, what: str) -> Table:
    """One row per issue: severity, rule id, path, message."""
    title = f"{what}: {'valid' if report.ok else 'INVALID'}"
    table = Table(title=title, title_justify="left", show_lines=False)
    for column in ("", "rule", "where", "what"):
        table.add_column(column, overflow="fold")
    for issue in report.issues:
        mark = Text("✗", "red") if issue.severity == "error" else Text("!", "yellow")
        table.add_row(mark, issue.rule, issue.path, issue.message)
    return table


def print_lint(report: LintReport, what: str) -> None:
    out = console()
    if report.issues:
        out.print(lint_table(report, what))
    else:
        out.print(f"{what}: valid, no issues")


def verification_table(verification: Verification, title: str) -> Table:
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column("", style="bold")
    table.add_column("", overflow="fold")
    colour = {"tampered": "red", "unsigned": "yellow", "portable": "yellow"}.get(
        verification.verdict, "green"
    )
    table.add_row("verdict", Text(verification.verdict, colour))
    table.add_row("reason", verification.reason)
    table.add_row("digest", verification.digest)
    for label, value in (
        ("publisher", verification.publisher_id),
        ("keyid", verification.keyid),
        ("signed at", verification.signed_at),
    ):
        if value:
            table.add_row(label, value)
    for warning in verification.warnings:
        table.add_row("warning", warning)
    return table


def report_check(check: ArtifactCheck, what: str, as_json: bool) -> None:
    """Print ``verify``'s answer; exit 1 unless the signature holds and lint --publish passes."""
    if as_json:
        emit_json(check.to_wire())
    else:
        out = console()
        out.print(verification_table(check.verification, f"{what} signature"))
        if check.lint.issues:
            out.print(lint_table(check.lint, f"{what} publishable profile"))
    if not check.ok:
        raise click.exceptions.Exit(1)


def lint_command(
    load: Callable[[bytes, str], JsonObject],
    lint: Callable[[JsonObject, bool], LintReport],
    file: Path,
    publish: bool,
    as_json: bool,
) -> None:
    document = load(read_bytes(file), str(file))
    report = lint(document, publish)
    if as_json:
        emit_json(report.to_wire())
    else:
        print_lint(report, f"{file}{' (publish profile)' if publish else ''}")
    if not report.ok:
        raise click.exceptions.Exit(1)


def sign_options(command: F) -> F:
    """FILE, --publisher, --sign-key and -o, shared by ``workflow sign`` and ``graph sign``."""
    for option in reversed(
        [
            click.argument("file", type=FILE),
            click.option("--publisher", required=True, help="Reverse-DNS publisherId."),
            click.option("--sign-key", required=True, type=FILE, help="Ed25519 private key."),
            click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path)),
        ]
    ):
        command = option(command)
    return command


def sign_file(
    load: Callable[[bytes, str], JsonObject],
    sign: Callable[..., Json],
    file: Path,
    publisher: str,
    sign_key: Path,
    out: Path | None,
) -> None:
    """Load FILE, sign it with the key file for ``publisher`` now, write it to -o or stdout."""
    document = load(read_bytes(file), str(file))
    signed = sign(
        document, load_private_key(sign_key), publisher_id=publisher, signed_at=SystemClock().now()
    )
    write_signed(signed, out)


def write_signed(document: Json, out: Path | None) -> None:
    text = dumps_text(document, indent=2, sort_keys=False) + "\n"
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}", err=True)


def _load(data: bytes, what: str) -> JsonObject:
    return load_workflow(data, what=what)


def _lint(document: JsonObject, publish: bool) -> LintReport:
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
@trust_registry_option("registry", "--registry")
@click.option(
    "--credentials",
    type=DIRECTORY,
    help="Folder of level credentials (*.json) and their evidence (*.dsse.json).",
)
@click.option(
    "--issuers", type=FILE, help="Trust registry of level issuers (needed with --credentials)."
)
@click.option(
    "--status-list", help="The credentials' status list (file or URL); default: each one's URL."
)
@click.option("--json", "as_json", is_flag=True)
def ready_cmd(
    file: Path, cartridges: Path | None, registry: Path | None, credentials: Path | None,
    issuers: Path | None, status_list: str | None, as_json: bool,
) -> None:  # fmt: skip
    """Verify the signature, then staff every participant from --cartridges; exit 1 if not ready.

    A slot's minLevel is met only by a level a credential in --credentials proves: verified
    under a key --issuers publishes, bound to that cartridge's ROM, status bit read and clear,
    evidence replayed.
    """
    if credentials is not None and issuers is None:
        raise click.UsageError("--credentials needs --issuers (the level issuers' trust registry)")
    document = load_workflow(read_bytes(file), what=str(file))
    trust, now = read_registry(registry), SystemClock().now()
    verification = verify_workflow(document, registry=trust, now=now)

    def reader(path: Path) -> CartridgeOffer:
        return read_cartridge_offer(path, registry=trust, now=now)

    # Cartridges are read only after the workflow's own signature has been decided.
    offers, unreadable = (
        read_offers(find_cartridges(cartridges), reader) if cartridges else ([], [])
    )
    outcomes: list[LevelOutcome] = []
    if credentials is not None and issuers is not None:
        issuer_registry = read_registry(issuers)
        assert issuer_registry is not None
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
    def lookup(link: str) -> bytes | None:
        name = envelope_file_name(link)
        path = folder / name if name else None
        if path is None or not path.is_file():
            return None
        return read_regular(path, limit=MAX_CREDENTIAL_BYTES, what="evidence")

    return lookup


def _print_ready(report: ReadyReport, file: Path, cartridges: Path | None) -> None:
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
            cells = [_cell(item.get(name)) for name in ("id", "kind")]
            table.add_row(mark, *cells, hint, _cell(item.get("description")))
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
    sign_file(_load, sign_workflow, file, publisher, sign_key, out)


@workflow_group.command("verify")
@click.argument("file", type=FILE)
@trust_registry_option("registry", "--registry")
@click.option("--own-key", "own_keys", multiple=True, type=FILE, help="This host's own key.")
@click.option("--json", "as_json", is_flag=True)
def verify_cmd(
    file: Path, registry: Path | None, own_keys: tuple[Path, ...], as_json: bool
) -> None:
    """Recompute the digest and check every signature binding; exit 1 unless sound and valid."""
    document = load_workflow(read_bytes(file), what=str(file))
    check = check_workflow(
        document,
        registry=read_registry(registry),
        now=SystemClock().now(),
        local_keyids=own_keyids(own_keys),
    )
    report_check(check, str(file), as_json)


@workflow_group.command("inspect")
@click.argument("file", type=FILE)
@trust_registry_option("registry", "--registry")
@click.option("--json", "as_json", is_flag=True)
def inspect_cmd(file: Path, registry: Path | None, as_json: bool) -> None:
    """Show the discovery card: identity, team, tasks, context, safety, digest and trust."""
    document = load_workflow(read_bytes(file), what=str(file))
    verification = verify_workflow(
        document, registry=read_registry(registry), now=SystemClock().now()
    )
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
    click.echo(workflow_digest(load_workflow(read_bytes(file), what=str(file))))


__all__ = [
    "DIRECTORY",
    "FILE",
    "emit_json",
    "lint_command",
    "own_keyids",
    "print_lint",
    "read_bytes",
    "read_registry",
    "report_check",
    "sign_file",
    "sign_options",
    "verification_table",
    "workflow_group",
    "write_signed",
]
