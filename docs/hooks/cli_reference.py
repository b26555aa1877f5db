"""MkDocs hook: the command-line reference, generated from the real click commands.

One page per top-level ``engram`` command under ``cli/``, rendered from the very command objects
``engram`` runs, through click's own help API (usage line, help records), so a page says what
``engram ... --help`` says and cannot drift from the CLI (docs/spec/docs-site.md "The
command-line reference"). ``cli/index.md`` lists every command by area, with the spec page that
explains it. mkdocs-click was tried first: with click 8.3 it prints ``Sentinel.UNSET`` as every
unset default and leaves arguments out, so the pages are written here from click's public API.
``docs/spec/cli.md`` keeps the hand-written table of every command, which
tests/cli/test_cli_docs.py holds to the same click tree.

The CLI imports each command's module only when that command runs (``engram.cli._app``); this
hook imports them all and looks every group up once, which is also what attaches the groups that
live in other modules (``engram cartridge level``).
"""

from __future__ import annotations

import importlib
import inspect
import re

import click
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

FOLDER = "cli"

# Areas of the index page: title, the spec page that explains them (relative to cli/), commands.
# A command in no area is listed under "Other commands", so a new command is never left out.
AREAS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "The context provider",
        "../spec/context-provider.md",
        ("serve", "demo", "subject", "belief", "token", "correction", "review-link"),
    ),
    ("Runtimes", "../spec/runtime.md", ("context", "chat")),
    ("Conformance", "../spec/conformance-bundle.md", ("conformance",)),
    (
        "The memory engine",
        "../spec/memory-cli.md",
        (
            "init",
            "record",
            "recall",
            "outcome",
            "distill",
            "complete",
            "status",
            "migrate",
            "memory",
        ),
    ),
    ("Seat manifests", "../spec/memory-manifest.md", ("ote", "default-ote")),
    ("MCP", "../spec/mcp.md", ("mcp",)),
    ("Agent Cartridges", "../spec/acx.md", ("cartridge",)),
    ("Workflows and Agent Graphs", "../spec/acx-workflows.md", ("workflow", "graph")),
    ("The ACX registry and Exchange", "../spec/acx-registry.md", ("registry", "share")),
    ("Storage and keys", "../spec/storage.md", ("db", "keys")),
    ("The trust spine", "../spec/canonical-json.md", ("canonicalize",)),
)


def top_level_commands() -> tuple[click.Context, dict[str, click.Command]]:
    """The root context and every top-level command by name, each module imported first."""
    from engram.cli import cli
    from engram.cli.internals import COMMAND_MODULES

    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(module)
    root = _context(cli, "engram", None)
    return root, dict(_subcommands(cli, root))


def _context(command: click.Command, name: str, parent: click.Context | None) -> click.Context:
    # What click builds when the command runs, so usage lines and help options match `--help`.
    return click.Context(command, info_name=name, parent=parent, **command.context_settings)


def _subcommands(command: click.Command, ctx: click.Context) -> list[tuple[str, click.Command]]:
    if not isinstance(command, click.Group):
        return []
    found = []
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        if sub is not None and not sub.hidden:
            found.append((name, sub))
    return found


CODE_SPAN = re.compile(r"(`[^`]*`)")


def prose(text: str) -> str:
    """Help text as Markdown: code spans kept, characters Markdown would take for markup escaped."""
    parts = CODE_SPAN.split(text)
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace("*", "\\*")
    return "".join(parts)


def help_lines(command: click.Command) -> list[str]:
    """The command's help, paragraph by paragraph; click's ``\\b`` paragraphs stay as typed."""
    text = inspect.cleandoc(command.help or command.short_help or "")
    lines: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        if not paragraph.strip():
            continue
        if paragraph.lstrip().startswith("\b"):
            body = paragraph.lstrip()[1:].strip("\n")
            lines += ["```text", body, "```", ""]
        else:
            lines += [prose(" ".join(paragraph.split())), ""]
    return lines


