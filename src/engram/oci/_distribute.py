"""Push, pull, discover and attach: one ACX cartridge as one OCI artifact with its referrers.

Spec: lboel/acx@85f1358 SPEC.md §11 (one image manifest per cartridge; the DSSE envelope and
each level credential as referrers; the ``sha256-<hex>`` fallback where the registry has no
Referrers API), §10.1 (the level attestation referrer), §4.5 (the trust taxonomy a pull
applies); OCI Distribution Specification 1.1 "Pushing Manifests with Subject" and "Listing
Referrers"; docs/spec/acx-oci.md.

- :func:`push_cartridge` verifies a private copy of the file first (a tampered or unsigned
  cartridge is not pushed), uploads the empty config and the raw ``.acx`` bytes, puts the
  manifest under the tag, then attaches the cartridge's own DSSE envelope, every level
  credential it embeds and any given, each as a referrer; optionally the cosign layout too.
- :func:`pull_cartridge` checks the manifest's shape, streams the layer into a private
  temporary folder checking its size and digest, opens and verifies those bytes (§4.5) and
  compares the verified ROM hash with the manifest's annotation; only a cartridge that passes
  all of it is written into the user's folder, atomically.
- :func:`discover` lists the referrers (API or fallback tag) and checks each one it can read:
  its ``subject`` is the cartridge, a DSSE envelope's Statement binds the cartridge's ROM hash,
  a level credential is bound to it.
- :func:`attach_level` adds a level credential bound to the cartridge's ROM hash as a referrer.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from engram.cartridge import Cartridge, verify_rom
from engram.core.canonical import JsonObject
from engram.core.keys import PrivateKey
from engram.errors import EngramError, InvalidRequest
from engram.oci._client import MONOLITHIC_LIMIT, RegistryClient, sha256_digest
from engram.oci._cosign import CosignWritten, sign_and_attest
from engram.oci._errors import ArtifactRefused, RegistryError
from engram.oci._limits import DEFAULT_MAX_LAYER, MAX_REFERRER_LAYER
from engram.oci._manifest import (
    Built,
    CartridgeLayer,
    cartridge_manifest,
    check_cartridge_manifest,
    index_descriptor,
    referrer_manifest,
    referrers_index,
)
from engram.oci._media import (
    CARTRIDGE_PREDICATE,
    DSSE_ENVELOPE,
    EMPTY_BLOB,
    EMPTY_DIGEST,
    IMAGE_INDEX,
    IMAGE_MANIFEST,
    LEVEL_ARTIFACT,
    PREDICATE_TYPE_ANNOTATION,
    ROM_HASH_ANNOTATION,
    VC_MEDIA_TYPE,
    referrers_tag,
)
from engram.oci._reference import Reference
from engram.oci._referrer_checks import check_level, content_check, member, statement_of
from engram.oci._staging import file_digest, install, staging
from engram.trust import TrustRegistry, TrustState

DEFAULT_PULL_ACCEPT = frozenset({TrustState.PORTABLE, TrustState.TRUSTED, TrustState.LOCAL})
"""A pull refuses ``tampered`` always and ``legacy`` (no signature to check) by default."""


@dataclass(frozen=True)
class Attached:
    artifact_type: str
    digest: str
    via: str
    """``api`` when the registry took the ``subject`` (``OCI-Subject``), else ``tag``."""
    changed: bool = True


@dataclass(frozen=True)
class Pushed:
    reference: Reference
    manifest_digest: str
    layer_digest: str
    size: int
    rom_hash: str
    trust: str
    uploaded: bool
    referrers: tuple[Attached, ...]
    cosign: tuple[CosignWritten, ...] = ()

    def to_wire(self) -> JsonObject:
        return {
            "reference": str(self.reference.with_digest(self.manifest_digest)),
            "manifestDigest": self.manifest_digest,
            "layerDigest": self.layer_digest,
            "size": self.size,
            "romManifestHash": self.rom_hash,
            "trust": self.trust,
            "layerUploaded": self.uploaded,
            "referrers": [
                {"artifactType": r.artifact_type, "digest": r.digest, "via": r.via}
                for r in self.referrers
            ],
            "cosign": [{"tag": c.tag, "digest": c.digest, "layers": c.layers} for c in self.cosign],
        }


@dataclass(frozen=True)
class Pulled:
    reference: Reference
    path: Path
    manifest_digest: str
    layer_digest: str
    size: int
    rom_hash: str
    trust: str
    reason: str
    warnings: tuple[str, ...] = ()

    def to_wire(self) -> JsonObject:
        return {
            "reference": str(self.reference.with_digest(self.manifest_digest)),
            "path": str(self.path),
            "manifestDigest": self.manifest_digest,
            "layerDigest": self.layer_digest,
            "size": self.size,
            "romManifestHash": self.rom_hash,
            "trust": self.trust,
            "summary": self.reason,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class Referrer:
    artifact_type: str
    digest: str
    size: int
    annotations: dict[str, str]
    checks: tuple[tuple[str, bool, str], ...] = ()
    """(check, holds, detail) for what could be read of the referrer."""

    @property
    def ok(self) -> bool:
        return all(holds for _, holds, _ in self.checks)

    def to_wire(self) -> JsonObject:
        return {
            "artifactType": self.artifact_type,
            "digest": self.digest,
            "size": self.size,
            "annotations": dict(self.annotations),
            "ok": self.ok,
            "checks": [{"check": c, "ok": h, "detail": d} for c, h, d in self.checks],
        }


@dataclass(frozen=True)
class Discovery:
    reference: Reference
    digest: str
    rom_hash: str
    via: str
    referrers: tuple[Referrer, ...]
    notes: tuple[str, ...] = field(default=())

    def to_wire(self) -> JsonObject:
        return {
            "reference": str(self.reference.with_digest(self.digest)),
            "digest": self.digest,
            "romManifestHash": self.rom_hash,
            "via": self.via,
            "referrers": [r.to_wire() for r in self.referrers],
            "notes": list(self.notes),
        }


# -- push ------------------------------------------------------------------------------------


@contextlib.contextmanager
def _private_copy(path: Path) -> Iterator[Path]:
    """A copy only this process can see: what is verified is exactly what is uploaded."""
    with staging() as folder:
        copy = folder / "cartridge.acx"
        shutil.copyfile(path, copy)
        yield copy


def _embedded(cartridge: Cartridge) -> tuple[str, list[bytes]]:
    rows = cartridge.query(
        "SELECT envelope FROM signatures NOT INDEXED WHERE target = 'rom-manifest'"
    )
    envelope = str(rows[0][0]) if rows else ""
    credentials = [
        str(r[0]).encode("utf-8")
        for r in cartridge.query(
            "SELECT document FROM attestations NOT INDEXED "
            "WHERE type IN ('vc-2.0', 'openbadge-3.0') ORDER BY att_id"
        )
    ]
    return envelope, credentials


def push_cartridge(
    path: Path,
    reference: Reference,
    client: RegistryClient,
    *,
    trust: TrustRegistry | None = None,
    levels: Iterable[bytes] = (),
    level_check: Callable[[bytes, str], object] | None = None,
    cosign_key: PrivateKey | None = None,
    now: datetime,
) -> Pushed:
    """Push ``path`` with its signature and ``levels`` attached. Each level is attached only
    once ``level_check(credential, rom_hash)`` has not raised (as :func:`attach_level`), and
    every level is checked before anything is pushed."""
    if reference.tag is None:
        raise InvalidRequest(f"{reference} needs a tag to push to")
    levels = list(levels)
    if levels and level_check is None:
        raise InvalidRequest("levels are attached only with a level_check that verifies them")
    with _private_copy(path) as copy:
        with Cartridge.open(copy) as cartridge:
            report, _rom = verify_rom(cartridge, registry=trust, now=now)
            if report.state is TrustState.TAMPERED:
                raise ArtifactRefused(f"{path.name} is tampered: {report.reason}; not pushed")
            if report.state is TrustState.LEGACY:
                raise ArtifactRefused(
                    f"{path.name} is unsigned (legacy): sign it before distributing it"
                )
            envelope, embedded = _embedded(cartridge)
            spec_version = cartridge.meta().get("acx.spec_version", "")
        for credential in levels:
            check_level(credential, report.manifest_hash)
            if level_check is not None:
                level_check(credential, report.manifest_hash)
        size = copy.stat().st_size
        source: bytes | Path = copy.read_bytes() if size <= MONOLITHIC_LIMIT else copy
        layer_digest = sha256_digest(source) if isinstance(source, bytes) else file_digest(copy)
        repo = reference.repository
        client.push_blob(repo, EMPTY_BLOB, EMPTY_DIGEST, len(EMPTY_BLOB))
        uploaded = client.push_blob(repo, source, layer_digest, size)
    title = path.name if path.suffix == ".acx" else "cartridge.acx"
    manifest = cartridge_manifest(
        layer_digest=layer_digest,
        layer_size=size,
        rom_hash=report.manifest_hash,
        spec_version=spec_version,
        title=_safe_title(title),
    )
    client.put_manifest(repo, reference.tag, manifest.body, IMAGE_MANIFEST)
    attached = [_attach_envelope(client, repo, manifest, envelope, report.manifest_hash)]
    for credential in [*embedded, *levels]:
        check_level(credential, report.manifest_hash)
        attached.append(_attach_level(client, repo, manifest, credential, report.manifest_hash))
    cosign: list[CosignWritten] = []
    if cosign_key is not None:
        cosign = sign_and_attest(client, repo, manifest, cosign_key, _predicate(envelope))
    return Pushed(
        reference=reference,
        manifest_digest=manifest.digest,
        layer_digest=layer_digest,
        size=size,
        rom_hash=report.manifest_hash,
        trust=report.state.value,
        uploaded=uploaded,
        referrers=tuple(attached),
        cosign=tuple(cosign),
    )


def _safe_title(name: str) -> str:
    from engram.oci._manifest import SAFE_TITLE

    return name if SAFE_TITLE.fullmatch(name) else "cartridge.acx"


def _predicate(envelope_text: str) -> JsonObject:
    statement = statement_of(envelope_text.encode("utf-8"))
    predicate = statement.get("predicate")
    if not isinstance(predicate, dict):
        raise ArtifactRefused("the cartridge's DSSE Statement has no predicate")
    return predicate


def _attach_envelope(
    client: RegistryClient, repo: str, subject: Built, envelope: str, rom_hash: str
) -> Attached:
    referrer = referrer_manifest(
        artifact_type=DSSE_ENVELOPE,
        layer_media_type=DSSE_ENVELOPE,
        payload=envelope.encode("utf-8"),
        subject=subject,
        title="rom-manifest.dsse.json",
        annotations={
            ROM_HASH_ANNOTATION: rom_hash,
            PREDICATE_TYPE_ANNOTATION: CARTRIDGE_PREDICATE,
        },
    )
    return attach_referrer(client, repo, subject, referrer, envelope.encode("utf-8"))


def _attach_level(
    client: RegistryClient, repo: str, subject: Built, credential: bytes, rom_hash: str
) -> Attached:
    referrer = referrer_manifest(
        artifact_type=LEVEL_ARTIFACT,
        layer_media_type=VC_MEDIA_TYPE,
        payload=credential,
        subject=subject,
        title="level-credential.json",
        annotations={ROM_HASH_ANNOTATION: rom_hash},
    )
    return attach_referrer(client, repo, subject, referrer, credential)


def attach_referrer(
    client: RegistryClient, repo: str, subject: Built, referrer: Built, payload: bytes
) -> Attached:
    """Push ``referrer`` (its blobs, then by digest) and make it discoverable.

    When the registry does not answer ``OCI-Subject: <subject digest>`` it has no referrers
    API, and the client maintains the ``<alg>-<ref>`` index as the distribution spec says:
    pull it (404: start empty; anything but an image index: refuse, never overwrite), add the
    descriptor unless it is there, push it back.
    """
    artifact_type = str(referrer.document["artifactType"])
    client.push_blob(repo, EMPTY_BLOB, EMPTY_DIGEST, len(EMPTY_BLOB))
    client.push_blob(repo, payload, sha256_digest(payload), len(payload))
    response = client.put_manifest(repo, referrer.digest, referrer.body, IMAGE_MANIFEST)
    if response.headers.get("OCI-Subject") == subject.digest:
        return Attached(artifact_type, referrer.digest, "api")
    tag = referrers_tag(subject.digest)
    current = client.get_manifest(repo, tag)
    manifests: list[JsonObject] = []
    if current is not None:
        document = current.json()
        if (
            current.media_type != IMAGE_INDEX
            or document.get("mediaType", IMAGE_INDEX) != IMAGE_INDEX
        ):
            raise RegistryError(
                f"{repo}:{tag} holds a {current.media_type or 'non-index'} manifest, not the "
                "referrers image index; it is left as it is"
            )
        listed = document.get("manifests", [])
        if isinstance(listed, list):
            manifests = [m for m in listed if isinstance(m, dict)]
    if any(m.get("digest") == referrer.digest for m in manifests):
        return Attached(artifact_type, referrer.digest, "tag", changed=False)
    manifests.append(index_descriptor(referrer))
    index = referrers_index(manifests)
    client.put_manifest(repo, tag, index.body, IMAGE_INDEX)
    return Attached(artifact_type, referrer.digest, "tag")


# -- the cartridge manifest on the registry ---------------------------------------------------


def _fetch_cartridge(
    client: RegistryClient, reference: Reference, max_layer_bytes: int
) -> tuple[Built, CartridgeLayer]:
    fetched = client.get_manifest(reference.repository, reference.reference)
    if fetched is None:
        raise ArtifactRefused(f"{reference}: no such manifest on {reference.registry}")
    if fetched.media_type and fetched.media_type != IMAGE_MANIFEST:
        raise ArtifactRefused(
            f"{reference} is a {fetched.media_type}, not an OCI image manifest of a cartridge"
        )
    document = fetched.json()
    layer = check_cartridge_manifest(document, max_layer_bytes=max_layer_bytes)
    return Built(fetched.body, fetched.digest, document), layer


# -- pull ------------------------------------------------------------------------------------


def pull_cartridge(
    reference: Reference,
    out_dir: Path,
    client: RegistryClient,
    *,
    trust: TrustRegistry | None = None,
    accept: Collection[TrustState] = DEFAULT_PULL_ACCEPT,
    now: datetime,
    max_layer_bytes: int = DEFAULT_MAX_LAYER,
    force: bool = False,
) -> Pulled:
    manifest, layer = _fetch_cartridge(client, reference, max_layer_bytes)
    with staging() as folder:
        staged = folder / layer.title
        with staged.open("wb") as out:
            try:
                client.fetch_blob_to(reference.repository, layer.digest, layer.size, out)
            except RegistryError as e:
                raise ArtifactRefused(f"{reference}: the layer is refused: {e.message}") from e
        try:
            with Cartridge.open(staged) as cartridge:
                report, _rom = verify_rom(cartridge, registry=trust, now=now)
        except EngramError as e:
            raise ArtifactRefused(
                f"{reference}: the layer is not a readable cartridge: {e.message}"
            ) from e
        if report.state is TrustState.TAMPERED:
            raise ArtifactRefused(f"{reference}: the cartridge is tampered: {report.reason}")
        if report.manifest_hash != layer.rom_hash:
            raise ArtifactRefused(
                f"{reference}: the verified ROM hash {report.manifest_hash} is not the "
                f"{layer.rom_hash} the manifest announces"
            )
        if report.state not in accept:
            wanted = ", ".join(sorted(s.value for s in accept))
            raise ArtifactRefused(
                f"{reference}: the cartridge is {report.state.value} ({report.reason}); "
                f"accepted: {wanted}"
            )
        target = out_dir / layer.title
        install(staged, target, force=force)
    return Pulled(
        reference=reference,
        path=target,
        manifest_digest=manifest.digest,
        layer_digest=layer.digest,
        size=layer.size,
        rom_hash=report.manifest_hash,
        trust=report.state.value,
        reason=report.reason,
        warnings=report.warnings,
    )


# -- discover and attach ------------------------------------------------------------------------


def discover(
    reference: Reference,
    client: RegistryClient,
    *,
    artifact_type: str | None = None,
    max_layer_bytes: int = DEFAULT_MAX_LAYER,
    level_check: Callable[[bytes, str], object] | None = None,
) -> Discovery:
    """The cartridge's referrers, each checked: bound to this ROM, and a level credential also
    ``level_check``-ed (verifies, not revoked) when one is given."""
    manifest, layer = _fetch_cartridge(client, reference, max_layer_bytes)
    listed = client.referrers(reference.repository, manifest.digest, artifact_type=artifact_type)
    referrers = tuple(
        _inspect(client, reference.repository, d, manifest.digest, layer.rom_hash, level_check)
        for d in listed.descriptors
    )
    return Discovery(
        reference=reference,
        digest=manifest.digest,
        rom_hash=layer.rom_hash,
        via=listed.via,
        referrers=referrers,
        notes=tuple(listed.notes),
    )


def _inspect(
    client: RegistryClient,
    repo: str,
    entry: JsonObject,
    subject: str,
    rom_hash: str,
    level_check: Callable[[bytes, str], object] | None,
) -> Referrer:
    digest = str(entry.get("digest", ""))
    raw = entry.get("annotations")
    annotations = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    listed = entry.get("size")
    size = listed if isinstance(listed, int) else 0
    artifact_type = str(entry.get("artifactType", ""))
    checks: list[tuple[str, bool, str]] = []
    try:
        fetched = client.get_manifest(repo, digest)
        if fetched is None:
            checks.append(("manifest", False, f"{digest} is listed but not served"))
            return Referrer(artifact_type, digest, size, annotations, tuple(checks))
        document = fetched.json()
        bound = member(document.get("subject"), "digest")
        checks.append(("subject", bound == subject, f"subject {bound}"))
        layers = document.get("layers") or []
        if (
            artifact_type in (DSSE_ENVELOPE, LEVEL_ARTIFACT)
            and isinstance(layers, list)
            and len(layers) == 1
        ):
            blob = client.fetch_blob(
                repo, str(member(layers[0], "digest")), max_bytes=MAX_REFERRER_LAYER
            )
            checks.append(content_check(artifact_type, blob, rom_hash))
            if artifact_type == LEVEL_ARTIFACT and checks[-1][1] and level_check is not None:
                checks.append(_verified(level_check, blob, rom_hash))
    except EngramError as e:
        checks.append(("read", False, e.message))
    return Referrer(artifact_type, digest, size, annotations, tuple(checks))


def _verified(
    level_check: Callable[[bytes, str], object], credential: bytes, rom_hash: str
) -> tuple[str, bool, str]:
    try:
        level_check(credential, rom_hash)
    except EngramError as e:
        return ("verified", False, e.message)
    return ("verified", True, "verifies and is not revoked")


def attach_level(
    reference: Reference,
    credential: bytes,
    client: RegistryClient,
    *,
    check: Callable[[bytes, str], object],
    max_layer_bytes: int = DEFAULT_MAX_LAYER,
) -> Attached:
    """Attach ``credential`` once ``check(credential, rom_hash)`` has not raised: the caller's
    verification (``engram.level.require_verified``: not revoked, a proof that verifies)."""
    manifest, layer = _fetch_cartridge(client, reference, max_layer_bytes)
    check_level(credential, layer.rom_hash)
    check(credential, layer.rom_hash)
    return _attach_level(client, reference.repository, manifest, credential, layer.rom_hash)


__all__ = [
    "DEFAULT_MAX_LAYER",
    "DEFAULT_PULL_ACCEPT",
    "Attached",
    "Discovery",
    "Pulled",
    "Pushed",
    "Referrer",
    "attach_level",
    "attach_referrer",
    "discover",
    "pull_cartridge",
    "push_cartridge",
]
