"""Shared helpers for the cartridge tests: the reference vectors and a signed cartridge we build."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from engram.cartridge import ExportOptions, package_contents, write
from engram.core.keys import PrivateKey, save_private_key

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
REFERENCE = (
    VECTORS / "acx-reference/registry/cartridges/io.github.ridgeworks/ada-ridge/1.0.0/cartridge.acx"
)
REFERENCE_INDEX = VECTORS / "acx-reference/registry/index.json"
REFERENCE_HASH = "sha256:318b930a1942eb9d3e8088906c6b32f91def9e156d4cbb3a178e676d4e28aaca"
REFERENCE_KEY_PEM = (
    "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGxi9GUYS56oHDSvNQC9P30FxbNsjJ5sw7zK0nN2Z5Ug=\n"
    "-----END PUBLIC KEY-----\n"
)
SAMPLE_PACKAGE = VECTORS / "acx-reference/examples/sample-agent-package"
SCHEMAS = VECTORS / "acx-spec/schemas"
NOW = datetime(2026, 7, 20, tzinfo=UTC)


def copy_reference(tmp: Path) -> Path:
    target = tmp / "ref.acx"
    shutil.copyfile(REFERENCE, target)
    return target


def key_file(tmp: Path, name: str = "publisher.pem") -> tuple[Path, PrivateKey]:
    key = PrivateKey.generate()
    path = tmp / name
    save_private_key(path, key)
    return path, key


def build_sample(
    tmp: Path,
    *,
    key: PrivateKey | None = None,
    package: Path = SAMPLE_PACKAGE,
    publisher: str = "io.github.acme",
    name: str = "sample.acx",
) -> Path:
    contents, _ = package_contents(package, ExportOptions(publisher, NOW))
    out = tmp / name
    write(out, contents, key=key or PrivateKey.generate(), signed_at=NOW)
    return out
