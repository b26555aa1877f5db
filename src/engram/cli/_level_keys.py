"""Issuer keys for a level credential, and the check ``cartridge attach-level`` and
``cartridge push --level`` make before a credential reaches a registry. A shared CLI helper:
``engram cartridge level`` and the OCI commands both use it, neither imports the other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._common import EXISTING_FILE, F
from engram.core.canonical import parse_object
from engram.core.clock import SystemClock
from engram.core.files import read_regular
from engram.errors import InvalidRequest

if TYPE_CHECKING:
    from engram.core.keys import PublicKey
    from engram.level import KeyResolver, LevelReport

CLOCK = SystemClock()
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)


def _existing_location(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A URL as given; a path (or ``file://`` URL) must name a file that exists: a mistyped
    path is a usage error (exit 2), not a status check that fails closed."""
    if value is None or (_URL.match(value) and not value.lower().startswith("file://")):
        return value
    path = Path(value[len("file://") :] if value.lower().startswith("file://") else value)
    if not path.exists():
        raise click.BadParameter(f"File {str(path)!r} does not exist.", ctx, param)
    return value


def status_list_option(help_text: str) -> Callable[[F], F]:
    """``--status-list FILE|URL``: where a credential's status list is read instead of the URL
    it names (``level verify``, ``workflow ready``, ``attach-level``)."""
    return click.option("--status-list", help=help_text, callback=_existing_location)


def issuer_public_key(text: str) -> PublicKey:
    from engram.core.keys import PublicKey
    from engram.level.internals import MAX_FETCH_BYTES, public_from_multikey

    if text.startswith("z6Mk"):
        return public_from_multikey(text)
    data = read_regular(Path(text), limit=MAX_FETCH_BYTES, what="issuer key")
    if b"PRIVATE KEY" in data:
        raise InvalidRequest(f"{text}: give the issuer's public key, not a private key")
    return PublicKey.from_pem(data)


def key_resolver(
    issuer_key: str | None, did_document: Path | None, credential: Mapping[str, object]
) -> KeyResolver:
    """Keys for the credential's verification method: given ones, then a DID document's."""
    from engram.level import did_document_resolver, static_resolver
    from engram.level.internals import MAX_FETCH_BYTES

    proof = credential.get("proof")
    method = proof.get("verificationMethod") if isinstance(proof, dict) else None
    known: dict[str, PublicKey] = {}
    if isinstance(method, str) and issuer_key:
        known[method] = issuer_public_key(issuer_key)
    fallback = static_resolver({})  # did:key, else "not known to this verifier"
    if did_document is not None:
        data = read_regular(did_document, limit=MAX_FETCH_BYTES, what="DID document")
        document = parse_object(data, what=str(did_document), error=InvalidRequest)
        fallback = did_document_resolver(document)

    def resolve(vm: str) -> PublicKey:
        return known[vm] if vm in known else fallback(vm)

    return resolve


def attach_check(
    issuer_key: str | None, did_document: Path | None, status_list: str | None
) -> Callable[[bytes, str], LevelReport]:
    """What ``cartridge attach-level``, ``push --level`` and ``discover`` ask of a level
    credential: it verifies (by the key given, the DID document's, or its did:key) and is not
    revoked (its status list read from ``status_list``, else from the URL it names)."""
    from engram.level import require_verified
    from engram.level.internals import pinned_fetch

    status_fetch = pinned_fetch(status_list)

    def check(data: bytes, rom_digest: str) -> LevelReport:
        try:
            document = parse_object(data, what="level credential", error=InvalidRequest)
        except InvalidRequest:
            document = {}
        resolve = key_resolver(issuer_key, did_document, document)
        return require_verified(
            data, rom_digest=rom_digest, resolve=resolve, now=CLOCK.now(), status_fetch=status_fetch
        )

    return check


def level_check_options(status_help: str) -> Callable[[F], F]:
    """``--issuer-key``, ``--did-document`` and ``--status-list``: how a command that handles
    level credentials verifies them (:func:`attach_check`)."""

    def decorate(command: F) -> F:
        command = status_list_option(status_help)(command)
        command = click.option(
            "--did-document", type=EXISTING_FILE, help="The issuer's DID document (did:web)."
        )(command)
        return click.option(
            "--issuer-key", help="The issuer's public key: PEM file or z6Mk multikey."
        )(command)

    return decorate


__all__ = [
    "attach_check",
    "issuer_public_key",
    "key_resolver",
    "level_check_options",
    "status_list_option",
]
