"""engram.oci against Debian's docker-registry 2.8 (CNCF distribution), which has no Referrers
API: push, pull byte-exact, the referrers-tag fallback, refusals, skopeo, oras-py, Basic auth
(lboel/acx@85f1358 SPEC.md §11; OCI Distribution Specification 1.1)."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from oci_kit import (
    NOW,
    REFERENCE_CARTRIDGE,
    RunningRegistry,
    build_cartridge,
    docker_registry,
    level_check,
    level_credential,
    needs,
    status_list,
)

from engram.cartridge import Cartridge, verify
from engram.core.keys import PrivateKey
from engram.level import LevelUnverified
from engram.oci import (
    ArtifactRefused,
    Credentials,
    RegistryAuthFailed,
    RegistryClient,
    RegistryError,
    attach_level,
    discover,
    parse_reference,
    pull_cartridge,
    push_cartridge,
)
from engram.oci.internals import cartridge_manifest

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
COSIGN_SIGNATURE = "dev.cosignproject.cosign/signature"


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def rom_hash(path: Path) -> str:
    with Cartridge.open(path) as cartridge:
        return verify(cartridge).manifest_hash


def client(registry: RunningRegistry, auth: Credentials | None = None) -> RegistryClient:
    return RegistryClient(registry.host, plain_http=True, credentials=auth)


def raw_manifest(registry: RunningRegistry, repo: str, reference: str) -> httpx.Response:
    return registry.get(
        f"/v2/{repo}/manifests/{reference}", headers={"Accept": f"{MANIFEST}, {INDEX}"}
    )


@pytest.mark.req("engram.oci.byte-exact", "engram.oci.image-manifest", "engram.oci.single-layer")
def test_a_pushed_cartridge_pulls_back_byte_exact_and_verifies(
    registry: RunningRegistry, work: Path
) -> None:
    acx = build_cartridge(work)
    ref = parse_reference(f"{registry.host}/acme/agent:1.0.0")
    with client(registry) as c:
        pushed = push_cartridge(acx, ref, c, now=NOW)
        pulled = pull_cartridge(ref, work / "out", c, now=NOW)
    assert pulled.path == work / "out" / "agent.acx"
    assert pulled.path.read_bytes() == acx.read_bytes()
    assert pulled.rom_hash == pushed.rom_hash == rom_hash(acx)
    assert pulled.trust == "portable"
    # What the registry serves, read without engram: the manifest engram built, byte for byte.
    served = raw_manifest(registry, "acme/agent", "1.0.0")
    assert served.headers["Docker-Content-Digest"] == pushed.manifest_digest == sha(served.content)
    document = json.loads(served.content)
    assert document["artifactType"] == "application/vnd.acx.cartridge.v1"
    assert [layer["digest"] for layer in document["layers"]] == [sha(acx.read_bytes())]
    blob = registry.get(f"/v2/acme/agent/blobs/{sha(acx.read_bytes())}")
    assert blob.content == acx.read_bytes()  # raw SQLite bytes: no tar, no compression
    assert blob.content[:16] == b"SQLite format 3\x00"


@pytest.mark.req("engram.oci.byte-exact")
def test_pushing_the_same_cartridge_again_gives_the_same_manifest_digest(
    registry: RunningRegistry, work: Path
) -> None:
    acx = build_cartridge(work)
    with client(registry) as c:
        first = push_cartridge(acx, parse_reference(f"{registry.host}/acme/again:1"), c, now=NOW)
        second = push_cartridge(acx, parse_reference(f"{registry.host}/acme/again:2"), c, now=NOW)
    assert first.manifest_digest == second.manifest_digest
    assert first.uploaded
    assert not second.uploaded


@pytest.mark.req(
    "engram.oci.referrers-fallback", "engram.oci.dsse-referrer", "engram.oci.level-referrer"
)
def test_without_a_referrers_api_the_fallback_tag_index_lists_dsse_and_level_referrers(
    registry: RunningRegistry, work: Path
) -> None:
    acx = build_cartridge(work)
    rom = rom_hash(acx)
    credential = level_credential(work, rom)
    ref = parse_reference(f"{registry.host}/acme/levelled:1.0.0")
    with client(registry) as c:
        pushed = push_cartridge(
            acx, ref, c, levels=[credential], level_check=level_check(), now=NOW
        )
        # This registry has no referrers API: it answers 404 there and never sets OCI-Subject.
        assert (
            registry.get(f"/v2/acme/levelled/referrers/{pushed.manifest_digest}").status_code == 404
        )
        assert {r.via for r in pushed.referrers} == {"tag"}
        found = discover(ref, c, level_check=level_check())
    assert found.via == "tag"
    kinds = sorted(r.artifact_type for r in found.referrers)
    assert kinds == [
        "application/vnd.acx.level-attestation.v1",
        "application/vnd.dsse.envelope.v1+json",
    ]
    assert all(r.ok for r in found.referrers), [r.checks for r in found.referrers]
    # The index at sha256-<hex>, read without engram, is what the distribution spec asks for.
    tag = "sha256-" + pushed.manifest_digest.removeprefix("sha256:")
    index_response = raw_manifest(registry, "acme/levelled", tag)
    assert index_response.headers["Content-Type"] == INDEX
    index = json.loads(index_response.content)
    assert index["schemaVersion"] == 2
    assert index["mediaType"] == INDEX
    for entry in index["manifests"]:
        referrer = json.loads(raw_manifest(registry, "acme/levelled", entry["digest"]).content)
        assert referrer["subject"]["digest"] == pushed.manifest_digest
        assert entry["artifactType"] == referrer["artifactType"]
        assert entry["annotations"] == referrer["annotations"]  # every annotation copied
        assert entry["size"] == len(
            raw_manifest(registry, "acme/levelled", entry["digest"]).content
        )
        (layer,) = referrer["layers"]
        payload = registry.get(f"/v2/acme/levelled/blobs/{layer['digest']}").content
        if referrer["artifactType"] == "application/vnd.dsse.envelope.v1+json":
            assert layer["mediaType"] == "application/vnd.dsse.envelope.v1+json"
            with Cartridge.open(acx) as cartridge:
                (row,) = cartridge.query("SELECT envelope FROM signatures")
            assert payload == str(row[0]).encode()
        else:
            assert layer["mediaType"] == "application/vc"
            assert payload == credential


@pytest.mark.req("engram.oci.referrers-fallback", "engram.oci.level-referrer")
def test_attach_level_adds_to_the_index_once_and_refuses_a_credential_for_another_rom(
    registry: RunningRegistry, work: Path
) -> None:
    acx = build_cartridge(work)
    ref = parse_reference(f"{registry.host}/acme/attach:1.0.0")
    credential = level_credential(work, rom_hash(acx))
    with client(registry) as c:
        pushed = push_cartridge(acx, ref, c, now=NOW)
        first = attach_level(ref, credential, c, check=level_check())
        second = attach_level(ref, credential, c, check=level_check())
        with pytest.raises(ArtifactRefused, match="bound to ROM"):
            attach_level(ref, level_credential(work, "sha256:" + "0" * 64), c, check=level_check())
    assert first.changed
    assert not second.changed
    assert first.digest == second.digest
    tag = "sha256-" + pushed.manifest_digest.removeprefix("sha256:")
    index = json.loads(raw_manifest(registry, "acme/attach", tag).content)
    assert len(index["manifests"]) == 2  # the DSSE referrer and one level credential, no duplicate


@pytest.mark.req("engram.oci.level-verified-before-attach")
def test_attach_level_refuses_a_revoked_or_unverifiable_credential(
    registry: RunningRegistry, work: Path
) -> None:
    acx = build_cartridge(work)
    ref = parse_reference(f"{registry.host}/acme/revoked:1.0.0")
    credential = level_credential(work, rom_hash(acx))
    tampered = credential.replace(b'"acx:gamesPlayed":90', b'"acx:gamesPlayed":91')
    assert tampered != credential
    with client(registry) as c:
        pushed = push_cartridge(acx, ref, c, now=NOW)
        with pytest.raises(LevelUnverified, match="revoked"):
            attach_level(ref, credential, c, check=level_check(status_list(revoked=credential)))
        with pytest.raises(LevelUnverified, match=r"does not verify: .*proof"):
            attach_level(ref, tampered, c, check=level_check())
        listed = c.referrers("acme/revoked", pushed.manifest_digest)
    # Only the cartridge's own DSSE signature: neither credential reached the registry.
    assert [d.get("artifactType") for d in listed.descriptors] == [
        "application/vnd.dsse.envelope.v1+json"
    ]


@pytest.mark.req("engram.oci.referrers-fallback")
def test_a_referrers_tag_that_is_not_an_index_is_never_overwritten(
    registry: RunningRegistry, work: Path
) -> None:
    acx = build_cartridge(work)
    ref = parse_reference(f"{registry.host}/acme/squatted:1.0.0")
    manifest = cartridge_manifest(
        layer_digest=sha(acx.read_bytes()),
        layer_size=acx.stat().st_size,
        rom_hash=rom_hash(acx),
        spec_version="0.1",
        title="agent.acx",
    )
    with client(registry) as c:
        # Someone put an image manifest (not an index) at the referrers tag first.
        c.push_blob("acme/squatted", b"{}", sha(b"{}"), 2)
        c.push_blob("acme/squatted", acx.read_bytes(), sha(acx.read_bytes()), acx.stat().st_size)
        tag = "sha256-" + manifest.digest.removeprefix("sha256:")
        c.put_manifest("acme/squatted", tag, manifest.body, MANIFEST)
        with pytest.raises(RegistryError, match="not the referrers image index"):
            push_cartridge(acx, ref, c, now=NOW)
    assert sha(raw_manifest(registry, "acme/squatted", tag).content) == manifest.digest


def _tampered_copy(acx: Path, out: Path) -> Path:
    out.write_bytes(acx.read_bytes())
    with sqlite3.connect(out) as db:
        db.execute(
            "UPDATE sqlar SET data = CAST('forged' AS BLOB), sz = 6 "
            "WHERE name = 'rom/knowledge/IDENTITY.md'"
        )
    return out


def _put_raw(c: RegistryClient, repo: str, tag: str, acx: Path, rom: str) -> None:
    """A cartridge manifest pushed without engram's checks (as a hostile publisher would)."""
    data = acx.read_bytes()
    c.push_blob(repo, b"{}", sha(b"{}"), 2)
    c.push_blob(repo, data, sha(data), len(data))
    manifest = cartridge_manifest(
        layer_digest=sha(data),
        layer_size=len(data),
        rom_hash=rom,
        spec_version="0.1",
        title="x.acx",
    )
    c.put_manifest(repo, tag, manifest.body, MANIFEST)


