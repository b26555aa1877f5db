"""engram.oci against a registry that has the Referrers API (written in the tests, importing no
engram: ``referrers_registry``), with Bearer token auth and a registry that serves wrong bytes
(OCI Distribution Specification 1.1 "Listing Referrers", "Pushing Manifests with Subject")."""

from __future__ import annotations

from pathlib import Path

import pytest
from oci_kit import NOW, build_cartridge, level_check, level_credential, status_list
from referrers_registry import ReferrersRegistry

from engram.cartridge import Cartridge, verify
from engram.errors import InvalidRequest
from engram.level import LevelUnverified
from engram.oci import (
    ArtifactRefused,
    Credentials,
    RegistryAuthFailed,
    RegistryClient,
    discover,
    parse_reference,
    pull_cartridge,
    push_cartridge,
)

DSSE = "application/vnd.dsse.envelope.v1+json"
LEVEL = "application/vnd.acx.level-attestation.v1"


def _rom(path: Path) -> str:
    with Cartridge.open(path) as cartridge:
        return verify(cartridge).manifest_hash


@pytest.mark.req(
    "engram.oci.referrers-api", "engram.oci.dsse-referrer", "engram.oci.level-referrer"
)
def test_with_a_referrers_api_no_fallback_tag_is_written_and_discover_uses_the_api(
    tmp_path: Path,
) -> None:
    acx = build_cartridge(tmp_path)
    credential = level_credential(tmp_path, _rom(acx))
    with ReferrersRegistry() as registry:
        ref = parse_reference(f"{registry.host}/team/agent:2.0.0")
        with RegistryClient(registry.host, plain_http=True) as client:
            pushed = push_cartridge(
                acx, ref, client, levels=[credential], level_check=level_check(), now=NOW
            )
            everything = discover(ref, client, level_check=level_check())
            only_levels = discover(ref, client, artifact_type=LEVEL)
            pulled = pull_cartridge(ref, tmp_path / "out", client, now=NOW)
        tags = {tag for (_, tag) in registry.state.tags}
    assert {r.via for r in pushed.referrers} == {"api"}  # OCI-Subject was answered
    assert tags == {"2.0.0"}  # so no sha256-<hex> index was pushed
    assert everything.via == "api"
    assert sorted(r.artifact_type for r in everything.referrers) == [LEVEL, DSSE]
    assert all(r.ok for r in everything.referrers)
    # One descriptor per page: the two came through the Link header; the filter was applied.
    assert [r.artifact_type for r in only_levels.referrers] == [LEVEL]
    assert pulled.path.read_bytes() == acx.read_bytes()


@pytest.mark.req("engram.oci.auth")
def test_the_bearer_token_flow_with_a_token_realm(tmp_path: Path) -> None:
    acx = build_cartridge(tmp_path)
    with ReferrersRegistry(users={"bob": "hunter22"}) as registry:
        ref = parse_reference(f"{registry.host}/team/private:1.0.0")
        anonymous = RegistryClient(registry.host, plain_http=True)
        with anonymous, pytest.raises(RegistryAuthFailed, match="refused"):
            push_cartridge(acx, ref, anonymous, now=NOW)
        bad = RegistryClient(registry.host, plain_http=True, credentials=Credentials("bob", "x"))
        with bad, pytest.raises(RegistryAuthFailed):
            push_cartridge(acx, ref, bad, now=NOW)
        good = RegistryClient(
            registry.host, plain_http=True, credentials=Credentials("bob", "hunter22")
        )
        with good:
            push_cartridge(acx, ref, good, now=NOW)
            pulled = pull_cartridge(ref, tmp_path / "out", good, now=NOW)
        assert "GET /token" in registry.state.requests
    assert pulled.path.read_bytes() == acx.read_bytes()
    assert "hunter22" not in repr(Credentials("bob", "hunter22"))


