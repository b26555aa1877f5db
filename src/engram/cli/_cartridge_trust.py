"""``engram cartridge trust add | list | remove``: a public-keys-only trust registry file
(acx.trust-registry/1, SPEC §4.4) kept by hand. Attached to ``engram cartridge`` through
``SUBCOMMAND_MODULES``; the library and cryptography load when a command runs.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._cartridge_options import now as clock_now
from engram.cli._common import EXISTING_FILE, emit, json_option, load_trust_registry_file
from engram.core.files import read_regular
from engram.errors import InvalidRequest

if TYPE_CHECKING:
    from engram.core.keys import PublicKey
    from engram.trust import TrustRegistry
    from engram.trust.internals import NamespaceProof

MAX_KEY_FILE_BYTES = 1 << 16
"""A PEM or OpenSSH key file is a few hundred bytes; anything this large is not one."""


@click.group("trust")
def trust_group() -> None:
    """Maintain a public-keys-only trust registry file (acx.trust-registry/1)."""


def _load_or_new(path: Path) -> TrustRegistry:
    from engram.trust import TrustRegistry

    return load_trust_registry_file(path) if path.exists() else TrustRegistry.empty()


def _public_key(path: Path) -> PublicKey:
    """A PEM SPKI key, an OpenSSH ``ssh-ed25519`` public key (``ssh-keygen``'s ``.pub``), or the
    public half of a private key file."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        load_ssh_public_key,
    )

    from engram.core.keys import PublicKey, load_private_key

    data = read_regular(path, limit=MAX_KEY_FILE_BYTES, what="key file")
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
    from engram.trust.internals import GITHUB_OIDC_ISSUER, NamespaceProof, ProofMethod

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
    type=EXISTING_FILE,
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
    from engram.trust import KeyStatus, TrustedKey, load_trust_registry

    now = clock_now().replace(microsecond=0)
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
@click.argument("registry", type=EXISTING_FILE)
@json_option
def trust_list(registry: Path, as_json: bool) -> None:
    """The keys in REGISTRY."""
    loaded = load_trust_registry_file(registry)
    emit(
        loaded.to_wire(),
        as_json,
        [
            f"{k.keyid}  {k.publisher_id}  {k.status.value}  until {k.not_after.date()}"
            for k in loaded.keys
        ]
        or ["(empty)"],
    )


@trust_group.command("remove")
@click.argument("registry", type=EXISTING_FILE)
@click.argument("keyid")
def trust_remove(registry: Path, keyid: str) -> None:
    """Remove KEYID from REGISTRY."""
    updated = load_trust_registry_file(registry).without_key(keyid)
    registry.write_bytes(updated.to_bytes())
    click.echo(f"removed {keyid} from {registry}")


COMMAND = trust_group

__all__ = ["trust_group"]