@pytest.mark.req("engram.oci.pull-verify-before-write", "engram.oci.two-integrities")
def test_a_tampered_layer_is_refused_and_nothing_is_written(
    registry: RunningRegistry, work: Path
) -> None:
    acx = build_cartridge(work)
    tampered = _tampered_copy(acx, work / "tampered.acx")
    out = work / "out"
    with client(registry) as c:
        _put_raw(c, "acme/tampered", "1.0.0", tampered, rom_hash(acx))
        with pytest.raises(ArtifactRefused, match="tampered"):
            pull_cartridge(parse_reference(f"{registry.host}/acme/tampered:1.0.0"), out, c, now=NOW)
        # engram's own push refuses the same bytes before anything is uploaded.
        with pytest.raises(ArtifactRefused, match="tampered"):
            push_cartridge(tampered, parse_reference(f"{registry.host}/acme/t2:1"), c, now=NOW)
    assert not out.exists()


@pytest.mark.req("engram.oci.two-integrities", "engram.oci.pull-verify-before-write")
def test_a_layer_whose_rom_hash_is_not_the_announced_one_is_refused(
    registry: RunningRegistry, work: Path
) -> None:
    acx = build_cartridge(work)
    out = work / "out"
    out.mkdir()
    with client(registry) as c:
        _put_raw(c, "acme/mislabelled", "1.0.0", acx, "sha256:" + "9" * 64)
        with pytest.raises(ArtifactRefused, match="not the sha256:9999"):
            pull_cartridge(
                parse_reference(f"{registry.host}/acme/mislabelled:1.0.0"), out, c, now=NOW
            )
    assert list(out.iterdir()) == []


