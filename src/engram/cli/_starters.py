"""``engram cartridge new DIR``, ``engram workflow new FILE``, ``engram graph new FILE``: small,
valid, commented starting points (issue 32, point 4), each a thin adapter over one library
function. None overwrites anything: an existing target is refused and nothing is written."""

from __future__ import annotations

from pathlib import Path

import click

from engram.core.canonical import JsonObject
from engram.core.jsonio import dumps_text
from engram.errors import InvalidRequest

_TARGET = click.Path(path_type=Path)


def _write_new(path: Path, document: JsonObject) -> None:
    try:
        with path.open("x", encoding="utf-8") as out:
            out.write(dumps_text(document, indent=2) + "\n")
    except FileExistsError as e:
        raise InvalidRequest(f"{path} exists: nothing was written") from e


@click.command("new")
@click.argument("folder", type=_TARGET)
@click.option("--name", default="My Agent", show_default=True, help="The agent's name.")
def cartridge_new(folder: Path, name: str) -> None:
    """Write an agent package to start from into FOLDER (absent or empty)."""
    from engram.cartridge import write_starter_package

    for path in write_starter_package(folder, name):
        click.echo(f"wrote {path}")
    click.echo(f"next: read {folder / 'README.md'}, then engram cartridge export {folder} ...")


@click.command("new")
@click.argument("file", type=_TARGET)
@click.option("--id", "workflow_id", default="my-workflow", show_default=True)
def workflow_new(file: Path, workflow_id: str) -> None:
    """Write a build-and-review workflow (acx.cal/1) to start from into FILE."""
    from engram.workflow import starter_workflow

    _write_new(file, starter_workflow(workflow_id))
    click.echo(f"wrote {file}; next: engram workflow lint {file} --publish")


@click.command("new")
@click.argument("file", type=_TARGET)
@click.option("--id", "graph_id", default="my-team", show_default=True)
def graph_new(file: Path, graph_id: str) -> None:
    """Write an Agent Graph (a lead and a team) to start from into FILE."""
    from engram.graph import starter_graph

    _write_new(file, starter_graph(graph_id))
    click.echo(f"wrote {file}; next: engram graph lint {file} --publish")


__all__ = ["cartridge_new", "graph_new", "workflow_new"]
