"""``engram share agent | workflow | graph FILE --registry DIR``: place a verified artifact at
its immutable registry coordinate (lboel/acx@85f1358 SPEC.md §17.1, §17.7, §16.9;
docs/spec/acx-registry.md §8). It never overwrites other bytes; it writes nothing to git or a
network. Exit 1 when refused.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._app import cli
from engram.cli._common import emit, json_option, trust_registry_option_beside_folder

if TYPE_CHECKING:
    from engram.trust import TrustRegistry

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@cli.group("share")
def share_group() -> None:
    """Share a signed agent, workflow or Agent Graph into a git registry folder."""


def _make(kind: str, help_text: str) -> click.Command:
    @click.command(kind, help=help_text)
    @click.argument("file", type=_FILE)
    @click.option(
        "--registry",
        "registry",
        required=True,
        type=click.Path(file_okay=False, path_type=Path),
        help="The registry folder (registry/ of a registry repository).",
    )
    @click.option("--publisher", default=None, help="Refuse unless this is the signed publisher.")
    @click.option(
        "--dry-run", is_flag=True, help="Verify and say where it would go; write nothing."
    )
    @trust_registry_option_beside_folder
    @json_option
    def command(
        file: Path,
        registry: Path,
        publisher: str | None,
        dry_run: bool,
        trust_registry: TrustRegistry | None,
        as_json: bool,
    ) -> None:
        from engram.registry import share

        registry.mkdir(parents=True, exist_ok=True) if not dry_run else None
        shared = share(
            kind,
            file,
            registry,
            now=datetime.now(UTC),
            trust=trust_registry,
            publisher_id=publisher,
            dry_run=dry_run,
        )
        verb = (
            "would place"
            if shared.dry_run and shared.changed
            else ("placed" if shared.changed else "already there:")
        )
        lines = [
            f"{verb} {shared.path} ({shared.entry.get('trust')}, {shared.entry.get('digest')})",
            "next: engram registry index DIR, then commit and open a pull request"
            if shared.changed and not shared.dry_run
            else shared.reason,
        ]
        emit(shared.to_wire(), as_json, lines)

    return command


share_group.add_command(
    _make("agent", "Share a signed cartridge (.acx) at cartridges/<publisher>/<id>/<version>/.")
)
share_group.add_command(
    _make(
        "workflow",
        "Share a signed workflow (.cal.json) at cals/<publisher>/<id>/<version>.cal.json.",
    )
)
share_group.add_command(
    _make(
        "graph", "Share a signed Agent Graph at graphs/<publisher>/<id>/<version>.agent-graph.json."
    )
)
