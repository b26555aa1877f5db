"""engram.oci: Agent Cartridges distributed through OCI registries (an adapter).

Spec: lboel/acx@85f1358 SPEC.md §11 (one OCI image manifest per cartridge, the DSSE envelope and
level credentials as referrers, the fallback tag), OCI Image Specification 1.1 and OCI
Distribution Specification 1.1, cosign's signature and attestation specs; our decisions are in
docs/spec/acx-oci.md. :func:`push_cartridge`, :func:`pull_cartridge`, :func:`discover` and
:func:`attach_level` work through a :class:`RegistryClient` (httpx, Basic and Bearer auth).
"""

from typing import TYPE_CHECKING

from engram.core.lazy import lazy_attributes as _lazy_attributes

# Names bind on first use (engram.core.lazy): `engram cartridge level --help` and every other
# command's help import none of this package's modules (issue 33).
if TYPE_CHECKING:
    from engram.oci._auth import Credentials
    from engram.oci._client import Referrers, RegistryClient
    from engram.oci._distribute import (
        Attached,
        Discovery,
        Pulled,
        Pushed,
        attach_level,
        discover,
        pull_cartridge,
        push_cartridge,
    )
    from engram.oci._errors import ArtifactRefused, BadReference, RegistryAuthFailed, RegistryError
    from engram.oci._reference import Reference, parse_reference

_LAZY: dict[str, str] = {
    "Credentials": "engram.oci._auth",
    "Referrers": "engram.oci._client",
    "RegistryClient": "engram.oci._client",
    "Attached": "engram.oci._distribute",
    "Discovery": "engram.oci._distribute",
    "Pulled": "engram.oci._distribute",
    "Pushed": "engram.oci._distribute",
    "attach_level": "engram.oci._distribute",
    "discover": "engram.oci._distribute",
    "pull_cartridge": "engram.oci._distribute",
    "push_cartridge": "engram.oci._distribute",
    "ArtifactRefused": "engram.oci._errors",
    "BadReference": "engram.oci._errors",
    "RegistryAuthFailed": "engram.oci._errors",
    "RegistryError": "engram.oci._errors",
    "Reference": "engram.oci._reference",
    "parse_reference": "engram.oci._reference",
}

__all__ = [
    "ArtifactRefused",
    "Attached",
    "BadReference",
    "Credentials",
    "Discovery",
    "Pulled",
    "Pushed",
    "Reference",
    "Referrers",
    "RegistryAuthFailed",
    "RegistryClient",
    "RegistryError",
    "attach_level",
    "discover",
    "parse_reference",
    "pull_cartridge",
    "push_cartridge",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
