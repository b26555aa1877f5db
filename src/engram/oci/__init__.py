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
    from engram.oci._auth import Credentials, RegistryAuth, parse_challenge
    from engram.oci._client import Fetched, Referrers, RegistryClient, sha256_digest
    from engram.oci._cosign import attestation_statement, sign_and_attest, simple_signing_payload
    from engram.oci._distribute import (
        DEFAULT_PULL_ACCEPT,
        Attached,
        Discovery,
        Pulled,
        Pushed,
        Referrer,
        attach_level,
        attach_referrer,
        discover,
        pull_cartridge,
        push_cartridge,
    )
    from engram.oci._errors import ArtifactRefused, BadReference, RegistryAuthFailed, RegistryError
    from engram.oci._limits import DEFAULT_MAX_LAYER
    from engram.oci._manifest import (
        Built,
        CartridgeLayer,
        cartridge_manifest,
        check_cartridge_manifest,
        referrer_manifest,
    )
    from engram.oci._media import (
        CARTRIDGE_ARTIFACT,
        CARTRIDGE_LAYER,
        DSSE_ENVELOPE,
        EMPTY_DIGEST,
        IMAGE_INDEX,
        IMAGE_MANIFEST,
        LEVEL_ARTIFACT,
        ROM_HASH_ANNOTATION,
        SPEC_VERSION_ANNOTATION,
        TITLE_ANNOTATION,
        VC_MEDIA_TYPE,
        referrers_tag,
    )
    from engram.oci._reference import Reference, parse_reference

_LAZY: dict[str, str] = {
    "Credentials": "engram.oci._auth",
    "RegistryAuth": "engram.oci._auth",
    "parse_challenge": "engram.oci._auth",
    "Fetched": "engram.oci._client",
    "Referrers": "engram.oci._client",
    "RegistryClient": "engram.oci._client",
    "sha256_digest": "engram.oci._client",
    "attestation_statement": "engram.oci._cosign",
    "sign_and_attest": "engram.oci._cosign",
    "simple_signing_payload": "engram.oci._cosign",
    "DEFAULT_MAX_LAYER": "engram.oci._limits",
    "DEFAULT_PULL_ACCEPT": "engram.oci._distribute",
    "Attached": "engram.oci._distribute",
    "Discovery": "engram.oci._distribute",
    "Pulled": "engram.oci._distribute",
    "Pushed": "engram.oci._distribute",
    "Referrer": "engram.oci._distribute",
    "attach_level": "engram.oci._distribute",
    "attach_referrer": "engram.oci._distribute",
    "discover": "engram.oci._distribute",
    "pull_cartridge": "engram.oci._distribute",
    "push_cartridge": "engram.oci._distribute",
    "ArtifactRefused": "engram.oci._errors",
    "BadReference": "engram.oci._errors",
    "RegistryAuthFailed": "engram.oci._errors",
    "RegistryError": "engram.oci._errors",
    "Built": "engram.oci._manifest",
    "CartridgeLayer": "engram.oci._manifest",
    "cartridge_manifest": "engram.oci._manifest",
    "check_cartridge_manifest": "engram.oci._manifest",
    "referrer_manifest": "engram.oci._manifest",
    "CARTRIDGE_ARTIFACT": "engram.oci._media",
    "CARTRIDGE_LAYER": "engram.oci._media",
    "DSSE_ENVELOPE": "engram.oci._media",
    "EMPTY_DIGEST": "engram.oci._media",
    "IMAGE_INDEX": "engram.oci._media",
    "IMAGE_MANIFEST": "engram.oci._media",
    "LEVEL_ARTIFACT": "engram.oci._media",
    "ROM_HASH_ANNOTATION": "engram.oci._media",
    "SPEC_VERSION_ANNOTATION": "engram.oci._media",
    "TITLE_ANNOTATION": "engram.oci._media",
    "VC_MEDIA_TYPE": "engram.oci._media",
    "referrers_tag": "engram.oci._media",
    "Reference": "engram.oci._reference",
    "parse_reference": "engram.oci._reference",
}

__all__ = [
    "CARTRIDGE_ARTIFACT",
    "CARTRIDGE_LAYER",
    "DEFAULT_MAX_LAYER",
    "DEFAULT_PULL_ACCEPT",
    "DSSE_ENVELOPE",
    "EMPTY_DIGEST",
    "IMAGE_INDEX",
    "IMAGE_MANIFEST",
    "LEVEL_ARTIFACT",
    "ROM_HASH_ANNOTATION",
    "SPEC_VERSION_ANNOTATION",
    "TITLE_ANNOTATION",
    "VC_MEDIA_TYPE",
    "ArtifactRefused",
    "Attached",
    "BadReference",
    "Built",
    "CartridgeLayer",
    "Credentials",
    "Discovery",
    "Fetched",
    "Pulled",
    "Pushed",
    "Reference",
    "Referrer",
    "Referrers",
    "RegistryAuth",
    "RegistryAuthFailed",
    "RegistryClient",
    "RegistryError",
    "attach_level",
    "attach_referrer",
    "attestation_statement",
    "cartridge_manifest",
    "check_cartridge_manifest",
    "discover",
    "parse_challenge",
    "parse_reference",
    "pull_cartridge",
    "push_cartridge",
    "referrer_manifest",
    "referrers_tag",
    "sha256_digest",
    "sign_and_attest",
    "simple_signing_payload",
]

if not TYPE_CHECKING:  # type checkers read the imports above, so a misspelt name stays an error
    __getattr__ = _lazy_attributes(__name__, _LAZY, globals())
