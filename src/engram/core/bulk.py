"""Bulk work over many small records: Python's cyclic garbage collector paused while it runs.

A cartridge of 100,000 memories allocates millions of dicts, lists and tuples, none of them in
a reference cycle; each generation-0 overflow made the collector walk the young objects and
every few made it walk the whole (growing) heap: 12 % of a 100k ``cartridge export``'s CPU
(issue 33). Reference counting still frees everything as before; the collector runs again, and
finds whatever cycles there are, as soon as the block ends.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block (nested or concurrent uses are fine: the one
    that paused it resumes it)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


__all__ = ["gc_paused"]
