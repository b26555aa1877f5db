"""``engram cartridge level status-list | prove | verify | revoke`` end to end, in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from level_kit import REFERENCE, ROM

from engram.cli import cli, run_cli
from engram.core.keys import PrivateKey, save_private_key

DID = "did:web:verifier.example.org"
URL = "https://verifier.example.org/status/1"


@pytest.mark.req("engram.level.cli")
def test_prove_verify_revoke_through_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = PrivateKey.generate()
    save_private_key(tmp_path / "verifier.pem", key)
    (tmp_path / "verifier.pub").write_bytes(key.public_key().to_pem())
    status = tmp_path / "status.json"
    cred = tmp_path / "cred.json"
    evidence = tmp_path / "evidence"
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
                str(tmp_path / "verifier.pem"),
                "-o",
                str(status),
            ],
        )
        == 0
    )
    prove = [
        "cartridge",
        "level",
        "prove",
        "--demo-solver",
        "--rom-digest",
        ROM,
        "--publisher",
        "io.github.alice",
        "--verifier-key",
        str(tmp_path / "verifier.pem"),
        "--verifier-did",
        DID,
        "--status-list-url",
        URL,
        "--ledger",
        str(tmp_path / "ledger.sqlite"),
        "--evidence-dir",
        str(evidence),
        "-o",
        str(cred),
    ]
    assert run_cli(cli, prove) == 0
    out = capsys.readouterr().out
    assert "ISSUED" in out
    assert len(list(evidence.glob("*.dsse.json"))) == 90
    verify = [
        "cartridge",
        "level",
        "verify",
        str(cred),
        "--rom-digest",
        ROM,
        "--issuer-key",
        str(tmp_path / "verifier.pub"),
        "--status-list",
        str(status),
        "--trusted-issuer-keyid",
        key.public_key().key_id,
        "--evidence",
        str(evidence),
    ]
    assert run_cli(cli, verify) == 0
    assert "VERIFIED; issuer trusted: True" in capsys.readouterr().out
    registry = tmp_path / "trust.json"
    registry.write_text(
        json.dumps(  # noqa: TID251 - a hand-written registry, not signed bytes
            {
                "schemaVersion": "acx.trust-registry/1",
                "keys": [
                    {
                        "keyid": key.public_key().key_id,
                        "publisherId": "org.example.verifier",
                        "algorithm": "ed25519",
                        "publicKeyPem": key.public_key().to_pem().decode(),
                        "status": "active",
                        "notBefore": "2020-01-01T00:00:00Z",
                        "notAfter": "2099-01-01T00:00:00Z",
                        "namespaceProof": {
                            "method": "dns-txt",
                            "txtRecord": "_acx-challenge.verifier.example.org",
                            "verifiedAt": "2020-01-01T00:00:00Z",
                        },
                    }
                ],
            }
        )
    )
    by_registry = [
        a for a in verify if a != key.public_key().key_id and a != "--trusted-issuer-keyid"
    ]
    assert run_cli(cli, [*by_registry, "--registry", str(registry)]) == 0
    assert "VERIFIED; issuer trusted: True" in capsys.readouterr().out
    empty = tmp_path / "empty.json"
    empty.write_text('{"schemaVersion": "acx.trust-registry/1", "keys": []}')
    assert run_cli(cli, [*by_registry, "--registry", str(empty)]) == 1
    assert "is not in the trust registry" in capsys.readouterr().out
    assert run_cli(cli, prove) == 2  # the cooldown: a second attempt at once is refused
    assert "cooldown" in capsys.readouterr().err
    revoke = [
        "cartridge",
        "level",
        "revoke",
        str(status),
        "--credential",
        str(cred),
        "--key",
        str(tmp_path / "verifier.pem"),
    ]
    assert run_cli(cli, revoke) == 0
    assert "revoked entry" in capsys.readouterr().out
    assert run_cli(cli, [*verify, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["revoked"] is True
    assert report["verified"] is False


@pytest.mark.req("engram.level.cli")
def test_a_weak_agent_is_not_issued_and_the_attempt_is_logged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = PrivateKey.generate()
    save_private_key(tmp_path / "v.pem", key)
    args = [
        "cartridge",
        "level",
        "prove",
        "--demo-solver",
        "--rom-digest",
        ROM,
        "--publisher",
        "io.github.alice",
        "--verifier-key",
        str(tmp_path / "v.pem"),
        "--verifier-did",
        DID,
        "--status-list-url",
        URL,
        "--ledger",
        str(tmp_path / "l.sqlite"),
        "--competence",
        "14",
        "--draw",
        "50",
        "-o",
        str(tmp_path / "c.json"),
    ]
    assert run_cli(cli, args) == 1
    assert "NOT ISSUED" in capsys.readouterr().out
    assert not (tmp_path / "c.json").exists()


@pytest.mark.req("engram.level.reports-departures", "engram.level.cli")
def test_verify_on_the_references_credential_lists_its_departures(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = run_cli(
        cli,
        [
            "cartridge",
            "level",
            "verify",
            str(REFERENCE / "proofs" / "level-credential.example.json"),
            "--status-list",
            # A list that cannot be retrieved (nothing listens on port 9). A path that does not
            # exist is a usage error since issue 32, not a retrieval failure.
            "http://127.0.0.1:9/missing-status-list.json",
        ],
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL ob3           $.credentialSubject.result[0].achievedLevel" in out
    assert "STATUS_RETRIEVAL_ERROR" in out
    assert "NOT VERIFIED" in out


@pytest.mark.req("engram.cli.errors-one-line")
@pytest.mark.parametrize(
    ("status_list", "credential"),
    [
        (
            '{"id": "x", "proof": "not an object"}',
            '{"credentialStatus": {"statusListCredential": "x", "statusListIndex": 1}}',
        ),
        ('{"id": "x"}', '{"credentialStatus": "not an object"}'),
        ('{"id": "x"}', '{"credentialStatus": ["a list"]}'),
    ],
)
def test_revoke_refuses_members_of_the_wrong_type_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], status_list: str, credential: str
) -> None:
    # Found by typing parse_object's result (issue 14 point 5): a string where an object belongs
    # used to escape as an AttributeError traceback.
    key = PrivateKey.generate()
    save_private_key(tmp_path / "v.pem", key)
    (tmp_path / "status.json").write_text(status_list)
    (tmp_path / "cred.json").write_text(credential)
    args = ["cartridge", "level", "revoke", str(tmp_path / "status.json")]
    args += ["--credential", str(tmp_path / "cred.json"), "--key", str(tmp_path / "v.pem")]
    assert run_cli(cli, args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: "), err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
