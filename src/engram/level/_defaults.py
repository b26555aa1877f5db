"""The level verifier's defaults, in a module that imports nothing, so that the command line can
show them in ``--help`` without loading the verifier (issue 33)."""

from __future__ import annotations

from datetime import timedelta

DEFAULT_COOLDOWN = timedelta(hours=24)
"""How long a cartridge waits between two attempts at a level (the ledger enforces it)."""
DEFAULT_DRAW = 90
"""Tasks drawn from the held-out slice for one attempt."""
MIN_ENTRIES = 131_072
"""Entries of a status list at least (W3C Bitstring Status List §6.1: 16 KiB of bits)."""

__all__ = ["DEFAULT_COOLDOWN", "DEFAULT_DRAW", "MIN_ENTRIES"]
