"""Staging folders for cartridge bytes on their way through a registry (docs/spec/limits.md §1).

Pull streams a layer into one before verifying it; push verifies and uploads a private copy
from one. Each is removed on every exit path, and one left by a killed run is removed by the
next run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

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


__all__ = ["STAGING_PREFIX", "staging", "sweep_stale_staging"]
