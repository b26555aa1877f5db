"""The .acx step: levels and policies read from a verified cartridge (reference and engram)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from level_kit import VECTORS

from engram.cli import cli, run_cli
from engram.core.keys import PrivateKey, save_private_key

REFERENCE_ACX = (
    VECTORS
    / "acx-reference"
    / "registry"
    / "cartridges"
    / "io.github.ridgeworks"
    / "ada-ridge"
    / "1.0.0"
    / "cartridge.acx"
)
REFERENCE_ROM = "sha256:318b930a1942eb9d3e8088906c6b32f91def9e156d4cbb3a178e676d4e28aaca"
POLICY_OID = "sha256:bb913e01807a12e47a4f87df8c4932eab5d8b1f5ef490b48e827de58b8563a40"
DID = "did:web:verifier.example.org"
URL = "https://verifier.example.org/status/1"


def _tampered(tmp_path: Path) -> Path:
    """A copy of the reference cartridge with one signed ROM meta value changed (stock sqlite3)."""
    copy = tmp_path / "tampered.acx"
    shutil.copyfile(REFERENCE_ACX, copy)
    with sqlite3.connect(copy) as db:
        db.execute("UPDATE cartridge SET value = value || 'x' WHERE key = 'acx.agent_name'")
    return copy


def _key(tmp_path: Path, name: str) -> tuple[PrivateKey, Path]:
    key = PrivateKey.generate()
    save_private_key(tmp_path / name, key)
    return key, tmp_path / name


@pytest.mark.req("engram.policy.effective-provenance", "engram.policy.schema")
def test_the_policy_command_reads_the_reference_cartridge_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(cli, ["cartridge", "policy", str(REFERENCE_ACX), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["policyDigest"] == POLICY_OID  # the ROM object's oid in the signed manifest
    assert document["schemaVersion"] == "acx.loop-context-policy/1.1"
    assert run_cli(cli, ["cartridge", "policy", str(_tampered(tmp_path))]) == 1
    assert "cartridge_tampered" in capsys.readouterr().err


@pytest.mark.req("engram.level.rom-binding", "engram.level.cli")
def test_a_level_proved_on_the_reference_cartridge_binds_to_its_manifest_hash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key, key_path = _key(tmp_path, "verifier.pem")
    (tmp_path / "verifier.pub").write_bytes(key.public_key().to_pem())
    status, cred = tmp_path / "status.json", tmp_path / "cred.json"
    assert (
        run_cli(
            cli,
            [
                "cartridge",
                "level",
                "status-list",
                "--id",
                URL,
                "--issuer",
                DID,
                "--key",
                str(key_path),
                "-o",
                str(status),
            ],
        )
        == 0
    )
    assert (
        run_cli(
            cli,
            [
                "cartridge",
                "level",
                "prove",
                "--demo-solver",
                str(REFERENCE_ACX),
                "--verifier-key",
                str(key_path),
                "--verifier-did",
                DID,
                "--status-list-url",
                URL,
                "--ledger",
                str(tmp_path / "ledger.sqlite"),
                "-o",
                str(cred),
            ],
        )
        == 0
    )
    credential = json.loads(cred.read_bytes())
    result = credential["credentialSubject"]["result"][0]
    assert result["acx:cartridgeRomDigest"] == REFERENCE_ROM
    assert credential["credentialSubject"]["id"].startswith(
        "urn:acx:cartridge:io.github.ridgeworks/ada-ridge@"
    )
    verify = [
        "cartridge",
        "level",
        "verify",
        str(cred),
        "--cartridge",
        str(REFERENCE_ACX),
        "--issuer-key",
        str(tmp_path / "verifier.pub"),
        "--status-list",
        str(status),
    ]
    capsys.readouterr()
    assert run_cli(cli, verify) == 0
    assert "bound to the ROM digest" in capsys.readouterr().out
    verify[verify.index(str(REFERENCE_ACX))] = str(_tampered(tmp_path))
    assert run_cli(cli, verify) == 1
    assert "cartridge_tampered" in capsys.readouterr().err


@pytest.mark.req("engram.level.self-issuance")
def test_the_publisher_cannot_level_its_own_cartridge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, key_path = _key(tmp_path, "publisher.pem")
    package = VECTORS / "acx-reference" / "examples" / "sample-agent-package"
    acx = tmp_path / "agent.acx"
    assert (
        run_cli(
            cli,
            [
                "cartridge",
                "export",
                str(package),
                "-o",
                str(acx),
                "--publisher",
                "io.github.alice",
                "--sign-key",
                str(key_path),
            ],
        )
        == 0
    )
    code = run_cli(
        cli,
        [
            "cartridge",
            "level",
            "prove",
            "--demo-solver",
            str(acx),
            "--verifier-key",
            str(key_path),
            "--verifier-did",
            DID,
            "--status-list-url",
            URL,
            "--ledger",
            str(tmp_path / "l.sqlite"),
            "-o",
            str(tmp_path / "c.json"),
        ],
    )
    assert code == 2
    assert (
        "self-issuance rejected (the issuer key is the publisher's key)" in capsys.readouterr().err
    )
    assert not (tmp_path / "c.json").exists()
