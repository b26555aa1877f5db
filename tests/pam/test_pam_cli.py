"""``engram memory export|import --format pam`` as a user runs them: a real ``engram`` process,
a SQLite or PostgreSQL database, files the PAM SDK reads and writes (docs/spec/pam.md "Command
line", docs/spec/cli.md)."""

from __future__ import annotations

import json
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import portable_ai_memory as pam
import pytest
from pam_kit import engine_on, reference_verify, save_sdk_document, sdk_check

from engram.core.keys import PrivateKey, save_private_key
from engram.memory import default_manifest_text, recall
from engram.store import open_store

EngramShell = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.mark.req("engram.pam.cli")
def test_export_and_import_from_the_shell(
    engram_shell: EngramShell, any_database_url: str, tmp_path: Path
) -> None:
    ote = tmp_path / "ote.toml"
    ote.write_text(default_manifest_text(), encoding="utf-8")
    common = ["--ote", str(ote), "--db", any_database_url]
    sdk_file = tmp_path / "from-sdk.json"
    save_sdk_document(sdk_file)

    imported = engram_shell("memory", "import", "--format", "pam", str(sdk_file), *common)
    assert imported.returncode == 0, imported.stderr
    assert "5 new, 0 updated, 0 unchanged" in imported.stdout
    assert "signature: unsigned" in imported.stdout

    key = tmp_path / "pam.pem"
    save_private_key(key, PrivateKey.generate())
    out = tmp_path / "export.json"
    exported = engram_shell(
        "memory", "export", "--format", "pam", str(out), "--sign-key", str(key), *common
    )
    assert exported.returncode == 0, exported.stderr
    assert "exported 5 memories (full)" in exported.stdout
    assert stat.S_IMODE(out.stat().st_mode) == 0o600  # a PAM file holds personal data
    document = json.loads(out.read_text(encoding="utf-8"))
    loaded = pam.load(out)  # the SDK's own reader
    assert isinstance(loaded, pam.MemoryStore)
    sdk_check(document)
    assert reference_verify(document)

    summary = engram_shell("memory", "import", str(out), "--json", *common)
    assert summary.returncode == 0, summary.stderr
    assert json.loads(summary.stdout)["unchanged"] == 5  # --format defaults to pam

    store = open_store(any_database_url)
    try:
        hits = recall(engine_on(store), "languages the user speaks", k=3).hits
        assert hits[0].memory.text.startswith("User is fluent in English and Spanish")
    finally:
        store.close()


@pytest.mark.req("engram.pam.cli", "engram.pam.refuse-tampered")
def test_a_bad_document_is_one_line_and_a_non_zero_exit(
    engram_shell: EngramShell, tmp_path: Path
) -> None:
    ote = tmp_path / "ote.toml"
    ote.write_text(default_manifest_text(), encoding="utf-8")
    common = ["--ote", str(ote), "--db", str(tmp_path / "engram.db")]
    document = save_sdk_document(tmp_path / "m.json")
    document["memories"][0]["content"] = "tampered"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document), encoding="utf-8")  # noqa: TID251 - a tampered file
    result = engram_shell("memory", "import", "--format", "pam", str(bad), *common)
    assert result.returncode == 1
    assert result.stderr.startswith("error: digest_mismatch: memories[0]")
    assert len(result.stderr.strip().splitlines()) == 1
    not_json = tmp_path / "not.json"
    not_json.write_text("{not json", encoding="utf-8")
    result = engram_shell("memory", "import", str(not_json), *common)
    assert (result.returncode, result.stderr.startswith("error: invalid_request")) == (2, True)
    unknown = engram_shell("memory", "export", "--format", "csv", "x.json", *common)
    assert unknown.returncode == 2
    assert "error: usage:" in unknown.stderr


@pytest.mark.req("engram.pam.cli", "engram.pam.signature")
def test_trusted_keys_from_the_shell(engram_shell: EngramShell, tmp_path: Path) -> None:
    ote = tmp_path / "ote.toml"
    ote.write_text(default_manifest_text(), encoding="utf-8")
    signer, stranger = PrivateKey.generate(), PrivateKey.generate()
    save_private_key(tmp_path / "signer.pem", signer)
    source = ["--ote", str(ote), "--db", str(tmp_path / "source.db")]
    target = ["--ote", str(ote), "--db", str(tmp_path / "target.db")]
    save_sdk_document(tmp_path / "sdk.json")
    assert engram_shell("memory", "import", str(tmp_path / "sdk.json"), *source).returncode == 0
    out = tmp_path / "signed.json"
    signing = ["--sign-key", str(tmp_path / "signer.pem")]
    assert engram_shell("memory", "export", str(out), *signing, *source).returncode == 0
    document = json.loads(out.read_text(encoding="utf-8"))
    (tmp_path / "stranger.pub.pem").write_bytes(stranger.public_key().to_pem())
    refused = engram_shell(
        "memory", "import", str(out), "--trusted-key", str(tmp_path / "stranger.pub.pem"), *target
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: signature_invalid: the document is signed by z6Mk")
    accepted = engram_shell(
        "memory", "import", str(out), "--trusted-key", document["signature"]["public_key"], *target
    )
    assert accepted.returncode == 0, accepted.stderr
    assert "signature: verified (z6Mk" in accepted.stdout
