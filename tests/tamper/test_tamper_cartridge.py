"""Tamper suite for signed cartridges (issue 15): accepted => the meaning is identical.

Thousands of mutations of a signed cartridge engram built (single bit flips anywhere past the
header, structural SQL edits, a name rewritten in the table's raw bytes so index and table
disagree). Each mutated file is opened and verified; a refusal (any engram error) or
``tampered`` counts as refused, and anything else must carry exactly the original ROM meaning:
manifest, ROM files, memories, capabilities and signed metadata. ``ENGRAM_TAMPER_MUTATIONS``
sets the number of bit flips (default 1000, a few seconds); ``bench``-style long runs set more.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sqlite_mutations import byte_flips, rewrite_table_name, sql_edits

from engram.cartridge import Cartridge, verify_rom
from engram.errors import EngramError
from engram.trust import TrustState

SAMPLE = Path(__file__).resolve().parents[1] / "vectors/acx-reference/examples/sample-agent-package"


def build_sample(tmp: Path) -> Path:
    from datetime import UTC, datetime

    from engram.cartridge import ExportOptions, package_contents, write
    from engram.core.keys import PrivateKey

    now = datetime(2026, 7, 20, tzinfo=UTC)
    contents, _ = package_contents(SAMPLE, ExportOptions("io.github.acme", now))
    out = tmp / "sample.acx"
    write(out, contents, key=PrivateKey.generate(), signed_at=now)
    return out


MUTATIONS = int(os.environ.get("ENGRAM_TAMPER_MUTATIONS", "1000"))


def _meaning(path: Path) -> tuple[object, ...] | None:
    """None when refused; else what a consumer acts on."""
    try:
        with Cartridge.open(path) as cartridge:
            report, rom = verify_rom(cartridge)
    except EngramError:
        return None
    if report.state is TrustState.TAMPERED:
        return None
    return (
        report.state,
        rom.manifest_hash,
        tuple(sorted(rom.files.items())),
        tuple(sorted((m.id, m.zone, m.payload) for m in rom.rom_memories)),
        tuple(sorted(rom.capabilities.items())),
        tuple(sorted(rom.signed_meta.items())),
    )


@pytest.mark.req("engram.cartridge.tamper-suite")
def test_accepted_mutations_mean_the_same(tmp_path: Path) -> None:
    source = build_sample(tmp_path)
    original = _meaning(source)
    assert original is not None
    work = tmp_path / "mutant.acx"
    tried = refused = same = 0
    for path in [*byte_flips(source, work, MUTATIONS, seed=13), *[]]:
        tried += 1
        got = _meaning(path)
        if got is None:
            refused += 1
        else:
            assert got == original
            same += 1
    for path in sql_edits(source, work):
        tried += 1
        got = _meaning(path)
        if got is None:
            refused += 1
        else:
            assert got == original
            same += 1
    print(f"\ncartridge tamper: tried {tried}, refused {refused}, accepted-same-meaning {same}")
    assert tried >= MUTATIONS
    assert refused > 0
    assert same > 0


@pytest.mark.req("engram.cartridge.bytes-every-reader-sees")
def test_a_name_rewritten_in_the_table_but_not_the_index_is_refused(tmp_path: Path) -> None:
    source = build_sample(tmp_path)
    old = "rom/skills/expertise-designer/SKILL.md"
    new = "/tmp/pwned/xxxxxxxxxxxxxxxxxxxxxxxx.md"[: len(old)].ljust(len(old), "x")
    mutant = rewrite_table_name(source, tmp_path / "rewritten.acx", old, new)
    table = subprocess.run(
        ["sqlite3", str(mutant), "SELECT name FROM sqlar NOT INDEXED"],
        capture_output=True,
        text=True,
    )
    index = subprocess.run(["sqlite3", str(mutant), "-At"], capture_output=True, text=True)
    # Stock extraction scans the table (new name), listing reads the index (old name): the
    # attack is real, and a reader that trusted the index would sign off on another file.
    assert new in table.stdout
    assert old in index.stdout
    assert new not in index.stdout
    assert _meaning(mutant) is None
    with pytest.raises(EngramError, match="integrity_check"):
        Cartridge.open(mutant)
