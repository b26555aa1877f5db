"""``engram cartridge push | pull | discover | attach-level`` as a user runs them (docs/spec/cli.md,
docs/spec/acx-oci.md §8), against the real docker-registry."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from oci_kit import VERIFIER, RunningRegistry, build_cartridge, level_credential, status_list

from engram.cartridge import Cartridge, verify

Shell = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.req("engram.oci.cli", "engram.oci.byte-exact")
def test_push_discover_attach_pull_from_the_command_line(
    registry: RunningRegistry, work: Path, engram_shell: Shell
) -> None:
    acx = build_cartridge(work)
    with Cartridge.open(acx) as cartridge:
        rom = verify(cartridge).manifest_hash
    credential = work / "level.json"
    credential.write_bytes(level_credential(work, rom))
    target = f"{registry.host}/cli/agent:1.0.0"

    pushed = engram_shell("cartridge", "push", str(acx), target, "--json")
    assert pushed.returncode == 0, pushed.stderr
    assert json.loads(pushed.stdout)["romManifestHash"] == rom

    issuer = work / "verifier.pub.pem"
    issuer.write_bytes(VERIFIER.key.public_key().to_pem())
    status = work / "status.json"
    status.write_bytes(status_list())
    how = ["--issuer-key", str(issuer), "--status-list", str(status)]
    attached = engram_shell("cartridge", "attach-level", target, str(credential), *how)
    assert attached.returncode == 0, attached.stderr
    assert "application/vnd.acx.level-attestation.v1" in attached.stdout

    found = engram_shell("cartridge", "discover", target, *how)  # it verifies the level too
    assert found.returncode == 0, found.stderr
    assert "2 referrer(s), via the referrers tag" in found.stdout
    assert "application/vnd.dsse.envelope.v1+json" in found.stdout

    pulled = engram_shell("cartridge", "pull", target, "-o", str(work / "out"), "--json")
    assert pulled.returncode == 0, pulled.stderr
    assert Path(json.loads(pulled.stdout)["path"]).read_bytes() == acx.read_bytes()


@pytest.mark.req("engram.oci.cli")
def test_errors_are_one_line_with_the_code(
    registry: RunningRegistry, work: Path, engram_shell: Shell
) -> None:
    bad_reference = engram_shell("cartridge", "pull", "agent:1.0", "-o", str(work))
    assert bad_reference.returncode == 2
    assert bad_reference.stderr.startswith("error: invalid_reference: ")
    assert len(bad_reference.stderr.splitlines()) == 1

    missing = engram_shell("cartridge", "pull", f"{registry.host}/cli/none:1", "-o", str(work))
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: artifact_refused: ")
    assert "Traceback" not in missing.stderr

    acx = build_cartridge(work)
    no_tag = engram_shell(
        "cartridge", "push", str(acx), f"{registry.host}/cli/agent@sha256:" + "0" * 64
    )
    assert no_tag.returncode == 2
    assert "needs a tag" in no_tag.stderr

    unreachable = engram_shell("cartridge", "discover", "127.0.0.1:1/cli/agent:1")
    assert unreachable.returncode == 1
    assert unreachable.stderr.startswith("error: registry_error: cannot reach 127.0.0.1:1")


@pytest.mark.req("engram.oci.level-verified-before-attach")
def test_attach_level_refuses_a_revoked_or_unverifiable_credential_in_one_line(
    registry: RunningRegistry, work: Path, engram_shell: Shell
) -> None:
    acx = build_cartridge(work)
    with Cartridge.open(acx) as cartridge:
        rom = verify(cartridge).manifest_hash
    credential = work / "level.json"
    credential.write_bytes(level_credential(work, rom))
    issuer = work / "verifier.pub.pem"
    issuer.write_bytes(VERIFIER.key.public_key().to_pem())
    revoked = work / "revoked-status.json"
    revoked.write_bytes(status_list(revoked=credential.read_bytes()))
    target = f"{registry.host}/cli/refused:1.0.0"
    assert engram_shell("cartridge", "push", str(acx), target).returncode == 0

    args = ["cartridge", "attach-level", target, str(credential)]
    refused = engram_shell(*args, "--issuer-key", str(issuer), "--status-list", str(revoked))
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: level_unverified: the level credential is revoked")
    assert len(refused.stderr.splitlines()) == 1

    # No key for its did:web issuer: the proof cannot be checked, so it is not vouched for.
    current = work / "status.json"
    current.write_bytes(status_list())
    unknown = engram_shell(*args, "--status-list", str(current))
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("error: level_unverified: the level credential does not")
    assert "proof" in unknown.stderr
    assert len(unknown.stderr.splitlines()) == 1

    found = engram_shell("cartridge", "discover", target)
    assert "1 referrer(s)" in found.stdout  # the DSSE signature alone
