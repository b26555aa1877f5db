"""Shared set-up for the OCI tests: a real registry (Debian's docker-registry, CNCF distribution
2.8) on a loopback port, cartridges to push, and a level credential bound to one.

Without ``docker-registry`` (or ``skopeo`` for the tests that use it) a test is skipped naming
the Debian package; with ``CI=true`` it fails instead, because CI must run it (``.ci/run``
installs both).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from engram.cartridge import ExportOptions, package_contents, write
from engram.core.canonical import canonicalize
from engram.core.keys import PrivateKey
from engram.level import (
    Ledger,
    LevelReport,
    ReferenceSolver,
    Verifier,
    demo_benchmark,
    prove_level,
    require_verified,
    set_entry,
    static_resolver,
    status_list_credential,
)
from engram.level.internals import add_proof

HERE = Path(__file__).resolve().parent
VECTORS = HERE.parent / "vectors"
SAMPLE_PACKAGE = VECTORS / "acx-reference/examples/sample-agent-package"
REFERENCE_CARTRIDGE = (
    VECTORS / "acx-reference/registry/cartridges/io.github.ridgeworks/ada-ridge/1.0.0/cartridge.acx"
)
NOW = datetime(2026, 7, 20, tzinfo=UTC)


def needs(command: str, package: str) -> str:
    path = shutil.which(command)
    if path is None:
        reason = f"{command} is not installed (Debian: apt-get install {package})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason} (CI=true: the OCI tests must run in CI)", pytrace=False)
        pytest.skip(reason)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class RunningRegistry:
    host: str
    storage: Path
    auth: tuple[str, str] | None = None

    def url(self, path: str) -> str:
        return f"http://{self.host}{path}"

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        auth = httpx.BasicAuth(*self.auth) if self.auth else None
        return httpx.get(self.url(path), auth=auth, timeout=30, **kwargs)


@contextmanager
def docker_registry(
    folder: Path, *, htpasswd: tuple[str, str] | None = None
) -> Iterator[RunningRegistry]:
    """``docker-registry serve`` with filesystem storage in ``folder``, on a free loopback port."""
    binary = needs("docker-registry", "docker-registry")
    storage = folder / "storage"
    storage.mkdir(parents=True)
    port = free_port()
    lines = [
        "version: 0.1",
        "log:",
        "  level: error",
        "storage:",
        "  filesystem:",
        f"    rootdirectory: {storage}",
        "  delete:",
        "    enabled: true",
        "http:",
        f"  addr: 127.0.0.1:{port}",
    ]
    if htpasswd is not None:
        import bcrypt

        user, password = htpasswd
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
        (folder / "htpasswd").write_text(f"{user}:{hashed}\n")
        lines += [
            "auth:",
            "  htpasswd:",
            "    realm: engram-test",
            f"    path: {folder / 'htpasswd'}",
        ]
    config = folder / "config.yml"
    config.write_text("\n".join(lines) + "\n")
    log = (folder / "registry.log").open("wb")
    process = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=log)
    running = RunningRegistry(f"127.0.0.1:{port}", storage, htpasswd)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(running.url("/v2/"), timeout=2).status_code in (200, 401):
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"docker-registry did not start: {(folder / 'registry.log').read_text()}"
                )
            time.sleep(0.05)
        yield running
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def build_cartridge(
    folder: Path,
    *,
    name: str = "agent.acx",
    key: PrivateKey | None = None,
    publisher: str = "io.github.acme",
    padding: int = 0,
) -> Path:
    """A signed cartridge from the reference's sample package, with ``padding`` random ROM bytes."""
    contents, _ = package_contents(SAMPLE_PACKAGE, ExportOptions(publisher, NOW))
    if padding:
        skill = next(k for k in contents.files if k.startswith("rom/skills/")).split("/")[2]
        contents.files[f"rom/skills/{skill}/assets/weights.bin"] = (os.urandom(padding), 0o644, 0)
    out = folder / name
    write(out, contents, key=key or PrivateKey.generate(), signed_at=NOW)
    return out


# The one verifier of the OCI tests' level credentials, and its status list.
VERIFIER = Verifier("did:web:verifier.example.org", PrivateKey.generate(), "Example verifier")
STATUS_URL = "https://verifier.example.org/status/1"


def status_list(revoked: bytes | None = None) -> bytes:
    """The verifier's signed status list; with ``revoked`` (a credential) its bit set."""
    created = "2026-07-01T00:00:00Z"
    document = add_proof(
        status_list_credential(list_id=STATUS_URL, issuer=VERIFIER.did, valid_from=created),
        VERIFIER.key,
        verification_method=VERIFIER.verification_method,
        created=created,
    )
    if revoked is not None:
        entry = json.loads(revoked)["credentialStatus"]
        document = set_entry(
            document,
            int(entry["statusListIndex"]),
            VERIFIER.key,
            verification_method=VERIFIER.verification_method,
            created=created,
        )
    return canonicalize(document)


def level_check(status: bytes | None = None) -> Callable[[bytes, str], LevelReport]:
    """What attach-level asks: the credential verifies by the verifier's key, not revoked."""
    resolve = static_resolver({VERIFIER.verification_method: VERIFIER.key.public_key()})
    served = status if status is not None else status_list()

    def check(data: bytes, rom_digest: str) -> LevelReport:
        return require_verified(
            data, rom_digest=rom_digest, resolve=resolve, now=NOW, status_fetch=lambda _: served
        )

    return check


def level_credential(folder: Path, rom_digest: str, publisher: str = "io.github.acme") -> bytes:
    """A real level credential (engram.level, the reference solver) bound to ``rom_digest``."""
    verifier = VERIFIER
    issuance = prove_level(
        rom_digest=rom_digest,
        publisher_id=publisher,
        subject_id=f"urn:acx:cartridge:{publisher}/agent@00000000-0000-4000-8000-000000000001",
        publisher_keyids=[],
        benchmark=demo_benchmark(),
        solver=ReferenceSolver(33),
        verifier=verifier,
        ledger=Ledger(folder / f"ledger-{rom_digest[7:15]}.sqlite"),
        now=NOW,
        status_list_url=STATUS_URL,
    )
    assert issuance.credential is not None
    return canonicalize(issuance.credential)
