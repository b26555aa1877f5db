"""A public key given where a private one belongs (``--sign-key publisher.pem.pub``) is named
as a public key (issue 32, point 5), not refused with ``chmod 600`` advice that would not make
it sign."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engram.core.keys import PrivateKey, load_private_key, save_private_key
from engram.errors import KeyFileError


@pytest.mark.req("engram.core.keys.public-key-named")
def test_a_public_key_file_is_named_as_one(tmp_path: Path) -> None:
    key = PrivateKey.generate()
    save_private_key(tmp_path / "publisher.pem", key)
    public = tmp_path / "publisher.pem.pub"
    public.write_bytes(key.public_key().to_pem())
    public.chmod(0o644)
    with pytest.raises(KeyFileError) as refused:
        load_private_key(public)
    assert str(refused.value) == (
        f"{public} is a public key; signing needs the private key "
        f"(its private half is usually {tmp_path / 'publisher.pem'})"
    )
    assert "chmod" not in str(refused.value)


@pytest.mark.req("engram.core.keys.public-key-named")
def test_an_openssh_public_key_is_named_too_and_a_loose_private_key_still_gets_chmod(
    tmp_path: Path,
) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "id")],
        check=True,
        timeout=30,
    )
    with pytest.raises(KeyFileError, match="is a public key; signing needs the private key"):
        load_private_key(tmp_path / "id.pub")
    (tmp_path / "id").chmod(0o644)
    with pytest.raises(KeyFileError, match="run `chmod 600"):
        load_private_key(tmp_path / "id")
