"""engram.oci: Agent Cartridges distributed through OCI registries (an adapter).

Spec: lboel/acx@85f1358 SPEC.md §11 (one OCI image manifest per cartridge, the DSSE envelope and
level credentials as referrers, the fallback tag), OCI Image Specification 1.1 and OCI
Distribution Specification 1.1, cosign's signature and attestation specs; our decisions are in
docs/spec/acx-oci.md. :func:`push_cartridge`, :func:`pull_cartridge`, :func:`discover` and
:func:`attach_level` work through a :class:`RegistryClient` (httpx, Basic and Bearer auth).
"""

from engram.oci._auth import Credentials, RegistryAuth, parse_challenge
from engram.oci._client import Fetched, Referrers, RegistryClient, sha256_digest
from engram.oci._cosign import attestation_statement, sign_and_attest, simple_signing_payload
from engram.oci._distribute import (
    DEFAULT_MAX_LAYER,
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
