"""Helpers for the memory tests: manifests with extras, real ssh-keygen keys and signatures."""

from __future__ import annotations

import subprocess
from pathlib import Path

from engram.memory import default_manifest_text

SEAT = "seat:engram-implementer"


def manifest_text(extra: str = "", *, budget: int = 2000) -> str:
    text = default_manifest_text().replace(
        "keyspace_budget_tokens = 2000", f"keyspace_budget_tokens = {budget}"
    )
    return hash_only(text) + extra


def hash_only(manifest: str) -> str:
    """A generated manifest pinned to the model-free local-hash-128 seat: new seats get the
    bundled MiniLM model, and tests that are not about it need not pay its cost."""
    return manifest.replace(
        'embedding_provider = "minilm-l6-v2"', 'embedding_provider = "local-hash-128"'
    )


def ssh_keygen_key(directory: Path, name: str) -> tuple[Path, str]:
    """A fresh Ed25519 key made by the real ssh-keygen: (private key path, public key line)."""
    key = directory / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)],
        check=True,
        capture_output=True,
    )
    return key, (directory / f"{name}.pub").read_text().strip()


def ssh_sign(key: Path, message: bytes, namespace: str, workdir: Path) -> str:
    """``ssh-keygen -Y sign -n NAMESPACE -f KEY`` over ``message``: the armored signature."""
    data = workdir / "message.bin"
    data.write_bytes(message)
    sig = workdir / "message.bin.sig"
    sig.unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-n", namespace, "-f", str(key), str(data)],
        check=True,
        capture_output=True,
    )
    return sig.read_text()


ANCHOR = '\n[attestation]\nallowed_signers = "attestors"\nreverify_fraction = 0.2\n'
