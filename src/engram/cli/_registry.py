"""``engram registry index | check | build-site | remix``: the ACX git registry and Exchange.

lboel/acx@85f1358 SPEC.md §17; docs/spec/acx-registry.md §11. Each command parses its arguments and
calls one ``engram.registry`` function. ``index`` and ``check`` exit 1 when the registry breaks a
rule (each finding on its own line: path, rule, message), 2 for unreadable input.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._app import cli
from engram.cli._common import emit, json_option, trust_registry_option
from engram.core.canonical import parse_object
from engram.core.files import read_regular
from engram.core.jsonio import dumps_text
from engram.errors import InvalidRequest
from engram.registry.internals import RELATIONS, problem_line, problem_wire

if TYPE_CHECKING:
    from engram.registry import Problem
    from engram.trust import TrustRegistry


_DIR = click.Path(exists=True, file_okay=False, path_type=Path)
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def _now() -> datetime:
    return datetime.now(UTC)


def _problem_lines(problems: list[Problem]) -> list[str]:
    return [f"  {problem_line(p)}" for p in problems]


@cli.group("registry")
def registry_group() -> None:
    """The ACX git registry: rebuild its index, run its PR gate, build its static Exchange."""


@registry_group.command("index")
@click.argument("directory", type=_DIR)
@trust_registry_option
@json_option
def index_command(directory: Path, trust_registry: TrustRegistry | None, as_json: bool) -> None:
    """Verify every artifact in DIRECTORY and rewrite DIRECTORY/index.json from what passed.

    Without --trust-registry, DIRECTORY/trust-registry.json is used when present.
    """
    from engram.registry import build_index
    from engram.registry.internals import INDEX_FILE

    build = build_index(directory, now=_now(), trust=trust_registry)
    index = build.index
    if build.ok:
        target = directory / INDEX_FILE
        data = build.to_bytes()
        if not target.is_file() or target.read_bytes() != data:
            target.write_bytes(data)
    counts = (
        f"{index['count']} cartridge(s), {index['workflowCount']} workflow(s), "
        f"{index['agentGraphCount']} Agent Graph(s), {index['templateCount']} template(s)"
    )
    lines = (
        [f"indexed {counts} -> {directory / INDEX_FILE}"]
        if build.ok
        else [
            f"REFUSED: {len(build.problems)} problem(s); index.json not written",
            *_problem_lines(build.problems),
        ]
    )
    value = {
        "ok": build.ok,
        "problems": [problem_wire(p) for p in build.problems],
        "generatedAt": index["generatedAt"],
    }
    emit(value, as_json, lines)
    if not build.ok:
        raise click.exceptions.Exit(1)


@registry_group.command("check")
@click.argument("directory", type=_DIR)
@click.option(
    "--since", default=None, metavar="REV", help="The accepted base commit of the pull request."
)
@click.option("--no-history", is_flag=True, help="Skip the git history check.")
@trust_registry_option
@json_option
def check_command(
    directory: Path,
    since: str | None,
    no_history: bool,
    trust_registry: TrustRegistry | None,
    as_json: bool,
) -> None:
    """The pull-request gate: policy, live verification, pins, ledger, history, fresh index.

    Without --trust-registry, DIRECTORY/trust-registry.json is used when present.
    """
    from engram.registry import check_registry

    report = check_registry(
        directory, now=_now(), since=since, trust=trust_registry, history=not no_history
    )
    lines = (
        ["ok: the registry passes its gate"]
        if report.ok
        else [f"FAILED: {len(report.problems)} problem(s)", *_problem_lines(report.problems)]
    )
    lines += [f"note: {n}" for n in report.notes]
    emit(report.to_wire(), as_json, lines)
    if not report.ok:
        raise click.exceptions.Exit(1)


@registry_group.command("build-site")
@click.argument("directory", type=_DIR)
@click.option(
    "-o", "--output", "out", required=True, type=click.Path(file_okay=False, path_type=Path)
)
@trust_registry_option
@json_option
def build_site_command(
    directory: Path, out: Path, trust_registry: TrustRegistry | None, as_json: bool
) -> None:
    """Build the static Exchange of DIRECTORY into -o SITE (files only; no server needed).

    Without --trust-registry, DIRECTORY/trust-registry.json is used when present.
    """
    from engram.registry import build_site

    site = build_site(directory, out, now=_now(), trust=trust_registry)
    value = {
        "output": str(site.out),
        "artifacts": site.artifacts,
        "files": site.files,
        "registryIndexDigest": site.index_digest,
    }
    emit(
        value,
        as_json,
        f"built {site.artifacts} artifact page(s), {site.files} file(s) -> {site.out}",
    )


@registry_group.command("remix")
@click.argument("file", type=_FILE)
@click.option("--id", "new_id", required=True, help="The remix's new id.")
@click.option("--version", "new_version", required=True, help="The remix's SemVer.")
@click.option("--relation", type=click.Choice(RELATIONS), default="remix", show_default=True)
@click.option("--source", default=None, help="Where the parent was found (absolute https URL).")
@click.option("--note", default=None, help="A note kept in the signed lineage.")
@click.option(
    "-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=Path)
)
def remix_command(
    file: Path,
    new_id: str,
    new_version: str,
    relation: str,
    source: str | None,
    note: str | None,
    out: Path,
) -> None:
    """An unsigned remix draft of a signed workflow or Agent Graph, its parent pinned in lineage."""
    from engram.registry import remix_draft

    if out.exists():
        raise InvalidRequest(f"{out} exists; give a new file")
    document = parse_object(
        read_regular(file, what="document"), what=str(file), error=InvalidRequest
    )
    draft = remix_draft(
        document,
        new_id=new_id,
        new_version=new_version,
        relation=relation,
        source=source,
        note=note,
        now=_now(),
    )
    out.write_text(dumps_text(draft, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    click.echo(
        f"wrote the unsigned draft {out}; sign it (engram workflow|graph sign) before sharing"
    )
