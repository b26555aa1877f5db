"""``require_verified``: a level credential is used (attached to a cartridge in a registry) only
when it verifies and is not revoked (docs/spec/acx-levels.md §4 "Using a credential").

:func:`verify_level` reports; this turns the report into a yes or a one-line refusal naming
what failed, or what could not be concluded (an issuer key nobody gave, a status list that
could not be read): a credential that cannot be checked is not vouched for.
"""

from __future__ import annotations

from datetime import datetime

from engram.level._errors import LevelUnverified
from engram.level._proof import KeyResolver
from engram.level._status import Fetch
from engram.level._verify import LevelReport, verify_level

SHOWN = 3


def require_verified(
    data: bytes,
    *,
    rom_digest: str,
    resolve: KeyResolver,
    now: datetime,
    status_fetch: Fetch | None,
) -> LevelReport:
    """The report of a credential that verifies, bound to ``rom_digest`` and not revoked;
    :class:`LevelUnverified` otherwise."""
    report = verify_level(
        data, resolve=resolve, now=now, rom_digest=rom_digest, status_fetch=status_fetch
    )
    if report.revoked:
        raise LevelUnverified("the level credential is revoked (its status bit is set)")
    if report.verified:
        return report
    failed = report.failures()
    if not failed:  # nothing failed, but the proof or the status did not conclude
        failed = [f for f in report.findings if f.check in ("proof", "status") and f.ok is None]
    shown = "; ".join(f"{f.check}: {f.message}" for f in failed[:SHOWN])
    more = f" (+{len(failed) - SHOWN} more)" if len(failed) > SHOWN else ""
    raise LevelUnverified(f"the level credential does not verify: {shown}{more}")


__all__ = ["require_verified"]
