"""What the ACX document commands share (``engram workflow``, ``engram graph``): reading a
document, a trust registry and own keys; the lint and signature tables; signing a file. A shared
CLI helper (no command of its own), so neither command module imports the other.

Tables go through :func:`console`: piped, they are wide and never wrap a cell (ids, digests and
rule names stay whole on one line for grep); in a terminal rich fits them to the window.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._common import F, rich_console
from engram.core.canonical import Json, JsonObject
from engram.core.clock import SystemClock
from engram.core.files import read_regular
from engram.core.jsonio import dumps_text

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from engram.trust import TrustRegistry
    from engram.workflow import LintReport, Verification
    from engram.workflow.internals import ArtifactCheck

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
MAX_CREDENTIAL_BYTES = 1 << 24
DIRECTORY = click.Path(exists=True, file_okay=False, path_type=Path)


def cell(value: object) -> str:
    """A table cell for a JSON member: empty for null or absent, else its text."""
    return "" if value is None else str(value)


def read_bytes(path: Path) -> bytes:
    """At most the document limit of a regular file (a FIFO or a huge file is refused unread)."""
    from engram.workflow import DocumentError
    from engram.workflow.internals import MAX_DOCUMENT_BYTES

    return read_regular(path, limit=MAX_DOCUMENT_BYTES, what="document", error=DocumentError)


def read_registry(path: Path | None) -> TrustRegistry | None:
    if path is None:
        return None
    from engram.trust import TrustRegistryError, load_trust_registry

    data = read_regular(path, what="trust registry", error=TrustRegistryError)
    return load_trust_registry(data)


def own_keyids(paths: Iterable[Path]) -> frozenset[str]:
    from engram.core.keys import load_private_key

    return frozenset(load_private_key(p).public_key().key_id for p in paths)


def console() -> Console:
    # markup=False: every string shown comes from a document, and "[red]" in a description
    # must print as itself, not restyle the table. Styles are given as Text objects instead.
    return rich_console(markup=False)


def emit_json(value: Json) -> None:
    click.echo(dumps_text(value, indent=2))


def lint_table(report: LintReport, what: str) -> Table:
    """One row per issue: severity, rule id, path, message."""
    from rich.table import Table
    from rich.text import Text

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
    from rich.table import Table
    from rich.text import Text

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
    from engram.core.keys import load_private_key

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


__all__ = [
    "DIRECTORY",
    "FILE",
    "MAX_CREDENTIAL_BYTES",
    "cell",
    "console",
    "emit_json",
    "lint_command",
    "lint_table",
    "own_keyids",
    "print_lint",
    "read_bytes",
    "read_registry",
    "report_check",
    "sign_file",
    "sign_options",
    "verification_table",
    "write_signed",
]
