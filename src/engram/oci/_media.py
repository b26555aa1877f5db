"""The media types, annotations and fixed values of ACX distribution over OCI.

Spec: lboel/acx@85f1358 SPEC.md §11 (the cartridge manifest, its layer and referrers), §10.1 (the
level attestation's ``artifactType``), §13 (the media-type catalogue); OCI Image Specification
1.1 ``manifest.md`` and ``descriptor.md`` (the empty descriptor); OCI Distribution Specification
1.1 "Referrers Tag Schema"; docs/spec/acx-oci.md §1.
"""

from __future__ import annotations

import re

IMAGE_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
IMAGE_INDEX = "application/vnd.oci.image.index.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MANIFEST_ACCEPT = ", ".join((IMAGE_MANIFEST, IMAGE_INDEX, DOCKER_MANIFEST))

CARTRIDGE_ARTIFACT = "application/vnd.acx.cartridge.v1"
CARTRIDGE_LAYER = "application/vnd.acx.cartridge.layer.v1+sqlite"
DSSE_ENVELOPE = "application/vnd.dsse.envelope.v1+json"
LEVEL_ARTIFACT = "application/vnd.acx.level-attestation.v1"
VC_MEDIA_TYPE = "application/vc"
"""The layer of a level referrer: §10.1 calls the credential's media type ``application/vc``."""

EMPTY_MEDIA_TYPE = "application/vnd.oci.empty.v1+json"
EMPTY_BLOB = b"{}"
EMPTY_DIGEST = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
EMPTY_DESCRIPTOR: dict[str, str | int] = {
    "mediaType": EMPTY_MEDIA_TYPE,
    "digest": EMPTY_DIGEST,
    "size": 2,
}

ROM_HASH_ANNOTATION = "vnd.acx.rom-manifest-hash"
SPEC_VERSION_ANNOTATION = "vnd.acx.spec-version"
TITLE_ANNOTATION = "org.opencontainers.image.title"
PREDICATE_TYPE_ANNOTATION = "in-toto.io/predicate-type"
CARTRIDGE_PREDICATE = "https://acx.dev/attestation/cartridge/v1"

DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_TAG_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]")


def referrers_tag(digest: str) -> str:
    """The distribution spec's referrers tag ``<alg>-<ref>`` for a subject ``digest``.

    ``<alg>`` is cut to 32 and ``<ref>`` to 64 characters, and every character a tag may not
    hold becomes ``-`` (distribution-spec 1.1.1 "Referrers Tag Schema"); for sha256 that is
    ``sha256-`` + the 64 hex digits.
    """
    algorithm, _, encoded = digest.partition(":")
    return _TAG_UNSAFE.sub("-", algorithm[:32]) + "-" + _TAG_UNSAFE.sub("-", encoded[:64])


__all__ = [
    "CARTRIDGE_ARTIFACT",
    "CARTRIDGE_LAYER",
    "CARTRIDGE_PREDICATE",
    "DIGEST",
    "DOCKER_MANIFEST",
    "DSSE_ENVELOPE",
    "EMPTY_BLOB",
    "EMPTY_DESCRIPTOR",
    "EMPTY_DIGEST",
    "EMPTY_MEDIA_TYPE",
    "IMAGE_INDEX",
    "IMAGE_MANIFEST",
    "LEVEL_ARTIFACT",
    "MANIFEST_ACCEPT",
    "PREDICATE_TYPE_ANNOTATION",
    "ROM_HASH_ANNOTATION",
    "SPEC_VERSION_ANNOTATION",
    "TITLE_ANNOTATION",
    "VC_MEDIA_TYPE",
    "referrers_tag",
]
