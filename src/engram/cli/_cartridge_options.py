"""What the ``engram cartridge`` commands share (a shared CLI helper, no command of its own):
the file and trust-state option types, ``--local-key``, the accepted trust states, this host's
key ids and the verified ROM of a cartridge that must not be tampered with.

The library (``engram.cartridge``, ``engram.trust``, cryptography) loads when a command runs, not
when its help is printed (issue 33: every ``COMMAND --help`` within 3x ``python -c pass``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._common import EXISTING_FILE

if TYPE_CHECKING:
    from engram.cartridge import Rom
    from engram.trust import TrustState

TRUST_STATES = ("legacy", "portable", "trusted", "local")
"""The §4.5 states a user may accept (``tampered`` never is); ``engram.trust.TrustState``'s
values, checked against it by tests/cli/test_cli_layout.py."""
ACCEPT_CHOICE = click.Choice(TRUST_STATES)

local_key_option = click.option(
    "--local-key",
    "local_keys",
    multiple=True,
    type=EXISTING_FILE,
    help="This host's own signing key.",
)


def now() -> datetime:
    return datetime.now(UTC)


def local_keyids(paths: Iterable[Path]) -> frozenset[str]:
    """The key ids of this host's own signing keys (``--local-key``)."""
    from engram.core.keys import load_private_key

    return frozenset(load_private_key(p).public_key().key_id for p in paths)


def accepted(values: tuple[str, ...]) -> frozenset[TrustState]:
    """The ``--accept`` states, else the library's default (trusted, local)."""
    from engram.cartridge import DEFAULT_ACCEPT
    from engram.trust import TrustState

    return frozenset(TrustState(a) for a in values) or DEFAULT_ACCEPT


_WAY_OUT = {
    "portable": "name its key in a trust registry (--trust-registry FILE), pass --local-key FILE "
    "if it is your own, or --accept portable",
    "legacy": "--accept legacy, if you trust where the file came from",
}
"""What accepts a refused (never a tampered) cartridge, by the state it was judged in."""


@contextmanager
def way_out_of_refusal() -> Iterator[None]:
    """A cartridge refused for its trust state says which option would accept it."""
    from engram.cartridge import UntrustedCartridge

    try:
        yield
    except UntrustedCartridge as e:
        way = _WAY_OUT.get(e.counts_as or "")
        if way is None:
            raise
        raise UntrustedCartridge(f"{e.message}; to import it: {way}", counts_as=e.counts_as) from e


def intact_rom(file: Path) -> Rom:
    """The verified ROM of ``file``; a tampered cartridge is refused before anyone acts on it."""
    from engram.cartridge import Cartridge, require_state, verify_rom
    from engram.trust import TrustState

    with Cartridge.open(file) as cartridge:
        report, rom = verify_rom(cartridge)
    require_state(report, frozenset(TrustState) - {TrustState.TAMPERED})
    return rom


def salt(path: Path | None) -> bytes | None:
    # §7.2 makes the salt raw key bytes: a trailing 0x0a is one of them, never stripped.
    return None if path is None else path.read_bytes()


__all__ = [
    "ACCEPT_CHOICE",
    "TRUST_STATES",
    "accepted",
    "intact_rom",
    "local_key_option",
    "local_keyids",
    "now",
    "salt",
    "way_out_of_refusal",
]
