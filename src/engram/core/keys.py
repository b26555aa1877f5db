"""Ed25519 keys: generate, serialise, load and save, and the content-addressed key id.

Spec: issue 2 item 3 and docs/spec/keys-and-signatures.md §"Keys":

- public keys travel as base64url without padding of the raw 32 bytes (RFC 8032 §5.1.5);
- the key id is ``ed25519:`` + hex SHA-256 of the DER SubjectPublicKeyInfo (RFC 8410 §4), the
  form the ACX cartridge spec names for DSSE ``keyid``;
- private key files are written atomically with mode 0600, and a key file that group or others
  may read is refused, as OpenSSH refuses one.

The two file functions are the only I/O in ``engram.core``; everything else here is bytes in,
bytes out. Private key material never appears in ``repr`` or in error messages.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
from pathlib import Path

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from engram.core.encoding import b64url_decode, b64url_encode
from engram.errors import InvalidRequest, KeyFileError, SignatureInvalid

KEY_ID_PREFIX = "ed25519:"
"""Every engram key id starts with this algorithm tag."""

RAW_PUBLIC_KEY_BYTES = 32
SIGNATURE_BYTES = 64

_OPENSSH_HEADER = b"-----BEGIN OPENSSH PRIVATE KEY-----"


class PublicKey:
    """An Ed25519 public key. Equal keys compare and hash equal (by their raw bytes)."""

    __slots__ = ("_key", "_raw")

    def __init__(self, key: Ed25519PublicKey) -> None:
        self._key = key
        self._raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    @classmethod
    def from_raw(cls, raw: bytes) -> PublicKey:
        """The key from its raw 32 bytes; anything else is :class:`InvalidRequest`."""
        if not isinstance(raw, bytes | bytearray) or len(raw) != RAW_PUBLIC_KEY_BYTES:
            raise InvalidRequest("an Ed25519 public key is exactly 32 raw bytes")
        try:
            return cls(Ed25519PublicKey.from_public_bytes(bytes(raw)))
        except ValueError as e:  # pragma: no cover - OpenSSL takes any 32 bytes today
            raise InvalidRequest("not an Ed25519 public key") from e

    @classmethod
    def from_b64url(cls, text: str) -> PublicKey:
        """The key from unpadded base64url of its raw bytes (the wire form)."""
        if not isinstance(text, str):
            raise InvalidRequest("a public key is a base64url string")
        return cls.from_raw(b64url_decode(text))

    @classmethod
    def from_pem(cls, pem: bytes) -> PublicKey:
        """The key from a PEM SubjectPublicKeyInfo (``-----BEGIN PUBLIC KEY-----``)."""
        try:
            key = serialization.load_pem_public_key(pem)
        except (ValueError, UnsupportedAlgorithm) as e:
            raise InvalidRequest("not a PEM public key") from e
        if not isinstance(key, Ed25519PublicKey):
            raise InvalidRequest("not an Ed25519 public key")
        return cls(key)

    @property
    def raw(self) -> bytes:
        """The raw 32 bytes (RFC 8032)."""
        return self._raw

    @property
    def b64url(self) -> str:
        """Unpadded base64url of :attr:`raw`: how a public key appears on the wire."""
        return b64url_encode(self._raw)

    @property
    def der(self) -> bytes:
        """The DER SubjectPublicKeyInfo (RFC 8410): what the key id hashes."""
        return self._key.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    @property
    def key_id(self) -> str:
        """``ed25519:`` + hex SHA-256 of :attr:`der`."""
        return KEY_ID_PREFIX + hashlib.sha256(self.der).hexdigest()

    def to_pem(self) -> bytes:
        """PEM SubjectPublicKeyInfo, for tools such as ``openssl pkeyutl``."""
        return self._key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def verify(self, signature: bytes, data: bytes) -> None:
        """Return if ``signature`` is this key's Ed25519 signature of ``data``; else raise.

        Raises :class:`~engram.errors.SignatureInvalid`; it never returns a bool, so a caller
        cannot forget to look at the answer.
        """
        if not isinstance(signature, bytes | bytearray) or len(signature) != SIGNATURE_BYTES:
            raise SignatureInvalid("an Ed25519 signature is exactly 64 bytes")
        try:
            self._key.verify(bytes(signature), data)
        except InvalidSignature as e:
            raise SignatureInvalid(f"signature does not verify under {self.key_id}") from e

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PublicKey) and secrets.compare_digest(self._raw, other._raw)

    def __hash__(self) -> int:
        return hash(self._raw)

    def __repr__(self) -> str:
        return f"PublicKey({self.key_id})"


class PrivateKey:
    """An Ed25519 private key. Its ``repr`` names only the public key id."""

    __slots__ = ("_key",)

    def __init__(self, key: Ed25519PrivateKey) -> None:
        self._key = key

    @classmethod
    def generate(cls) -> PrivateKey:
        """A fresh key from the operating system's CSPRNG."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_pem(cls, pem: bytes) -> PrivateKey:
        """Load an unencrypted PKCS#8 PEM or an OpenSSH (``ssh-keygen -t ed25519``) private key.

        Anything else (another algorithm, an encrypted key, damaged bytes) is
        :class:`~engram.errors.KeyFileError`.
        """
        if not isinstance(pem, bytes | bytearray):
            raise KeyFileError("a private key is PEM bytes")
        data = bytes(pem)
        key: object
        try:
            if data.lstrip().startswith(_OPENSSH_HEADER):
                key = serialization.load_ssh_private_key(data, password=None)
            else:
                key = serialization.load_pem_private_key(data, password=None)
        except TypeError as e:
            # cryptography raises TypeError when a password is needed and none was given.
            raise KeyFileError("encrypted private keys are not supported") from e
        except (ValueError, UnsupportedAlgorithm) as e:
            raise KeyFileError("not a readable PEM or OpenSSH private key") from e
        if not isinstance(key, Ed25519PrivateKey):
            raise KeyFileError(f"not an Ed25519 private key ({type(key).__name__})")
        return cls(key)

    def to_pem(self) -> bytes:
        """Unencrypted PKCS#8 PEM. Callers keep it out of logs, exports and cartridges."""
        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def public_key(self) -> PublicKey:
        return PublicKey(self._key.public_key())

    def sign(self, data: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``data`` (deterministic, RFC 8032)."""
        return self._key.sign(data)

    def __repr__(self) -> str:
        return f"PrivateKey({self.public_key().key_id})"


def save_private_key(
    path: str | os.PathLike[str], key: PrivateKey, *, overwrite: bool = False
) -> None:
    """Write ``key`` as PKCS#8 PEM to ``path`` with mode 0600, atomically.

    The bytes go to a temporary file in the same directory, created with ``O_EXCL`` and mode
    0600 so the secret is never readable by others, not even for an instant; it is then linked
    into place (refusing an existing file unless ``overwrite``) or renamed over it. A crash
    leaves either the old file or the new one, never half a key. A missing parent directory is
    created with mode 0700.
    """
    target = Path(path)
    if not overwrite and target.exists():
        raise KeyFileError(f"{target} already exists; refusing to overwrite a private key")
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as e:
        raise KeyFileError(f"cannot create the directory for {target}: {e.strerror}") from e
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        raise KeyFileError(f"cannot write {target}: {e.strerror}") from e
    try:
        try:
            # The umask can only remove bits; fchmod pins exactly 0600 whatever it is.
            os.fchmod(fd, 0o600)
            os.write(fd, key.to_pem())
            os.fsync(fd)
        finally:
            os.close(fd)
        if overwrite:
            temporary.replace(target)
        else:
            # link() fails if the name appeared since the check above: no silent overwrite.
            os.link(temporary, target)
    except FileExistsError as e:
        raise KeyFileError(f"{target} already exists; refusing to overwrite a private key") from e
    except OSError as e:
        raise KeyFileError(f"cannot write {target}: {e.strerror}") from e
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
    _fsync_directory(target.parent)


# How a public key file starts (PEM SubjectPublicKeyInfo, OpenSSH, RFC 4716): what
# load_private_key names as a public key instead of judging its mode.
MAX_KEY_FILE_BYTES = 1 << 20
PUBLIC_KEY_HEADS = (b"-----BEGIN PUBLIC KEY-----", b"ssh-ed25519 ", b"---- BEGIN SSH2 PUBLIC KEY")


def load_private_key(path: str | os.PathLike[str]) -> PrivateKey:
    """Read a private key file (PKCS#8 PEM or OpenSSH ed25519), refusing unsafe permissions.

    A file that group or others can access in any way is refused with
    :class:`~engram.errors.KeyFileError`, naming the path and the ``chmod 600`` fix: such a key
    may already have been copied, and signing with it would quietly lend it our name. A public
    key given where the private one belongs (``publisher.pem.pub``, usually mode 0644) is named
    as such first: ``chmod 600`` would not make it sign.
    """
    target = Path(path)
    try:
        fd = os.open(target, os.O_RDONLY)
    except FileNotFoundError as e:
        raise KeyFileError(f"no private key file at {target}") from e
    except OSError as e:
        raise KeyFileError(f"cannot read {target}: {e.strerror}") from e
    try:
        # fstat on the opened descriptor: the file we check is the file we read.
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeyFileError(f"{target} is not a regular file")
        chunks: list[bytes] = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
            if len(chunks) * 65536 > MAX_KEY_FILE_BYTES:
                raise KeyFileError(f"{target} is too large to be a key file")
        if b"".join(chunks).lstrip().startswith(PUBLIC_KEY_HEADS):
            private = f" (its private half is usually {target.with_suffix('')})"
            raise KeyFileError(
                f"{target} is a public key; signing needs the private key"
                + (private if target.suffix == ".pub" else "")
            )
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            raise KeyFileError(
                f"{target} is accessible by group or others (mode {mode:04o}); "
                f"a private key must be private: run `chmod 600 {target}`"
            )
    finally:
        os.close(fd)
    try:
        return PrivateKey.from_pem(b"".join(chunks))
    except KeyFileError as e:
        raise KeyFileError(f"{target}: {e.message}") from e


def _fsync_directory(directory: Path) -> None:
    # Make the rename durable; some filesystems refuse to open a directory, which is harmless.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platform dependent
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - platform dependent
        pass
    finally:
        os.close(fd)


__all__ = [
    "KEY_ID_PREFIX",
    "RAW_PUBLIC_KEY_BYTES",
    "SIGNATURE_BYTES",
    "PrivateKey",
    "PublicKey",
    "load_private_key",
    "save_private_key",
]
