"""The parts of engram.oci that need no registry: references, the referrers tag, manifest shape,
auth challenges (OCI Distribution Specification 1.1; lboel/acx@85f1358 SPEC.md §11)."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from engram.core.canonical import canonicalize
from engram.oci import ArtifactRefused, BadReference, parse_reference
from engram.oci.internals import (
    cartridge_manifest,
    check_cartridge_manifest,
    parse_challenge,
    referrers_tag,
)

ROM = "sha256:" + "ab" * 32
LAYER = "sha256:" + "cd" * 32


@pytest.mark.req("engram.oci.referrers-tag-schema")
def test_the_referrers_tag_is_alg_dash_ref_as_the_distribution_spec_writes_it() -> None:
    # distribution-spec 1.1 "Referrers Tag Schema": sha256:aaa… -> sha256-aaa…
    assert referrers_tag("sha256:" + "a" * 64) == "sha256-" + "a" * 64
    # 1.1.1: <alg> cut to 32 and <ref> to 64 characters, characters a tag may not hold -> "-".
    assert referrers_tag("sha512:" + "b" * 128) == "sha512-" + "b" * 64
    assert referrers_tag("x+y:" + "c" * 10) == "x-y-" + "c" * 10


@pytest.mark.req("engram.oci.cli")
@pytest.mark.parametrize(
    ("text", "registry", "repository", "tag", "digest"),
    [
        ("127.0.0.1:5000/acme/agent:1.0.0", "127.0.0.1:5000", "acme/agent", "1.0.0", None),
        ("localhost/agent@sha256:" + "1" * 64, "localhost", "agent", None, "sha256:" + "1" * 64),
        ("ghcr.io/a/b/c:v1@sha256:" + "2" * 64, "ghcr.io", "a/b/c", "v1", "sha256:" + "2" * 64),
    ],
)
def test_references_are_read_as_container_tools_read_them(
    text: str, registry: str, repository: str, tag: str | None, digest: str | None
) -> None:
    ref = parse_reference(text)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (
        registry,
        repository,
        tag,
        digest,
    )
    assert str(ref) == text


@pytest.mark.req("engram.oci.cli")
@pytest.mark.parametrize(
    "text",
    [
        "acme/agent:1.0",  # no registry host: engram never guesses one
        "127.0.0.1:5000/Acme:1.0",  # upper case repository
        "127.0.0.1:5000/agent",  # neither tag nor digest
        "127.0.0.1:5000/agent:-bad",
        "127.0.0.1:5000/agent@sha256:short",
        " 127.0.0.1:5000/agent:1",
    ],
)
def test_a_bad_reference_is_refused_with_the_reason(text: str) -> None:
    with pytest.raises(BadReference):
        parse_reference(text)


def _manifest() -> dict[str, Any]:
    built = cartridge_manifest(
        layer_digest=LAYER, layer_size=4096, rom_hash=ROM, spec_version="0.1", title="a.acx"
    )
    return copy.deepcopy(built.document)


@pytest.mark.req("engram.oci.image-manifest", "engram.oci.empty-config", "engram.oci.single-layer")
def test_the_cartridge_manifest_is_the_spec_shape_and_its_bytes_are_deterministic() -> None:
    built = cartridge_manifest(
        layer_digest=LAYER, layer_size=4096, rom_hash=ROM, spec_version="0.1", title="a.acx"
    )
    document = built.document
    assert document["schemaVersion"] == 2
    assert document["mediaType"] == "application/vnd.oci.image.manifest.v1+json"
    assert document["artifactType"] == "application/vnd.acx.cartridge.v1"
    assert document["config"] == {
        "mediaType": "application/vnd.oci.empty.v1+json",
        "digest": "sha256:" + hashlib.sha256(b"{}").hexdigest(),
        "size": 2,
    }
    layers = document["layers"]
    assert isinstance(layers, list)
    (layer,) = layers
    assert isinstance(layer, dict)
    assert layer["mediaType"] == "application/vnd.acx.cartridge.layer.v1+sqlite"
    assert (layer["digest"], layer["size"]) == (LAYER, 4096)
    assert built.body == canonicalize(document)
    assert built.digest == "sha256:" + hashlib.sha256(built.body).hexdigest()
    again = cartridge_manifest(
        layer_digest=LAYER, layer_size=4096, rom_hash=ROM, spec_version="0.1", title="a.acx"
    )
    assert again.body == built.body


@pytest.mark.req("engram.oci.layer-annotations")
def test_the_layer_carries_the_rom_hash_spec_version_and_title() -> None:
    (layer,) = _manifest()["layers"]
    assert layer["annotations"] == {
        "vnd.acx.rom-manifest-hash": ROM,
        "vnd.acx.spec-version": "0.1",
        "org.opencontainers.image.title": "a.acx",
    }


def _set(document: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    target = document
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value


@pytest.mark.req("engram.oci.pull-shape", "engram.oci.vendor-tree")
@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        (("schemaVersion",), 1, "schemaVersion"),
        (("mediaType",), "application/vnd.oci.image.index.v1+json", "mediaType"),
        (("artifactType",), KeyError, "artifactType"),
        (("artifactType",), "application/vnd.agentibus.agent.bundle.v1", "artifactType"),
        (("config", "size"), 3, "empty descriptor"),
        (("config", "mediaType"), "application/vnd.oci.image.config.v1+json", "empty descriptor"),
        (("config", "data"), "e30K", "empty descriptor"),
        (("layers",), [], "exactly one layer"),
        (("layers", 0, "mediaType"), "application/vnd.oci.image.layer.v1.tar+gzip", "mediaType"),
        (("layers", 0, "digest"), "sha512:" + "0" * 128, "digest"),
        (("layers", 0, "size"), -1, "size"),
        (("layers", 0, "size"), 2 << 30, "limit"),
        (("layers", 0, "annotations"), {}, "vnd.acx.rom-manifest-hash"),
    ],
)
def test_a_manifest_that_is_not_a_cartridge_is_refused(
    path: tuple[Any, ...], value: Any, reason: str
) -> None:
    document = _manifest()
    _set(document, path, value)
    with pytest.raises(ArtifactRefused, match=reason):
        check_cartridge_manifest(document, max_layer_bytes=1 << 30)


@pytest.mark.req("engram.oci.pull-shape")
def test_the_empty_config_may_embed_its_data_and_a_bad_title_is_not_used() -> None:
    document = _manifest()
    document["config"]["data"] = "e30="
    document["layers"][0]["annotations"]["org.opencontainers.image.title"] = "../../etc/passwd"
    layer = check_cartridge_manifest(document, max_layer_bytes=1 << 30)
    assert layer.title == "cartridge.acx"
    assert layer.rom_hash == ROM


@pytest.mark.req("engram.oci.auth")
def test_www_authenticate_challenges_are_read_as_rfc_7235_writes_them() -> None:
    bearer = parse_challenge(
        'Bearer realm="https://auth.example.com/token",service="registry.example.com",'
        'scope="repository:team/agent:pull,push"'
    )
    assert bearer is not None
    assert bearer.scheme == "bearer"
    assert bearer.params == {
        "realm": "https://auth.example.com/token",
        "service": "registry.example.com",
        "scope": "repository:team/agent:pull,push",
    }
    basic = parse_challenge('Basic realm="engram-test"')
    assert basic is not None
    assert (basic.scheme, basic.params) == ("basic", {"realm": "engram-test"})
