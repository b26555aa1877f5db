"""Reading an input file: regular files only, bounded, never blocking.

Issue 15 (hostile input): a FIFO given where a document is expected used to block a plain
``read`` forever, and a huge file was read whole before any limit applied. Every ACX JSON input
(workflow, Agent Graph, trust registry, level credential, status list, DID document) goes
through :func:`read_regular`: the file is opened non-blocking and checked with ``fstat`` on that
descriptor (the file checked is the file read), anything but a regular file is refused at once,
and at most ``limit`` + 1 bytes are ever read. It lives in core because the library reads such
files too (a status list or DID document named by path: :func:`engram.level.fetch_location`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from engram.errors import EngramError, InputError, InvalidRequest

MAX_INPUT_BYTES = 16 * 1024 * 1024
"""The default bound for a JSON input (the level and status list limits are the same 16 MiB)."""


def read_regular(
    path: Path,
    *,
    limit: int = MAX_INPUT_BYTES,
    what: str = "input",
    error: type[InputError] = InvalidRequest,
) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``, or ``error`` naming why not."""

    def refuse(reason: str) -> EngramError:
        return error(f"{what} {path}: {reason}")

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError as e:
        raise refuse("no such file") from e
    except OSError as e:
        raise refuse(f"cannot open it ({e.strerror})") from e
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO, device or socket"
            raise refuse(f"not a regular file ({kind})")
        if info.st_size > limit:
            raise refuse(f"{info.st_size} bytes; the limit is {limit}")
        chunks: list[bytes] = []
        remaining = limit + 1  # one byte more than allowed tells a file that grew while read
        while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 20))):
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as e:
        raise refuse(f"cannot read it ({e.strerror})") from e
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise refuse(f"more than {limit} bytes; the limit is {limit}")
    return data


__all__ = ["MAX_INPUT_BYTES", "read_regular"]
