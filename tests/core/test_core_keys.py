"""Ed25519 keys: wire form, key id (checked against independent computations), key files."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from engram.core.keys import PrivateKey, PublicKey, load_private_key, save_private_key
from engram.errors import InvalidRequest, KeyFileError, SignatureInvalid

# RFC 8032 §7.1 TEST 1: a published key pair, so nothing here depends on our own output.
RFC8032_SECRET = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
RFC8032_PUBLIC = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
RFC8032_SIGNATURE_OF_EMPTY = bytes.fromhex(
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
)
# RFC 8410 §4: every Ed25519 SubjectPublicKeyInfo is this 12-byte DER prefix + the raw key.
SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")


def _rfc8032_key() -> PrivateKey:
    return PrivateKey(Ed25519PrivateKey.from_private_bytes(RFC8032_SECRET))


@pytest.mark.req("engram.core.public-key-b64url")
def test_public_key_travels_as_unpadded_base64url_of_the_raw_bytes() -> None:
    public = _rfc8032_key().public_key()
    assert public.raw == RFC8032_PUBLIC
    assert public.b64url == base64.urlsafe_b64encode(RFC8032_PUBLIC).decode().rstrip("=")
    assert "=" not in public.b64url
    assert PublicKey.from_b64url(public.b64url) == public


@pytest.mark.req("engram.core.public-key-b64url")
@pytest.mark.parametrize(
    "text", ["", "AAAA", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo=", "11qY+YKx"]
)
def test_malformed_public_keys_are_refused(text: str) -> None:
    with pytest.raises(InvalidRequest):
        PublicKey.from_b64url(text)


@pytest.mark.req("engram.core.key-id-spki-sha256")
def test_key_id_is_sha256_of_the_hand_built_der_spki() -> None:
    public = _rfc8032_key().public_key()
    expected = "ed25519:" + hashlib.sha256(SPKI_PREFIX + RFC8032_PUBLIC).hexdigest()
    assert public.der == SPKI_PREFIX + RFC8032_PUBLIC
    assert public.key_id == expected


@pytest.mark.req("engram.core.key-id-spki-sha256")
@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_key_id_matches_openssl_der_output(tmp_path: Path) -> None:
    public = PrivateKey.generate().public_key()
    pem = tmp_path / "public.pem"
    pem.write_bytes(public.to_pem())
    der = subprocess.run(
        ["openssl", "pkey", "-pubin", "-in", str(pem), "-outform", "DER"],
        check=True,
        capture_output=True,
    ).stdout
    assert public.key_id == "ed25519:" + hashlib.sha256(der).hexdigest()


@pytest.mark.req("engram.core.signature-over-jcs")
def test_signatures_match_rfc8032_and_verify_with_cryptography_directly() -> None:
    key = _rfc8032_key()
    assert key.sign(b"") == RFC8032_SIGNATURE_OF_EMPTY
    Ed25519PublicKey.from_public_bytes(RFC8032_PUBLIC).verify(key.sign(b"abc"), b"abc")


@pytest.mark.req("engram.runtime.distinct-errors")
def test_verify_raises_on_a_wrong_signature_and_never_returns_a_bool() -> None:
    key = PrivateKey.generate()
    public = key.public_key()
    signature = key.sign(b"message")
    public.verify(signature, b"message")  # returns quietly
    with pytest.raises(SignatureInvalid):
        public.verify(signature, b"messagf")
    with pytest.raises(SignatureInvalid):
        PrivateKey.generate().public_key().verify(signature, b"message")
    with pytest.raises(SignatureInvalid):
        public.verify(signature[:-1], b"message")


def test_pem_round_trip_and_repr_hides_the_secret() -> None:
    key = PrivateKey.generate()
    again = PrivateKey.from_pem(key.to_pem())
    assert again.public_key() == key.public_key()
    assert repr(key) == f"PrivateKey({key.public_key().key_id})"
    assert b"PRIVATE" not in repr(key).encode()
    assert PublicKey.from_pem(key.public_key().to_pem()) == key.public_key()


@pytest.mark.req("engram.core.key-file-mode-0600")
def test_saved_key_file_has_mode_0600_whatever_the_umask(tmp_path: Path) -> None:
    key = PrivateKey.generate()
    path = tmp_path / "keys" / "signing.pem"
    previous = os.umask(0o000)
    try:
        save_private_key(path, key)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0
    assert load_private_key(path).public_key() == key.public_key()
    assert [p.name for p in path.parent.iterdir()] == ["signing.pem"]  # no temporary left


@pytest.mark.req("engram.core.key-file-mode-0600")
def test_saving_refuses_to_overwrite_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "signing.pem"
    first, second = PrivateKey.generate(), PrivateKey.generate()
    save_private_key(path, first)
    with pytest.raises(KeyFileError, match="already exists"):
        save_private_key(path, second)
    assert load_private_key(path).public_key() == first.public_key()
    save_private_key(path, second, overwrite=True)
    assert load_private_key(path).public_key() == second.public_key()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.req("engram.core.key-file-unsafe-refused")
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660, 0o601])
def test_loading_a_key_others_can_access_is_refused_with_the_fix(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "signing.pem"
    save_private_key(path, PrivateKey.generate())
    path.chmod(mode)
    with pytest.raises(KeyFileError) as caught:
        load_private_key(path)
    assert str(path) in caught.value.message
    assert f"chmod 600 {path}" in caught.value.message
    assert f"{mode:04o}" in caught.value.message


@pytest.mark.req("engram.core.key-file-unsafe-refused")
@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n",
        b"-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
        b"\x00\x01binary",
    ],
)
def test_a_corrupt_key_file_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "signing.pem"
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(KeyFileError, match=str(path)):
        load_private_key(path)


@pytest.mark.req("engram.core.key-file-unsafe-refused")
def test_a_missing_or_truncated_key_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="no private key file"):
        load_private_key(tmp_path / "absent.pem")
    path = tmp_path / "signing.pem"
    save_private_key(path, PrivateKey.generate())
    path.write_bytes(path.read_bytes()[:60])
    with pytest.raises(KeyFileError):
        load_private_key(path)


def test_keys_of_other_algorithms_and_encrypted_keys_are_refused(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec

    other = ec.generate_private_key(ec.SECP256R1())
    pem = other.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with pytest.raises(KeyFileError, match="not an Ed25519"):
        PrivateKey.from_pem(pem)
    encrypted = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    with pytest.raises(KeyFileError, match="encrypted"):
        PrivateKey.from_pem(encrypted)


@pytest.mark.req("engram.core.key-file-openssh")
@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")
def test_an_ssh_keygen_ed25519_key_loads_and_its_public_half_matches(tmp_path: Path) -> None:
    path = tmp_path / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", str(path)],
        check=True,
        capture_output=True,
    )
    key = load_private_key(path)
    # The .pub line is "ssh-ed25519 <base64 of string 'ssh-ed25519' + string raw32> test".
    blob = base64.b64decode((tmp_path / "id_ed25519.pub").read_text().split()[1])
    assert blob[-32:] == key.public_key().raw
    key.public_key().verify(key.sign(b"hello"), b"hello")


@pytest.mark.req("engram.core.key-file-openssh")
@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")
def test_an_openssh_key_readable_by_others_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        capture_output=True,
    )
    path.chmod(0o644)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_private_key(path)
