"""``engram cartridge load``: install a cartridge's skills where a host looks for them.

Its own module because its ``--host`` choices come from ``engram.cartridge.HOST_SKILL_DIRS``:
only ``cartridge load`` (and its help) pays for loading the library to list them (issue 33).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cartridge import HOST_SKILL_DIRS
from engram.cli._cartridge_options import ACCEPT_CHOICE, accepted
from engram.cli._common import EXISTING_FILE, trust_registry_option

if TYPE_CHECKING:
    from engram.trust import TrustRegistry


@click.command("load")
@click.argument("file", type=EXISTING_FILE)
@click.option(
    "--host",
    "host",
    type=click.Choice(sorted(HOST_SKILL_DIRS)),
    default="claude",
    show_default=True,
)
@click.option(
    "--skills-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Default: the host's skills folder.",
)
@click.option("--print-only", is_flag=True, help="List what would be installed; write nothing.")
@trust_registry_option
@click.option(
    "--accept",
    "accept",
    multiple=True,
    type=ACCEPT_CHOICE,
    help="Trust states to accept (default: any but tampered).",
)
def load_command(
    file: Path,
    host: str,
    skills_dir: Path | None,
    print_only: bool,
    trust_registry: TrustRegistry | None,
    accept: tuple[str, ...],
) -> None:
    """Install FILE's skills where HOST looks for them, byte for byte."""
    from engram.cartridge import Cartridge, derive_skills, install_skills, require_state, verify_rom
    from engram.trust import TrustState

    with Cartridge.open(file) as cartridge:
        report, rom = verify_rom(cartridge, registry=trust_registry)
    require_state(
        report, accepted(accept) if accept else frozenset(set(TrustState) - {TrustState.TAMPERED})
    )
    target = (skills_dir or Path(HOST_SKILL_DIRS[host])).expanduser()
    skills = derive_skills(rom.files)
    if print_only:
        for s in skills:
            click.echo(f"{s.name}: {target / s.name}")
        return
    written = install_skills(rom, target)
    click.echo(
        f"{report.state.value}: installed {len(skills)} skill(s), {len(written)} file(s) "
        f"into {target}"
    )


__all__ = ["load_command"]
