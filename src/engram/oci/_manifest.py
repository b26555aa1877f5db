"""The ACX manifests: built byte-for-byte deterministically, and checked before anything is used.

Spec: lboel/acx@85f1358 SPEC.md §11; OCI Image Specification 1.1 ``manifest.md`` (``artifactType``
MUST be set when ``config`` is the empty descriptor; ``subject``), ``descriptor.md``; OCI
Distribution Specification 1.1 "Pushing Manifests with Subject" (the referrers-tag descriptor);
docs/spec/acx-oci.md §3-§5.

Manifest bytes are the RFC 8785 form of the manifest, so the same cartridge always gives the
same manifest digest (no creation time is written). :func:`check_cartridge_manifest` is what a
pull runs before it fetches a byte of the layer: ``schemaVersion`` 2, the OCI image manifest
media type, ``artifactType`` ``application/vnd.acx.cartridge.v1``, ``config`` exactly the empty
descriptor, exactly one layer of ``application/vnd.acx.cartridge.layer.v1+sqlite`` with a
sha256 digest, a positive size within the caller's bound, and a ROM-hash annotation.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass

from engram.core.canonical import Json, JsonObject, canonicalize
from engram.oci._client import sha256_digest
from engram.oci._errors import ArtifactRefused
from engram.oci._media import (
    CARTRIDGE_ARTIFACT,
    CARTRIDGE_LAYER,
    DIGEST,
    EMPTY_BLOB,
    EMPTY_DESCRIPTOR,
    EMPTY_DIGEST,
    EMPTY_MEDIA_TYPE,
    IMAGE_INDEX,
    IMAGE_MANIFEST,
    ROM_HASH_ANNOTATION,
    SPEC_VERSION_ANNOTATION,
    TITLE_ANNOTATION,
)

SAFE_TITLE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,126}\.acx")


@dataclass(frozen=True)
class Built:
    """A manifest's exact bytes and digest, and its descriptor for an index or a ``subject``."""

    body: bytes
    digest: str
    document: JsonObject

    @property
    def descriptor(self) -> JsonObject:
        return {"mediaType": IMAGE_MANIFEST, "digest": self.digest, "size": len(self.body)}


def descriptor(
    media_type: str, data: bytes, annotations: Mapping[str, str] | None = None
) -> JsonObject:
    out: JsonObject = {
        "mediaType": media_type,
        "digest": sha256_digest(data),
        "size": len(data),
    }
    if annotations:
        out["annotations"] = dict(annotations)
    return out


def build(document: JsonObject) -> Built:
    body = canonicalize(document)
    return Built(body, sha256_digest(body), document)


def cartridge_manifest(
    *, layer_digest: str, layer_size: int, rom_hash: str, spec_version: str, title: str
) -> Built:
    """§11's image manifest for one frozen ``.acx``: empty config, one raw SQLite layer."""
    annotations: JsonObject = {
        ROM_HASH_ANNOTATION: rom_hash,
        SPEC_VERSION_ANNOTATION: spec_version,
        TITLE_ANNOTATION: title,
    }
    return build(
        {
            "schemaVersion": 2,
            "mediaType": IMAGE_MANIFEST,
            "artifactType": CARTRIDGE_ARTIFACT,
            "config": dict(EMPTY_DESCRIPTOR),
            "layers": [
                {
                    "mediaType": CARTRIDGE_LAYER,
                    "digest": layer_digest,
                    "size": layer_size,
                    "annotations": annotations,
                }
            ],
            "annotations": {ROM_HASH_ANNOTATION: rom_hash},
        }
    )


def referrer_manifest(
    *,
    artifact_type: str,
    layer_media_type: str,
    payload: bytes,
    subject: Built,
    title: str,
    annotations: Mapping[str, str],
) -> Built:
    """A referrer: its own ``artifactType``, the empty config, one layer, ``subject`` set."""
    return build(
        {
            "schemaVersion": 2,
            "mediaType": IMAGE_MANIFEST,
            "artifactType": artifact_type,
            "config": dict(EMPTY_DESCRIPTOR),
            "layers": [descriptor(layer_media_type, payload, {TITLE_ANNOTATION: title})],
            "subject": subject.descriptor,
            "annotations": dict(annotations),
        }
    )