@pytest.mark.req(
    "engram.oci.two-integrities", "engram.oci.pull-verify-before-write", "engram.oci.bounded"
)
def test_a_registry_serving_other_bytes_than_the_layer_digest_is_refused(tmp_path: Path) -> None:
    acx = build_cartridge(tmp_path)
    out = tmp_path / "out"
    with ReferrersRegistry() as registry:
        ref = parse_reference(f"{registry.host}/team/agent:1.0.0")
        with RegistryClient(registry.host, plain_http=True) as client:
            pushed = push_cartridge(acx, ref, client, now=NOW)
            registry.state.corrupt.add(pushed.layer_digest)
            with pytest.raises(ArtifactRefused, match="other bytes"):
                pull_cartridge(ref, out, client, now=NOW)
            registry.state.corrupt.clear()
            with pytest.raises(ArtifactRefused, match="limit"):
                pull_cartridge(ref, out, client, now=NOW, max_layer_bytes=1000)
    assert not out.exists()


@pytest.mark.req("engram.oci.byte-exact")
def test_a_large_cartridge_goes_up_in_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engram.oci import _client

    monkeypatch.setattr(_client, "MONOLITHIC_LIMIT", 64 * 1024)
    monkeypatch.setattr(_client, "CHUNK_BYTES", 32 * 1024)
    from engram.oci import _distribute

    monkeypatch.setattr(_distribute, "MONOLITHIC_LIMIT", 64 * 1024)
    acx = build_cartridge(tmp_path, padding=200_000)
    with ReferrersRegistry() as registry:
        ref = parse_reference(f"{registry.host}/team/big:1.0.0")
        with RegistryClient(registry.host, plain_http=True) as client:
            push_cartridge(acx, ref, client, now=NOW)
            pulled = pull_cartridge(ref, tmp_path / "out", client, now=NOW)
        patches = [r for r in registry.state.requests if r.startswith("PATCH")]
    assert len(patches) >= 7
    assert pulled.path.read_bytes() == acx.read_bytes()


@pytest.mark.req("engram.oci.level-verified-before-attach")
def test_push_with_a_revoked_level_pushes_nothing_and_discover_reports_a_revoked_one(
    tmp_path: Path,
) -> None:
    # Issue 32: `push --level` attached any credential bound to the ROM and `discover` showed a
    # revoked one "ok"; both now verify it as attach-level does.
    acx = build_cartridge(tmp_path)
    credential = level_credential(tmp_path, _rom(acx))
    revoked = level_check(status_list(revoked=credential))
    with ReferrersRegistry() as registry:
        ref = parse_reference(f"{registry.host}/team/agent:3.0.0")
        with RegistryClient(registry.host, plain_http=True) as client:
            with pytest.raises(LevelUnverified, match="revoked"):
                push_cartridge(acx, ref, client, levels=[credential], level_check=revoked, now=NOW)
            assert registry.state.manifests == {}  # refused before anything was pushed
            assert registry.state.blobs == {}
            push_cartridge(
                acx, ref, client, levels=[credential], level_check=level_check(), now=NOW
            )
            found = discover(ref, client, artifact_type=LEVEL, level_check=revoked)
            unchecked = discover(ref, client, artifact_type=LEVEL)
    [level] = found.referrers
    assert not level.ok
    assert ("verified", False) in [(c, h) for c, h, _ in level.checks]
    assert any("revoked" in d for c, _, d in level.checks if c == "verified")
    [plain] = unchecked.referrers  # without a verifier: bound to this ROM, not judged further
    assert plain.ok
    assert "verified" not in [c for c, _, _ in plain.checks]


@pytest.mark.req("engram.oci.level-verified-before-attach")
def test_levels_without_a_verifier_are_refused() -> None:
    with pytest.raises(InvalidRequest, match="level_check"):
        push_cartridge(
            Path("unused.acx"),
            parse_reference("localhost:9/team/agent:1"),
            RegistryClient("localhost:9", plain_http=True),
            levels=[b"{}"],
            now=NOW,
        )
