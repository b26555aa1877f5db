"""The seat resolution order of ``engram mcp`` (docs/spec/mcp.md "Seat"), as a pure function."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_kit import write_seat

from engram.errors import ManifestError
from engram.mcp import SeatSource, locate_seat


@pytest.mark.req("engram.mcp.seat")
def test_the_option_wins_over_the_environment_and_the_repository(tmp_path: Path) -> None:
    found = write_seat(tmp_path)
    chosen = tmp_path / "chosen.toml"

    seat = locate_seat(Path("chosen.toml"), {"ENGRAM_OTE": "/other.toml"}, tmp_path)

    assert seat == SeatSource("--ote", chosen)
    assert found.is_file()


@pytest.mark.req("engram.mcp.seat")
def test_the_environment_wins_over_the_repository(tmp_path: Path) -> None:
    write_seat(tmp_path)

    seat = locate_seat(None, {"ENGRAM_OTE": "seat.toml"}, tmp_path)

    assert seat == SeatSource("ENGRAM_OTE", tmp_path / "seat.toml")


@pytest.mark.req("engram.mcp.seat")
def test_the_nearest_manifest_upwards_is_found(tmp_path: Path) -> None:
    manifest = write_seat(tmp_path)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)

    assert locate_seat(None, {}, deep) == SeatSource(".engram/ote.toml", manifest)


@pytest.mark.req("engram.mcp.seat")
def test_no_manifest_anywhere_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="pass --ote FILE, set ENGRAM_OTE, or run"):
        locate_seat(None, {"ENGRAM_OTE": ""}, tmp_path)


@pytest.mark.req("engram.mcp.seat", "engram.cli.default-seat-commands")
def test_last_comes_the_default_seat_of_engram_home_written_once(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    environ = {"ENGRAM_HOME": str(home)}
    manifest = home / "default-ote.toml"

    first = locate_seat(None, environ, work, default=True)
    written = manifest.read_text(encoding="utf-8")
    manifest.write_text(written + "# the user's own line\n", encoding="utf-8")
    again = locate_seat(None, environ, work, default=True)

    assert (first, first.created) == (SeatSource("default", manifest), True)
    assert (again, again.created) == (SeatSource("default", manifest), False)
    assert manifest.read_text(encoding="utf-8").endswith("# the user's own line\n")  # kept
    assert "[retrieval]" in written
    # A manifest found any earlier way wins over it; without `default` there is none.
    write_seat(work)
    assert locate_seat(None, environ, work, default=True).origin == ".engram/ote.toml"
    with pytest.raises(ManifestError, match="no seat manifest"):
        locate_seat(None, environ, tmp_path)
