"""A memory erased here stays erased when the cartridge that brought it is imported again."""

from __future__ import annotations

from pathlib import Path

import pytest
from cartridge_kit import RECORDS, Seat, build, write_package

from engram.cli.internals import seat_engine
from engram.core.keys import PrivateKey
from engram.memory import get_memory, history
from engram.transfer import erase_memories, import_cartridge
from engram.trust import TrustState


@pytest.mark.req("engram.memory.erase.import")
def test_a_cartridge_import_reports_an_erased_memory_and_does_not_bring_it_back(
    tmp_path: Path,
) -> None:
    path = build(
        tmp_path / "c.acx",
        key=PrivateKey.generate(),
        package=write_package(tmp_path / "p", records=RECORDS),
    )
    seat = Seat(tmp_path / "seat")
    accept = {TrustState.PORTABLE, TrustState.LEGACY}
    with seat_engine(seat.ote, seat.url) as engine:
        first = import_cartridge(engine, path, accept=accept)
        doomed, *kept = (m["id"] for m in seat.memories("seat:engram-implementer"))
        erase_memories(engine, [doomed], actor="cli:test")

        again = import_cartridge(engine, path, accept=accept)

        assert kept  # the cartridge brought more than the one erased
        assert (first.imported, first.erased) == (len(kept) + 1, 0)
        assert (again.imported, again.already_known, again.erased) == (0, len(kept), 1)
        assert again.to_wire()["erasedHere"] == 1
        assert get_memory(engine, doomed) is None
        assert all(get_memory(engine, k) is not None for k in kept)
        assert history(engine, doomed).state == "erased"
    assert [m["id"] for m in seat.memories("seat:engram-implementer")] == kept