@pytest.mark.req("engram.oci.push-verified")
def test_an_unsigned_cartridge_is_not_pushed(registry: RunningRegistry, work: Path) -> None:
    acx = build_cartridge(work)
    unsigned = work / "unsigned.acx"
    unsigned.write_bytes(acx.read_bytes())
    with sqlite3.connect(unsigned) as db:
        db.execute("DELETE FROM signatures")
    with client(registry) as c, pytest.raises(ArtifactRefused, match="unsigned"):
        push_cartridge(unsigned, parse_reference(f"{registry.host}/acme/unsigned:1"), c, now=NOW)
    assert registry.get("/v2/acme/unsigned/manifests/1").status_code == 404


@pytest.mark.req("engram.oci.byte-exact", "engram.oci.stock-tools")
def test_the_reference_cartridge_travels_unchanged(registry: RunningRegistry, work: Path) -> None:
    ref = parse_reference(f"{registry.host}/ridgeworks/ada-ridge:1.0.0")
    with client(registry) as c:
        pushed = push_cartridge(REFERENCE_CARTRIDGE, ref, c, now=NOW)
        pulled = pull_cartridge(ref, work, c, now=NOW)
    assert (
        pushed.rom_hash == "sha256:318b930a1942eb9d3e8088906c6b32f91def9e156d4cbb3a178e676d4e28aaca"
    )
    assert pulled.path.name == "cartridge.acx"
    assert pulled.path.read_bytes() == REFERENCE_CARTRIDGE.read_bytes()
    # The reference's embedded level credential is attached as a referrer too.
    assert sorted(r.artifact_type for r in pushed.referrers) == [
        "application/vnd.acx.level-attestation.v1",
        "application/vnd.dsse.envelope.v1+json",
    ]


