"""``--installation-salt-file`` is raw key bytes (SPEC §7.2; issue 32, point 5): nothing is
stripped, so 32 random bytes that end in 0x0a are a valid salt, and ``salt`` and ``salt\\n``
are two different salts with two different codebase fingerprints. Before, the file was
stripped: the first was refused as too short and the second pair fingerprinted alike."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from cartridge_kit import RECORDS, run, write_package


def _fingerprints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, salt: bytes, name: str
) -> set[str]:
    package = write_package(tmp_path / f"pkg-{name}", records=RECORDS)
    salt_file = tmp_path / f"salt-{name}"
    salt_file.write_bytes(salt)
    out = tmp_path / f"{name}.acx"
    code, _, err = run(
        capsys, "cartridge", "export", str(package), "-o", str(out), "--publisher",
        "io.github.acme", "--include-field-learned", "--installation-salt-file", str(salt_file),
    )  # fmt: skip
    assert code == 0, err
    with sqlite3.connect(out) as db:
        payloads = [json.loads(p) for (p,) in db.execute("SELECT payload FROM memory")]
    found = {str(p["codebaseFingerprint"]) for p in payloads if p.get("codebaseFingerprint")}
    assert found
    return found


@pytest.mark.req("engram.cartridge.salt-raw-bytes")
def test_a_salt_is_its_raw_bytes_trailing_newline_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    random_ending_in_newline = os.urandom(31) + b"\n"
    assert _fingerprints(capsys, tmp_path, random_ending_in_newline, "random")
    plain = _fingerprints(capsys, tmp_path, b"s" * 32, "plain")
    newline = _fingerprints(capsys, tmp_path, b"s" * 32 + b"\n", "newline")
    assert plain.isdisjoint(newline)