def index_descriptor(referrer: Built) -> JsonObject:
    """The referrers-list entry for ``referrer``: ``artifactType`` (or the config's media
    type when it has none) and every annotation of the manifest (distribution spec)."""
    document = referrer.document
    entry: JsonObject = dict(referrer.descriptor)
    artifact_type = document.get("artifactType")
    if not artifact_type:
        config = document["config"]
        artifact_type = config["mediaType"] if isinstance(config, dict) else None
    entry["artifactType"] = artifact_type
    listed = document.get("annotations")
    if listed and isinstance(listed, dict):
        entry["annotations"] = dict(listed)
    return entry


def referrers_index(manifests: list[JsonObject]) -> Built:
    return build({"schemaVersion": 2, "mediaType": IMAGE_INDEX, "manifests": list(manifests)})


@dataclass(frozen=True)
class CartridgeLayer:
    digest: str
    size: int
    rom_hash: str
    spec_version: str | None
    title: str


def check_cartridge_manifest(
    document: Mapping[str, Json], *, max_layer_bytes: int
) -> CartridgeLayer:
    """The §11 shape, or :class:`ArtifactRefused` naming the first departure."""

    def refuse(reason: str) -> ArtifactRefused:
        return ArtifactRefused(f"not an ACX cartridge manifest: {reason}")

    if document.get("schemaVersion") != 2:
        raise refuse("schemaVersion is not 2")
    if document.get("mediaType") != IMAGE_MANIFEST:
        raise refuse(f"mediaType is {document.get('mediaType')!r}, not {IMAGE_MANIFEST}")
    if document.get("artifactType") != CARTRIDGE_ARTIFACT:
        raise refuse(f"artifactType is {document.get('artifactType')!r}, not {CARTRIDGE_ARTIFACT}")
    config = document.get("config")
    if not isinstance(config, Mapping) or not _is_empty_descriptor(config):
        raise refuse(
            "config is not the empty descriptor (application/vnd.oci.empty.v1+json, size 2)"
        )
    layers = document.get("layers")
    if not isinstance(layers, list) or len(layers) != 1 or not isinstance(layers[0], Mapping):
        raise refuse("it must have exactly one layer")
    layer = layers[0]
    if layer.get("mediaType") != CARTRIDGE_LAYER:
        raise refuse(f"the layer's mediaType is {layer.get('mediaType')!r}, not {CARTRIDGE_LAYER}")
    digest, size = layer.get("digest"), layer.get("size")
    if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
        raise refuse("the layer digest is not sha256:<64 hex>")
    if not isinstance(size, int) or isinstance(size, bool) or size < 100:
        raise refuse("the layer size is not a positive integer of at least one SQLite header")
    if size > max_layer_bytes:
        raise refuse(f"the layer is {size} bytes, over the {max_layer_bytes}-byte limit")
    listed = layer.get("annotations")
    annotations: Mapping[str, Json] = listed if isinstance(listed, Mapping) else {}
    rom_hash = annotations.get(ROM_HASH_ANNOTATION)
    if not isinstance(rom_hash, str) or not DIGEST.fullmatch(rom_hash):
        raise refuse(f"the layer has no {ROM_HASH_ANNOTATION} annotation")
    title = annotations.get(TITLE_ANNOTATION)
    spec_version = annotations.get(SPEC_VERSION_ANNOTATION)
    return CartridgeLayer(
        digest=digest,
        size=size,
        rom_hash=rom_hash,
        spec_version=spec_version if isinstance(spec_version, str) else None,
        title=title if isinstance(title, str) and SAFE_TITLE.fullmatch(title) else "cartridge.acx",
    )


def _is_empty_descriptor(config: Mapping[str, Json]) -> bool:
    if (
        config.get("mediaType") != EMPTY_MEDIA_TYPE
        or config.get("digest") != EMPTY_DIGEST
        or config.get("size") != 2
    ):
        return False
    data = config.get("data")
    if data is None:
        return True
    try:
        return base64.b64decode(str(data), validate=True) == EMPTY_BLOB
    except ValueError:
        return False


__all__ = [
    "SAFE_TITLE",
    "Built",
    "CartridgeLayer",
    "build",
    "cartridge_manifest",
    "check_cartridge_manifest",
    "descriptor",
    "index_descriptor",
    "referrer_manifest",
    "referrers_index",
]