def command_lines(command: click.Command, ctx: click.Context, depth: int) -> list[str]:
    """Heading, help, usage, arguments, options and subcommands of one command, then each
    subcommand's, the way `engram ... --help` shows them."""
    path = ctx.command_path
    label = ctx.info_name or path
    lines = [f'{"#" * depth} {path} {{ #{anchor(path)} data-toc-label="{label}" }}', ""]
    lines += help_lines(command)
    usage = command.get_usage(ctx).strip()
    lines += ["```text", usage, "```", ""]
    arguments = [p for p in command.get_params(ctx) if isinstance(p, click.Argument)]
    if arguments:
        lines += ["| argument | |", "|---|---|"]
        for argument in arguments:
            what = "required" if argument.required else "optional"
            if argument.nargs != 1:
                what += ", one or more" if argument.required else ", any number"
            lines.append(f"| `{argument.human_readable_name}` | {what} |")
        lines.append("")
    records = [
        record
        for p in command.get_params(ctx)
        if isinstance(p, click.Option) and (record := p.get_help_record(ctx)) is not None
    ]
    if records:
        lines += ["| option | meaning |", "|---|---|"]
        for flags, meaning in records:
            lines.append(f"| `{flags}` | {cell(prose(meaning))} |")
        lines.append("")
    subcommands = _subcommands(command, ctx)
    if subcommands:
        lines += ["| subcommand | what it does |", "|---|---|"]
        for name, sub in subcommands:
            link = f"[{name}](#{anchor(f'{path} {name}')})"
            lines.append(f"| {link} | {cell(prose(sub.get_short_help_str(limit=200)))} |")
        lines.append("")
    for name, sub in subcommands:
        lines += command_lines(sub, _context(sub, name, ctx), min(depth + 1, 6))
    return lines


def anchor(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def command_page(name: str, command: click.Command, root: click.Context) -> str:
    area = next((a for a in AREAS if name in a[2]), None)
    explained = f"[{area[0]}]({area[1]})" if area else "[the command line](../spec/cli.md)"
    lines = [
        "---",
        f"title: {name}",
        "---",
        "",
        "<!-- Generated from the click command by docs/hooks/cli_reference.py. -->",
        "",
        *command_lines(command, _context(command, name, root), 1),
        "---",
        "",
        f"Decisions behind these commands: {explained}. Errors, exit codes and the options "
        "every command shares: [the command line](../spec/cli.md).",
        "",
    ]
    return "\n".join(lines)


def index_page(commands: dict[str, click.Command]) -> str:
    lines = [
        "# Command line",
        "",
        "Every `engram` command, generated from the commands themselves: each page shows a "
        "command's usage, its options with their defaults, and its subcommands. `engram COMMAND "
        "--help` prints the same text in a terminal.",
        "",
        "Every error is one line on stderr (`error: <code>: <message>`) with exit 2 for bad "
        "input and 1 otherwise; `--database` (alias `--db`), `--token-file` and `--json` mean "
        "the same on every command that takes them. Details: "
        "[the command line](../spec/cli.md), which also has a table of every subcommand.",
        "",
    ]
    sections = list(AREAS)
    others = tuple(sorted(set(commands) - {n for _, _, names in AREAS for n in names}))
    if others:
        sections.append(("Other commands", "../spec/cli.md", others))
    for title, spec, names in sections:
        present = [n for n in names if n in commands]
        if not present:
            continue
        lines += [f"## {title}", "", f"Decisions: [{spec.rsplit('/', 1)[-1]}]({spec}).", ""]
        lines += ["| command | what it does |", "|---|---|"]
        for name in present:
            summary = commands[name].get_short_help_str(limit=200).replace("|", "\\|")
            lines.append(f"| [engram {name}]({name}.md) | {summary} |")
        lines.append("")
    return "\n".join(lines)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root, commands = top_level_commands()
    files.append(File.generated(config, f"{FOLDER}/index.md", content=index_page(commands)))
    for name, command in commands.items():
        content = command_page(name, command, root)
        files.append(File.generated(config, f"{FOLDER}/{name}.md", content=content))
    return files
