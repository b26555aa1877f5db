"""``engram graph lint | sign | verify | inspect | digest``: ACX Agent Graphs.

lboel/acx@85f1358 SPEC.md §16.9 and docs/spec/acx-graphs.md §"Command line". ``inspect`` draws
the graph for a person: a text tree in the terminal, or ``--format dot|svg`` for a picture of
actors, the knowledge they steward, routes, bound workflows and convergence (SVG through
Graphviz ``dot``). ``--workflows DIR`` resolves every pinned workflow against the ``*.cal.json``
files in a folder (§17.4). Nothing here routes a message or grants anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._acx_documents import (
    DIRECTORY,
    FILE,
    console,
    emit_json,
    lint_command,
    own_keyids,
    read_bytes,
    report_check,
    sign_file,
    sign_options,
)
from engram.cli._app import LazySubgroup, cli
from engram.cli._common import trust_registry_option
from engram.core.canonical import JsonObject
from engram.core.clock import SystemClock
from engram.errors import EngramError

if TYPE_CHECKING:
    from rich.tree import Tree

    from engram.graph import Outline, PinnedWorkflow
    from engram.trust import TrustRegistry
    from engram.workflow import LintReport


@cli.group("graph", cls=LazySubgroup)
def graph_group() -> None:
    """ACX Agent Graphs (acx.agent-graph/1): lint, sign, verify, inspect, digest."""


def _load(data: bytes, what: str) -> JsonObject:
    from engram.graph import load_graph

    return load_graph(data, what=what)


def _workflows(directory: Path) -> tuple[list[PinnedWorkflow], list[str]]:
    from engram.graph import PinnedWorkflow
    from engram.workflow import load_workflow

    found: list[PinnedWorkflow] = []
    unreadable: list[str] = []
    for path in sorted(directory.rglob("*.cal.json")):
        if path.is_symlink() or not path.is_file():
            continue
        try:
            found.append(PinnedWorkflow(str(path), load_workflow(read_bytes(path), what=str(path))))
        except EngramError as e:
            unreadable.append(f"{path}: {e.message}")
    return found, unreadable


def _with_pins(report: LintReport, document: JsonObject, workflows: Path | None) -> LintReport:
    from engram.graph import resolve_pins
    from engram.workflow import LintReport

    if workflows is None or not report.ok:
        return report
    found, unreadable = _workflows(workflows)
    for line in unreadable:
        click.echo(f"warning: unreadable workflow {line}", err=True)
    issues = resolve_pins(document, found, now=SystemClock().now())
    return LintReport.of([*report.issues, *issues])


@graph_group.command("lint")
@click.argument("file", type=FILE)
@click.option("--publish", is_flag=True, help="Also require the publication profile (§16.1).")
@click.option("--workflows", type=DIRECTORY, help="Resolve pinned workflows in this folder.")
@click.option("--json", "as_json", is_flag=True)
def lint_cmd(file: Path, publish: bool, workflows: Path | None, as_json: bool) -> None:
    """Check references and §16 invariants (and with --publish the profile); exit 1 if invalid."""
    from engram.graph import lint_graph

    def lint(document: JsonObject, publish: bool) -> LintReport:
        return _with_pins(lint_graph(document, publish=publish), document, workflows)

    lint_command(_load, lint, file, publish, as_json)


@graph_group.command("sign")
@sign_options
def sign_cmd(file: Path, publisher: str, sign_key: Path, out: Path | None) -> None:
    """Sign a publishable graph (acx.agent-graph-signature/1); write it to -o or stdout."""
    from engram.graph import sign_graph

    sign_file(_load, sign_graph, file, publisher, sign_key, out)


@graph_group.command("verify")
@click.argument("file", type=FILE)
@trust_registry_option
@click.option("--own-key", "own_keys", multiple=True, type=FILE, help="This host's own key.")
@click.option("--workflows", type=DIRECTORY, help="Resolve pinned workflows in this folder.")
@click.option("--json", "as_json", is_flag=True)
def verify_cmd(
    file: Path,
    trust_registry: TrustRegistry | None,
    own_keys: tuple[Path, ...],
    workflows: Path | None,
    as_json: bool,
) -> None:
    """Check the signature and the publishable structure; exit 1 unless both hold."""
    from engram.graph import check_graph, load_graph
    from engram.workflow.internals import ArtifactCheck

    document = load_graph(read_bytes(file), what=str(file))
    check = check_graph(
        document,
        registry=trust_registry,
        now=SystemClock().now(),
        local_keyids=own_keyids(own_keys),
    )
    check = ArtifactCheck(check.verification, _with_pins(check.lint, document, workflows))
    report_check(check, str(file), as_json)


@graph_group.command("inspect")
@click.argument("file", type=FILE)
@click.option(
    "--format",
    "form",
    type=click.Choice(["text", "dot", "svg"]),
    default="text",
    show_default=True,
    help="text: a tree in the terminal; dot/svg: a picture (svg needs Graphviz).",
)
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False, path_type=Path))
@trust_registry_option
@click.option("--json", "as_json", is_flag=True, help="The discovery card as JSON.")
def inspect_cmd(
    file: Path, form: str, out: Path | None, trust_registry: TrustRegistry | None, as_json: bool
) -> None:
    """Draw the graph: actors, knowledge stewardship, routes, bound workflows, convergence."""
    from engram.graph import (
        graph_dot,
        graph_outline,
        lint_graph,
        load_graph,
        render_svg,
        verify_graph,
    )
    from engram.graph.internals import graph_card

    document = load_graph(read_bytes(file), what=str(file))
    lint = lint_graph(document)
    if not lint.ok:
        raise click.ClickException(
            f"{file} is not a valid Agent Graph ({lint.errors[0]}); run `engram graph lint`"
        )
    verification = verify_graph(document, registry=trust_registry, now=SystemClock().now())
    if as_json:
        emit_json(graph_card(document, verification))
        return
    if form == "text":
        outline = graph_outline(document, verification)
        if out is not None:
            out.write_text("\n".join(outline.lines()) + "\n", encoding="utf-8")
        else:
            console().print(_tree(outline))
        return
    dot = graph_dot(document, verification)
    data = dot.encode("utf-8") if form == "dot" else render_svg(dot)
    if out is None:
        click.echo(data.decode("utf-8"), nl=False)
    else:
        out.write_bytes(data)
        click.echo(f"wrote {out}", err=True)


def _tree(outline: Outline, tree: Tree | None = None) -> Tree:
    # Text, not markup: "[product-owner]" in a label is an id, not a rich style tag.
    from rich.text import Text
    from rich.tree import Tree

    label = Text(outline.label, style="bold" if tree is None else "")
    node = Tree(label) if tree is None else tree.add(label)
    for child in outline.children:
        _tree(child, node)
    return node


@graph_group.command("digest")
@click.argument("file", type=FILE)
def digest_cmd(file: Path) -> None:
    """Print the JCS digest (sha256 of the graph without its integrity block)."""
    from engram.graph import graph_digest, load_graph

    click.echo(graph_digest(load_graph(read_bytes(file), what=str(file))))


__all__ = ["graph_group"]