@pytest.mark.req("engram.oci.stock-tools")
def test_skopeo_copies_the_artifact_unchanged(registry: RunningRegistry, work: Path) -> None:
    skopeo = needs("skopeo", "skopeo")
    acx = build_cartridge(work)
    ref = parse_reference(f"{registry.host}/acme/skopeo:1.0.0")
    with client(registry) as c:
        pushed = push_cartridge(acx, ref, c, now=NOW)
    layout = work / "layout"
    subprocess.run(
        [skopeo, "copy", "--src-tls-verify=false", f"docker://{ref}", f"oci:{layout}:1.0.0"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    index = json.loads((layout / "index.json").read_text())
    (entry,) = index["manifests"]
    assert entry["digest"] == pushed.manifest_digest  # the manifest bytes were kept
    blobs = layout / "blobs" / "sha256"
    assert (blobs / pushed.layer_digest.removeprefix("sha256:")).read_bytes() == acx.read_bytes()
    raw = subprocess.run(
        [skopeo, "inspect", "--raw", "--tls-verify=false", f"docker://{ref}"],
        check=True,
        capture_output=True,
        timeout=60,
    ).stdout
    assert sha(raw) == pushed.manifest_digest


@pytest.mark.req("engram.oci.stock-tools")
def test_oras_py_pulls_the_cartridge_by_its_title(registry: RunningRegistry, work: Path) -> None:
    oras_client = pytest.importorskip("oras.client")
    acx = build_cartridge(work, name="titled.acx")
    ref = parse_reference(f"{registry.host}/acme/oras:1.0.0")
    with client(registry) as c:
        push_cartridge(acx, ref, c, now=NOW)
    oras = oras_client.OrasClient(hostname=registry.host, insecure=True)
    files = oras.pull(target=str(ref), outdir=str(work / "oras"))
    assert [Path(f).name for f in files] == ["titled.acx"]
    assert Path(files[0]).read_bytes() == acx.read_bytes()


@pytest.mark.req("engram.oci.auth")
def test_a_registry_with_htpasswd_basic_auth(tmp_path: Path) -> None:
    pytest.importorskip("bcrypt")
    acx = build_cartridge(tmp_path)
    with docker_registry(tmp_path / "basic", htpasswd=("alice", "s3cret-pass")) as registry:
        ref = parse_reference(f"{registry.host}/acme/private:1.0.0")
        with client(registry) as anonymous, pytest.raises(RegistryAuthFailed, match="username"):
            push_cartridge(acx, ref, anonymous, now=NOW)
        wrong = client(registry, Credentials("alice", "wrong"))
        with wrong, pytest.raises(RegistryAuthFailed, match="refused"):
            push_cartridge(acx, ref, wrong, now=NOW)
        with client(registry, Credentials("alice", "s3cret-pass")) as alice:
            push_cartridge(acx, ref, alice, now=NOW)
            pulled = pull_cartridge(ref, tmp_path / "out", alice, now=NOW)
            assert len(discover(ref, alice).referrers) == 1
    assert pulled.path.read_bytes() == acx.read_bytes()


@pytest.mark.req("engram.oci.cosign-layout")
def test_the_cosign_signature_and_attestation_follow_cosigns_specs(
    registry: RunningRegistry, work: Path
) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from securesystemslib.dsse import Envelope

    key = PrivateKey.generate()
    acx = build_cartridge(work)
    ref = parse_reference(f"{registry.host}/acme/cosigned:1.0.0")
    with client(registry) as c:
        pushed = push_cartridge(acx, ref, c, cosign_key=key, now=NOW)
        push_cartridge(acx, ref, c, cosign_key=key, now=NOW)  # again: nothing added twice
    public = Ed25519PublicKey.from_public_bytes(key.public_key().raw)
    hexdigest = pushed.manifest_digest.removeprefix("sha256:")
    signature = json.loads(
        raw_manifest(registry, "acme/cosigned", f"sha256-{hexdigest}.sig").content
    )
    assert signature["config"]["mediaType"] == "application/vnd.oci.image.config.v1+json"
    (layer,) = signature["layers"]
    assert layer["mediaType"] == "application/vnd.dev.cosign.simplesigning.v1+json"
    payload = registry.get(f"/v2/acme/cosigned/blobs/{layer['digest']}").content
    claims = json.loads(payload)
    assert claims["critical"]["type"] == "cosign container image signature"
    assert claims["critical"]["image"]["docker-manifest-digest"] == pushed.manifest_digest
    public.verify(base64.b64decode(layer["annotations"][COSIGN_SIGNATURE]), payload)
    attestation = json.loads(
        raw_manifest(registry, "acme/cosigned", f"sha256-{hexdigest}.att").content
    )
    (att_layer,) = attestation["layers"]
    assert att_layer["mediaType"] == "application/vnd.dsse.envelope.v1+json"
    assert att_layer["annotations"]["predicateType"] == "https://acx.dev/attestation/cartridge/v1"
    raw = json.loads(registry.get(f"/v2/acme/cosigned/blobs/{att_layer['digest']}").content)
    assert raw["payloadType"] == "application/vnd.in-toto+json"
    assert [s["keyid"] for s in raw["signatures"]] == [""]  # as cosign writes a key-signed one
    signature_b64 = raw["signatures"][0]["sig"]
    envelope = Envelope.from_dict(copy.deepcopy(raw))  # securesystemslib's DSSE: its own PAE
    public.verify(base64.b64decode(signature_b64), envelope.pae())
    statement: dict[str, Any] = json.loads(envelope.payload)
    # cosign checks the Statement's subject against the image manifest digest, not the ROM hash.
    assert statement["subject"][0]["digest"] == {"sha256": hexdigest}
    assert statement["predicate"]["manifestHash"] == pushed.rom_hash
