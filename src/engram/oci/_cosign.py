"""cosign's tag-based signature and attestation layout, written to the letter of its specs.

cosign ``specs/SIGNATURE_SPEC.md`` and ``specs/ATTESTATION_SPEC.md`` (sigstore/cosign 2.x), the
Simple Signing payload of containers/image ``containers-signature.5.md``; docs/spec/acx-oci.md §6.

- **Signature**: the manifest tagged ``sha256-<hex>.sig`` beside the cartridge: an OCI image
  manifest whose config is an ``application/vnd.oci.image.config.v1+json`` blob and whose layers
  are Simple Signing payloads (``application/vnd.dev.cosign.simplesigning.v1+json``), each
  carrying its base64 signature in the annotation ``dev.cosignproject.cosign/signature``. The
  payload names the cartridge manifest digest under ``critical.image.docker-manifest-digest``
  and has ``critical.type`` ``cosign container image signature``.
- **Attestation**: the manifest tagged ``sha256-<hex>.att``: its layers are DSSE envelopes
  (``application/vnd.dsse.envelope.v1+json``) over an in-toto Statement whose subject is the
  *image manifest* digest (cosign checks that, so the ACX envelope, whose subject is the ROM
  hash, cannot serve here), with the ``predicateType`` layer annotation and an empty
  ``dev.cosignproject.cosign/signature`` as cosign writes them.
- Ed25519 signs the message itself (sigstore's ED25519 signer): the payload bytes for a
  signature, the DSSE PAE for an attestation. A signature already present is not added twice;
  others already there are kept, as cosign appends.

What stock cosign would check on top (it is not installable here): the transparency-log entry
(``--insecure-ignore-tlog`` skips it for a key-signed artifact), the certificate chain and
identity for keyless signatures, and ``--type``/policy evaluation of the predicate.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from engram.core.canonical import JsonObject, canonicalize
from engram.core.dsse import PAYLOAD_TYPE_IN_TOTO, sign_envelope
from engram.core.keys import PrivateKey
from engram.oci._client import RegistryClient, sha256_digest
from engram.oci._manifest import Built, build, descriptor
from engram.oci._media import CARTRIDGE_PREDICATE, DSSE_ENVELOPE, IMAGE_MANIFEST, referrers_tag

SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
IMAGE_CONFIG = "application/vnd.oci.image.config.v1+json"
SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
PREDICATE_ANNOTATION = "predicateType"
SIGNATURE_TYPE = "cosign container image signature"
STATEMENT_V01 = "https://in-toto.io/Statement/v0.1"
"""What ``cosign attest`` 2.x writes as the Statement ``_type``."""
_ZERO_TIME = "0001-01-01T00:00:00Z"


@dataclass(frozen=True)
class CosignWritten:
    tag: str
    digest: str
    layers: int


def simple_signing_payload(docker_reference: str, manifest_digest: str) -> bytes:
    return canonicalize(
        {
            "critical": {
                "identity": {"docker-reference": docker_reference},
                "image": {"docker-manifest-digest": manifest_digest},
                "type": SIGNATURE_TYPE,
            },
            "optional": None,
        }
    )


def attestation_statement(
    docker_reference: str, manifest_digest: str, predicate: JsonObject
) -> JsonObject:
    return {
        "_type": STATEMENT_V01,
        "predicateType": CARTRIDGE_PREDICATE,
        "subject": [
            {
                "name": docker_reference,
                "digest": {"sha256": manifest_digest.removeprefix("sha256:")},
            }
        ],
        "predicate": predicate,
    }


def _config(layer_digests: list[str]) -> bytes:
    return canonicalize(
        {
            "architecture": "",
            "config": {},
            "created": _ZERO_TIME,
            "history": [{"created": _ZERO_TIME} for _ in layer_digests],
            "os": "",
            "rootfs": {"type": "layers", "diff_ids": list(layer_digests)},
        }
    )


def sign_and_attest(
    client: RegistryClient,
    repository: str,
    subject: Built,
    key: PrivateKey,
    predicate: JsonObject,
) -> list[CosignWritten]:
    """Write (or extend) the ``.sig`` and ``.att`` manifests for ``subject``."""
    reference = f"{client.registry}/{repository}"
    payload = simple_signing_payload(reference, subject.digest)
    signature = base64.b64encode(key.sign(payload)).decode("ascii")
    envelope = sign_envelope(
        canonicalize(attestation_statement(reference, subject.digest, predicate)),
        PAYLOAD_TYPE_IN_TOTO,
        key,
        keyid="",
    )
    return [
        _append(
            client,
            repository,
            referrers_tag(subject.digest) + ".sig",
            SIMPLE_SIGNING,
            payload,
            {SIGNATURE_ANNOTATION: signature},
        ),
        _append(
            client,
            repository,
            referrers_tag(subject.digest) + ".att",
            DSSE_ENVELOPE,
            canonicalize(envelope),
            {SIGNATURE_ANNOTATION: "", PREDICATE_ANNOTATION: CARTRIDGE_PREDICATE},
        ),
    ]


def _append(
    client: RegistryClient,
    repository: str,
    tag: str,
    media_type: str,
    payload: bytes,
    annotations: dict[str, str],
) -> CosignWritten:
    layers: list[JsonObject] = []
    current = client.get_manifest(repository, tag)
    if current is not None and current.media_type == IMAGE_MANIFEST:
        listed = current.json().get("layers", [])
        layers = [x for x in listed if isinstance(x, dict)] if isinstance(listed, list) else []
    layer = descriptor(media_type, payload, annotations)
    if not any(
        x.get("digest") == layer["digest"] and x.get("annotations") == annotations for x in layers
    ):
        layers.append(layer)
        client.push_blob(repository, payload, sha256_digest(payload), len(payload))
    config = _config([str(x["digest"]) for x in layers])
    client.push_blob(repository, config, sha256_digest(config), len(config))
    manifest = build(
        {
            "schemaVersion": 2,
            "mediaType": IMAGE_MANIFEST,
            "config": descriptor(IMAGE_CONFIG, config),
            "layers": list(layers),
        }
    )
    client.put_manifest(repository, tag, manifest.body, IMAGE_MANIFEST)
    return CosignWritten(tag, manifest.digest, len(layers))


__all__ = [
    "IMAGE_CONFIG",
    "SIGNATURE_ANNOTATION",
    "SIMPLE_SIGNING",
    "CosignWritten",
    "attestation_statement",
    "sign_and_attest",
    "simple_signing_payload",
]
