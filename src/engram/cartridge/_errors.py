"""The cartridge's own refusals, each a leaf of the one engram error tree (``engram.errors``).

Spec: lboel/acx@85f1358 SPEC.md §4.5, §7.5, §8.5; docs/spec/acx.md §"Errors". A file that
is not a well-formed cartridge is :class:`engram.errors.CartridgeFormatError`; the classes here
name the other ways an operation on a well-formed file is refused, so the CLI and the wire can
tell them apart by ``code``.
"""

from __future__ import annotations

from engram.core.canonical import JsonObject
from engram.errors import CartridgeFormatError, ConflictError, InputError, VerificationError


class LegacyLayout(CartridgeFormatError):
    """The file is an engram cartridge in the layout engram wrote before SPEC.md alignment."""

    code = "legacy_cartridge_layout"


class ScrubBlocked(InputError):
    """The fail-closed scrub gate found secret-like content; nothing was signed or written."""

    code = "scrub_blocked"


class TrustRegistryError(InputError):
    """A trust registry is malformed or holds private key material."""

    code = "invalid_trust_registry"


class CartridgeTampered(VerificationError):
    """Live ROM bytes no longer match what the stored index or the signature vouches for."""

    code = "cartridge_tampered"


class UntrustedCartridge(VerificationError):
    """The cartridge verified, but its trust state is not one the caller accepts."""

    code = "untrusted_cartridge"

    def __init__(self, message: str, *, counts_as: str | None = None) -> None:
        super().__init__(message)
        self.counts_as = counts_as
        """The trust state it was judged in (a portable file whose signature was not checked
        counts as ``legacy``), so a command can say which option would accept it."""


class ActivationRefused(ConflictError):
    """The host cannot meet the cartridge's signed harness requirements (§8.5 handshake)."""

    code = "activation_refused"

    def __init__(
        self,
        message: str,
        *,
        descriptor: JsonObject | None = None,
        error: JsonObject | None = None,
    ) -> None:
        super().__init__(message)
        self.descriptor = descriptor
        """The §8.5 compliance descriptor (verdict ``refuse``)."""
        self.error = error
        """MCP's JSON-RPC error: ``{code: -32602, message: "Unsupported harness", data}``."""


__all__ = [
    "ActivationRefused",
    "CartridgeTampered",
    "LegacyLayout",
    "ScrubBlocked",
    "TrustRegistryError",
    "UntrustedCartridge",
]
