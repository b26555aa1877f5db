"""``engram memory export | import``: a seat's memories in and out as interchange documents.

One format today, Portable AI Memory (PAM) 1.0 (portable-ai-memory.org/spec/v1.0;
docs/spec/pam.md): ``engram memory export --format pam OUT.json`` writes a memory-store
document (integrity checksum, optional Ed25519 signature, incremental with ``--since`` or
``--base``); ``engram memory import --format pam IN.json`` checks a document whole (reading it
a memory at a time) and merges it into a ring. Both are thin adapters over
``engram.transfer.export_pam_file`` / ``import_pam_file``, which write and read the file a
memory at a time.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import click

from engram.cli._app import LazySubgroup, cli
from engram.cli._common import database_option, emit, json_option
from engram.cli._seat import ote_option, subject_option
from engram.errors import InvalidRequest

if TYPE_CHECKING:
    from engram.core.keys import PublicKey

FORMATS = ("pam",)


def _format_option(command: click.decorators.FC) -> click.decorators.FC:
    return click.option(
        "--format",
        "format_",
        type=click.Choice(FORMATS),
        default="pam",
        show_default=True,
        help="Interchange format: pam = Portable AI Memory 1.0.",
    )(command)


@cli.group("memory", cls=LazySubgroup)
def memory_group() -> None:
    """Memories in and out as Portable AI Memory (PAM) 1.0 documents; a memory's history."""


@contextlib.contextmanager
def _private_output(out: str) -> Iterator[TextIO]:
    """``out`` written whole or not at all, mode 0600 (a PAM file holds personal data)."""
    if out == "-":
        yield sys.stdout
        return
    target = Path(out)
    if not target.parent.is_dir():
        raise InvalidRequest(f"no such directory: {target.parent}")
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        Path(temporary).replace(target)
    except BaseException:
        with contextlib.suppress(OSError):
            Path(temporary).unlink()
        raise


def _trusted_key(text: str) -> PublicKey:
    """``--trusted-key``: a Multikey, a did:key, bare base58, or a public key PEM file."""
    from engram.core.keys import PublicKey
    from engram.transfer import read_pam_public_key

    path = Path(text)
    if path.is_file():
        return PublicKey.from_pem(path.read_bytes())
    return read_pam_public_key(text)


@memory_group.command("export")
@click.argument("out", metavar="OUT.json")
@_format_option
@click.option(
    "--ring", "rings", multiple=True, help="A mounted ring (M0-M4 or its id); repeat. Default: all."
)
@click.option("--owner", "owner_id", default=None, help="owner.id (default: the store's owner).")
@click.option(
    "--since",
    default=None,
    metavar="INSTANT",
    help="Incremental: only memories created or changed after this RFC 3339 instant.",
)
@click.option(
    "--base",
    "base_export_id",
    default=None,
    metavar="EXPORT_ID",
    help="Incremental: changes since this earlier export (its export_date unless --since).",
)
@click.option(
    "--sign-key",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Ed25519 private key (PEM or OpenSSH) to sign the document with (PAM §18).",
)
@ote_option
@database_option
@json_option
@subject_option
def export_command(
    out: str,
    format_: str,
    rings: tuple[str, ...],
    owner_id: str | None,
    since: str | None,
    base_export_id: str | None,
    sign_key: Path | None,
    ote: Path | None,
    database: str | None,
    subject: str | None,
    as_json: bool,
) -> None:
    """Write the seat's memories to OUT.json (- for stdout) as a PAM 1.0 document."""
    from engram.core.keys import load_private_key

    assert format_ in FORMATS  # click's Choice; PAM is the one format today
    from engram.cli._seat import seat_engine
    from engram.transfer import export_pam_file, parse_pam_instant

    key = load_private_key(sign_key) if sign_key else None
    cutoff = parse_pam_instant(since, "--since") if since is not None else None
    if as_json and out == "-":
        raise InvalidRequest("--json prints a summary on stdout; write the document to a file")
    with seat_engine(ote, database, subject=subject) as engine, _private_output(out) as stream:
        result = export_pam_file(
            engine,
            stream,
            rings=list(rings) or None,
            owner_id=owner_id,
            since=cutoff,
            base_export_id=base_export_id,
            sign_key=key,
        )

    def human() -> None:
        kept = f", {result.withheld} withheld (exportable: false)" if result.withheld else ""
        click.echo(
            f"exported {result.memories} memories ({result.export_type}){kept} to {out}",
            err=out == "-",
        )
        click.echo(f"export id: {result.export_id}", err=out == "-")
        click.echo(f"checksum:  {result.to_wire()['checksum']}", err=out == "-")
        click.echo(f"signed by: {result.signer or 'unsigned'}", err=out == "-")

    emit(result.to_wire(), as_json, human)


@memory_group.command("import")
@click.argument("source", metavar="IN.json")
@_format_option
@click.option("--ring", default="M4", show_default=True, help="Writable ring to import into.")
@click.option(
    "--trusted-key",
    "trusted_keys",
    multiple=True,
    metavar="KEY",
    help="Require a signature by this key (Multikey z6Mk…, did:key, base58 or a PEM file).",
)
@click.option(
    "--any-base",
    is_flag=True,
    help="Merge an incremental document whose base export this store has never seen.",
)
@ote_option
@database_option
@json_option
@subject_option
def import_command(
    source: str,
    format_: str,
    ring: str,
    trusted_keys: tuple[str, ...],
    any_base: bool,
    ote: Path | None,
    database: str | None,
    subject: str | None,
    as_json: bool,
) -> None:
    """Check IN.json (- for stdin) whole, then merge its memories into a ring."""
    assert format_ in FORMATS
    from engram.cli._seat import seat_engine
    from engram.transfer import import_pam_file, open_pam_file

    trusted = [_trusted_key(k) for k in trusted_keys]
    # Read (and its text checked) before the seat opens, a memory at a time (never whole).
    stream = sys.stdin.buffer if source == "-" else Path(source)
    with (
        open_pam_file(stream, name=source) as document,
        seat_engine(ote, database, subject=subject) as engine,
    ):
        result = import_pam_file(
            engine, document, ring=ring, trusted_keys=trusted, any_base=any_base
        )

    def human() -> None:
        click.echo(
            f"imported {source} into {result.ring_id}: {result.inserted} new, "
            f"{result.updated} updated, {result.unchanged} unchanged"
        )
        if result.withdrawn or result.reinstated:
            click.echo(
                f"recall: {result.withdrawn} withdrawn (retracted, superseded or archived), "
                f"{result.reinstated} served again"
            )
        signer = f" ({result.signer})" if result.signer else ""
        click.echo(f"signature: {result.signature}{signer}")
        if result.repeated:
            click.echo(f"export {result.export_id} had been imported here before")

    if result.owner_id != result.store_owner_id:
        click.echo(
            f"warning: the document's owner is {result.owner_id!r}; this store's is "
            f"{result.store_owner_id!r} (kept)",
            err=True,
        )
    emit(result.to_wire(), as_json, human)


__all__ = ["export_command", "import_command", "memory_group"]
