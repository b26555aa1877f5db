"""Activating a cartridge in a host: verify, negotiate, and only then touch SAVE.

Spec: acx-cartridge-conformance §12 item 11 (§8.5 "refuse activation (without mutating SAVE)
... when unmet"); docs/spec/acx.md §8.2. The reference implementation leaves this handshake to
the host; engram implements it. :func:`activate` opens the file read-only, verifies it, refuses
a trust state the caller does not accept, negotiates the signed harness requirements against the
host's capabilities, and writes ``save/activation.json`` only when every step agreed - a refused
activation leaves every byte of the file as it was.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass

from engram.cartridge._build import write_save
from engram.cartridge._container import Cartridge
from engram.cartridge._errors import UntrustedCartridge
from engram.cartridge._harness import Agreement, HostCapabilities, negotiate
from engram.cartridge._trust import TrustRegistry, TrustState
from engram.cartridge._verify import TrustReport, verify_rom
from engram.core.canonical import canonicalize
from engram.core.clock import Clock, format_instant

ACTIVATION_FILE = "save/activation.json"
DEFAULT_ACCEPT = frozenset({TrustState.TRUSTED, TrustState.LOCAL})


@dataclass(frozen=True)
class Activation:
    report: TrustReport
    agreement: Agreement
    instance_id: str


def require_state(report: TrustReport, accept: Collection[TrustState]) -> None:
    """Refuse a report whose state is not accepted (``tampered`` is never acceptable)."""
    if report.state is TrustState.TAMPERED or report.state not in accept:
        raise UntrustedCartridge(
            f"cartridge is {report.state.value} ({report.reason}); accepted: "
            + ", ".join(sorted(s.value for s in accept if s is not TrustState.TAMPERED))
        )


def activate(
    path: str | os.PathLike[str],
    host: HostCapabilities,
    *,
    instance_id: str,
    clock: Clock,
    registry: TrustRegistry | None = None,
    own_keyids: frozenset[str] = frozenset(),
    accept: Collection[TrustState] = DEFAULT_ACCEPT,
) -> Activation:
    """Run the §8.5 handshake; record the activation in SAVE only if it succeeds."""
    with Cartridge.open(path) as cartridge:
        report, rom = verify_rom(cartridge, registry=registry, own_keyids=own_keyids)
    require_state(report, accept)
    requirements = rom.harness
    agreement = negotiate(requirements, host)
    now = clock.now()
    record = {
        "instanceId": instance_id,
        "activatedAt": format_instant(now),
        "manifestHash": "sha256:" + report.manifest_hash,
        "trust": report.state.value,
        "roles": list(agreement.roles),
        "scopes": list(agreement.scopes),
        "mcpProtocolRevision": agreement.protocol_revision,
    }
    write_save(path, {ACTIVATION_FILE: canonicalize(record) + b"\n"}, mtime=int(now.timestamp()))
    return Activation(report=report, agreement=agreement, instance_id=instance_id)


__all__ = ["ACTIVATION_FILE", "DEFAULT_ACCEPT", "Activation", "activate", "require_state"]
