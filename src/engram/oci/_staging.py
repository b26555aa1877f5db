"""Staging folders for cartridge bytes on their way through a registry (docs/spec/limits.md §1).

Pull streams a layer into one before verifying it; push verifies and uploads a private copy
from one. Each is removed on every exit path, and one left by a killed run is removed by the
next run.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from engram.errors import InvalidRequest

STAGING_PREFIX = "engram-oci-"


@contextlib.contextmanager
def staging() -> Iterator[Path]:
    """A private folder for bytes on their way in or out, removed on every exit path.

    Its name carries this process's id, so a folder left by a killed run (``SIGKILL`` runs no
    ``finally``) is recognised and removed by the next run, which first sweeps the folders of
    processes that no longer exist."""
    sweep_stale_staging()
    folder = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sweep_stale_staging(root: Path | None = None) -> list[Path]:
    """Remove this user's staging folders whose process has ended; return what was removed."""
    removed = []
    for entry in Path(root or tempfile.gettempdir()).glob(f"{STAGING_PREFIX}*-*"):
        pid = entry.name[len(STAGING_PREFIX) :].split("-", 1)[0]
        try:
            if not pid.isdigit() or entry.is_symlink() or not entry.is_dir():
                continue
            if entry.stat().st_uid != os.getuid() or _alive(int(pid)):
                continue
        except OSError:
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive, and not ours to judge
    return True


def file_digest(path: Path) -> str:
    hasher = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            hasher.update(block)
    return "sha256:" + hasher.hexdigest()


def install(staged: Path, target: Path, *, force: bool) -> None:
    """Copy a verified staged file to ``target`` atomically (a temporary file beside it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise InvalidRequest(f"{target} exists and is not a regular file")
    if target.exists() and not force and file_digest(target) != file_digest(staged):
        raise InvalidRequest(f"{target} exists with other bytes (--force replaces it)")
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    temp = Path(temp_name)
    try:
        shutil.copyfile(staged, temp)
        temp.chmod(0o644)
        temp.replace(target)
    finally:
        temp.unlink(missing_ok=True)


__all__ = ["STAGING_PREFIX", "file_digest", "install", "staging", "sweep_stale_staging"]
