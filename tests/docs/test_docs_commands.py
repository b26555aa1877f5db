"""Every `engram` command line on the pages written for the site names a real command and only
options it has (docs/spec/docs-site.md "Pages whose commands are checked").

Lines are taken from fenced code blocks; a command may sit after ``&&``, ``|``, ``;`` or inside
``$(...)``. Upper-case words (``FILE``, ``KEY``) are placeholders and are not checked.
"""

from __future__ import annotations

import importlib
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from docs_kit import REPO

from engram.cli import cli
from engram.cli.internals import COMMAND_MODULES

DOCS = REPO / "docs"
# The pages written for the site; docs/spec/ and the guides belong to their areas' owners.
PAGES = sorted(
    [
        DOCS / "index.md",
        DOCS / "quickstart.md",
        DOCS / "deployment.md",
        DOCS / "benchmarks.md",
        DOCS / "worked-example.md",
        *(DOCS / "concepts").glob("*.md"),
    ]
)
FENCE = re.compile(r"^```[a-z]*\n(?P<body>.*?)^```", re.S | re.M)
SEPARATORS = re.compile(r"&&|\|\|?|;|\$\(|`")


def command_lines(page: Path) -> Iterator[str]:
    for block in FENCE.finditer(page.read_text(encoding="utf-8")):
        body = block["body"].replace("\\\n", " ")
        for line in body.splitlines():
            for segment in SEPARATORS.split(line.split(" # ", 1)[0]):
                segment = segment.strip().rstrip(")")
                if segment.startswith("engram "):
                    yield segment


def resolve(words: list[str]) -> tuple[click.Command, click.Context, list[str]]:
    """The command the words name, its context and the words left after the command's name."""
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(module)
    ctx = click.Context(cli, info_name="engram", **cli.context_settings)
    command: click.Command = cli
    rest = words[1:]
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(ctx, rest[0])
        assert sub is not None, f"no command `{ctx.command_path} {rest[0]}`"
        ctx = click.Context(sub, info_name=rest[0], parent=ctx)
        command, rest = sub, rest[1:]
    return command, ctx, rest


def option_names(command: click.Command, ctx: click.Context) -> set[str]:
    names = set()
    for param in command.get_params(ctx):
        if isinstance(param, click.Option):
            names |= set(param.opts) | set(param.secondary_opts)
    return names


CASES = [(page, line) for page in PAGES for line in command_lines(page)]


@pytest.mark.req("engram.docs.commands-exist")
def test_the_pages_have_commands_to_check() -> None:
    assert len(CASES) > 30
    assert {p.name for p, _ in CASES} >= {"quickstart.md", "deployment.md", "cartridges.md"}


@pytest.mark.req("engram.docs.commands-exist")
@pytest.mark.parametrize(
    ("page", "line"), CASES, ids=[f"{p.relative_to(DOCS)}:{line}" for p, line in CASES]
)
def test_each_command_line_names_a_real_command_and_its_options(page: Path, line: str) -> None:
    words = shlex.split(line, comments=False)
    command, ctx, rest = resolve(words)
    assert not isinstance(command, click.Group) or rest == ["--help"], (
        f"`{line}` names the group `{ctx.command_path}`, not one of its commands"
    )
    known = option_names(command, ctx)
    for word in rest:
        if word.startswith("-") and word != "-":
            flag = word.split("=", 1)[0]
            assert flag in known, f"`{ctx.command_path}` has no option {flag} ({page.name})"


@pytest.mark.req("engram.docs.commands-exist")
def test_the_check_refuses_a_command_or_option_that_does_not_exist() -> None:
    with pytest.raises(AssertionError, match="no command"):
        resolve(["engram", "cartridge", "frobnicate"])
    command, ctx, _ = resolve(["engram", "serve"])
    assert "--workers" in option_names(command, ctx)
    assert "--worker-count" not in option_names(command, ctx)
