"""What a cartridge's ``attestations`` table lists (SPEC §3.2, §10): the rows ``engram cartridge
inspect`` shows and the count of level credentials ``spec`` checks the package spec against.

The queries live here, beside :class:`Cartridge`, so no caller runs SQL against a cartridge of
its own (``NOT INDEXED``: a hostile file's indexes are never trusted, as in every other read).
"""

from __future__ import annotations

from dataclasses import dataclass

from engram.cartridge._container import Cartridge
from engram.core.canonical import JsonObject

LEVEL_ATTESTATION_TYPE = "vc-2.0"
"""The ``attestations.type`` of a level credential (a W3C VC 2.0; SPEC §10)."""


@dataclass(frozen=True)
class AttestationRow:
    att_id: str
    type: str
    media_type: str

    def to_wire(self) -> JsonObject:
        return {"id": self.att_id, "type": self.type, "mediaType": self.media_type}


def list_attestations(cartridge: Cartridge) -> list[AttestationRow]:
    """Every attestation's id, type and media type, in table order."""
    rows = cartridge.query("SELECT att_id, type, media_type FROM attestations NOT INDEXED")
    return [AttestationRow(str(a), str(t), str(m)) for a, t, m in rows]


def level_count(cartridge: Cartridge) -> int:
    """How many level credentials the cartridge carries."""
    rows = cartridge.query(
        "SELECT count(*) FROM attestations NOT INDEXED WHERE type = ?", (LEVEL_ATTESTATION_TYPE,)
    )
    return int(str(rows[0][0]))


__all__ = ["LEVEL_ATTESTATION_TYPE", "AttestationRow", "level_count", "list_attestations"]
