"""``engram cartridge push | pull | discover | attach-level``: cartridges through OCI registries.

lboel/acx@85f1358 SPEC.md §11; docs/spec/acx-oci.md §8. Each command parses its arguments,
opens one :class:`engram.oci.RegistryClient` and calls one ``engram.oci`` function. Registry
credentials come from ``--username`` with ``--password-file``, or ``$ENGRAM_OCI_USERNAME`` with
``$ENGRAM_OCI_PASSWORD`` / ``$ENGRAM_OCI_PASSWORD_FILE``; a password is never taken on the
command line, where other users could read it. A loopback registry is spoken to over plain
HTTP, any other over HTTPS unless ``--plain-http``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from engram.cli._common import emit, json_option, read_token_file, trust_registry_option
from engram.cli._level_keys import attach_check, level_check_options
from engram.cli._settings import settings
from engram.core.files import read_regular
from engram.errors import InvalidRequest
from engram.oci.internals import DEFAULT_MAX_LAYER

if TYPE_CHECKING:
    from engram.oci import Reference, RegistryClient
    from engram.trust import TrustRegistry

F = TypeVar("F", bound=Callable[..., Any])
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def _connection(command: F) -> F:
    """``--username``, ``--password-file`` and ``--plain-http``, merged into ``connect``."""

    @functools.wraps(command)
    def merged(*args: Any, **kwargs: Any) -> Any:
        from engram.oci import Credentials, RegistryClient

        given = settings()
        username = kwargs.pop("username") or given.get("ENGRAM_OCI_USERNAME")
        password_file: Path | None = kwargs.pop("password_file")
        plain_http: bool = kwargs.pop("plain_http")
        password = None
        if password_file is not None:
            password = read_token_file(password_file, "--password-file")
        elif password_path := given.get("ENGRAM_OCI_PASSWORD_FILE"):
            password = read_token_file(Path(password_path), "$ENGRAM_OCI_PASSWORD_FILE")
        else:
            password = given.environ.get("ENGRAM_OCI_PASSWORD")
        if password is not None and not username:
            raise InvalidRequest("a registry password needs a --username")
        credentials = Credentials(username, password or "") if username else None

        def connect(reference: Reference) -> RegistryClient:
            return RegistryClient(
                reference.registry,
                plain_http=plain_http or reference.loopback,
                credentials=credentials,
            )

        kwargs["connect"] = connect
        return command(*args, **kwargs)

    decorated = click.option(
        "--plain-http", is_flag=True, help="Speak HTTP, not HTTPS (loopback registries always do)."
    )(merged)
    decorated = click.option(
        "--password-file",
        type=_FILE,
        default=None,
        help="The registry password, one line (default: $ENGRAM_OCI_PASSWORD[_FILE]).",
    )(decorated)
    return click.option(  # type: ignore[return-value]
        "--username", default=None, help="Registry user (default: $ENGRAM_OCI_USERNAME)."
    )(decorated)


def _how(via: str) -> str:
    return "referrers API" if via == "api" else "referrers tag"


def _now() -> datetime:
    return datetime.now(UTC)


@click.command("push")
@click.argument("file", type=_FILE)
@click.argument("target")
@click.option(
    "--level", "levels", multiple=True, type=_FILE, help="Also attach this level credential."
)
@click.option(
    "--cosign-key",
    type=_FILE,
    default=None,
    help="Also write cosign's .sig/.att tags, signed with this Ed25519 key.",
)
@level_check_options("The levels' status list (file or URL); default: each one's URL.")
@trust_registry_option
@_connection
@json_option
def push_command(
    file: Path,
    target: str,
    levels: tuple[Path, ...],
    cosign_key: Path | None,
    issuer_key: str | None,
    did_document: Path | None,
    status_list: str | None,
    trust_registry: TrustRegistry | None,
    connect: Callable[[Reference], RegistryClient],
    as_json: bool,
) -> None:
    """Push FILE.acx to REGISTRY/REPO:TAG as one OCI artifact, its signature and levels attached."""
    from engram.core.keys import load_private_key
    from engram.oci import parse_reference, push_cartridge

    reference = parse_reference(target, require_tag=True)
    key = load_private_key(cosign_key) if cosign_key else None
    with connect(reference) as client:
        pushed = push_cartridge(
            file,
            reference,
            client,
            trust=trust_registry,
            levels=[read_regular(p, what="level credential") for p in levels],
            level_check=attach_check(issuer_key, did_document, status_list),
            cosign_key=key,
            now=_now(),
        )
    lines = [
        f"pushed {pushed.reference.with_digest(pushed.manifest_digest)}",
        f"  layer {pushed.layer_digest} ({pushed.size} bytes"
        + ("" if pushed.uploaded else ", already there")
        + ")",
        f"  ROM manifest hash {pushed.rom_hash} (trust: {pushed.trust})",
        *(f"  referrer {r.artifact_type} {r.digest} ({_how(r.via)})" for r in pushed.referrers),
        *(f"  cosign {c.tag} {c.digest}" for c in pushed.cosign),
    ]
    emit(pushed.to_wire(), as_json, lines)


@click.command("pull")
@click.argument("source")
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write the verified cartridge into.",
)
@click.option(
    "--accept",
    multiple=True,
    type=click.Choice(["legacy", "portable", "trusted", "local"]),
    help="Trust states to accept (default: portable, trusted, local).",
)
@click.option("--force", is_flag=True, help="Replace a file of that name with other bytes.")
@click.option(
    "--max-bytes", type=click.IntRange(min=1), default=DEFAULT_MAX_LAYER, show_default=True
)
@trust_registry_option
@_connection
@json_option
def pull_command(
    source: str,
    out: Path,
    accept: tuple[str, ...],
    force: bool,
    max_bytes: int,
    trust_registry: TrustRegistry | None,
    connect: Callable[[Reference], RegistryClient],
    as_json: bool,
) -> None:
    """Pull a cartridge, check its manifest and layer digest, verify it, then write it to -o DIR."""
    from engram.oci import parse_reference, pull_cartridge
    from engram.oci.internals import DEFAULT_PULL_ACCEPT
    from engram.trust import TrustState

    reference = parse_reference(source)
    states = frozenset(TrustState(a) for a in accept) or DEFAULT_PULL_ACCEPT
    with connect(reference) as client:
        pulled = pull_cartridge(
            reference,
            out,
            client,
            trust=trust_registry,
            accept=states,
            now=_now(),
            max_layer_bytes=max_bytes,
            force=force,
        )
    lines = [
        f"pulled {pulled.reference.with_digest(pulled.manifest_digest)}",
        f"  wrote {pulled.path} ({pulled.size} bytes, layer {pulled.layer_digest})",
        f"  {pulled.trust}: {pulled.reason}",
        f"  ROM manifest hash {pulled.rom_hash}",
        *(f"  warning: {w}" for w in pulled.warnings),
    ]
    emit(pulled.to_wire(), as_json, lines)


@click.command("discover")
@click.argument("source")
@click.option("--artifact-type", default=None, help="Only referrers of this artifactType.")
@level_check_options("The levels' status list (file or URL); default: each one's URL.")
@_connection
@json_option
def discover_command(
    source: str,
    artifact_type: str | None,
    issuer_key: str | None,
    did_document: Path | None,
    status_list: str | None,
    connect: Callable[[Reference], RegistryClient],
    as_json: bool,
) -> None:
    """List a cartridge's referrers (DSSE signature, level credentials) and check each one."""
    from engram.oci import discover, parse_reference

    reference = parse_reference(source)
    with connect(reference) as client:
        found = discover(
            reference,
            client,
            artifact_type=artifact_type,
            level_check=attach_check(issuer_key, did_document, status_list),
        )
    how = _how(found.via)
    lines = [
        f"{found.reference.with_digest(found.digest)} (ROM {found.rom_hash})",
        f"  {len(found.referrers)} referrer(s), via the {how}",
    ]
    for r in found.referrers:
        lines.append(f"  {'ok ' if r.ok else 'BAD'} {r.artifact_type} {r.digest}")
        lines += [f"        {'ok' if h else 'FAILED'} {c}: {d}" for c, h, d in r.checks]
    lines += [f"  note: {n}" for n in found.notes]
    emit(found.to_wire(), as_json, lines)
    if not all(r.ok for r in found.referrers):
        raise click.exceptions.Exit(1)


@click.command("attach-level")
@click.argument("target")
@click.argument("credential", type=_FILE)
@level_check_options("Its status list credential (file or URL); default: its URL.")
@_connection
@json_option
def attach_level_command(
    target: str, credential: Path, issuer_key: str | None, did_document: Path | None,
    status_list: str | None, connect: Callable[[Reference], RegistryClient], as_json: bool,
) -> None:  # fmt: skip
    """Attach CRED.json, a level credential bound to the cartridge's ROM, as a referrer, once it
    verifies and is not revoked."""
    from engram.oci import attach_level, parse_reference

    reference = parse_reference(target)
    data = read_regular(credential, what="level credential")
    check = attach_check(issuer_key, did_document, status_list)
    with connect(reference) as client:
        attached = attach_level(reference, data, client, check=check)
    how = _how(attached.via)
    value = {"artifactType": attached.artifact_type, "digest": attached.digest, "via": attached.via}
    emit(value, as_json, f"attached {attached.artifact_type} {attached.digest} ({how})")


__all__ = ["attach_level_command", "discover_command", "pull_command", "push_command"]
