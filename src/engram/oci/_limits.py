"""The layer bounds of a pull, in a module that imports nothing, so that ``engram cartridge
pull --help`` shows the default without loading the OCI client (issue 33)."""

from __future__ import annotations

DEFAULT_MAX_LAYER = 1 << 30
"""Bytes of a cartridge layer a pull downloads at most, unless ``--max-bytes`` says otherwise."""
MAX_REFERRER_LAYER = 16 << 20
"""Bytes of one referrer's layer (a DSSE envelope, a level credential) read at most."""

__all__ = ["DEFAULT_MAX_LAYER", "MAX_REFERRER_LAYER"]
