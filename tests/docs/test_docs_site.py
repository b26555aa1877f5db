"""The documentation site builds strictly, misses no page, and its references follow the code
(docs/spec/docs-site.md).

The references are checked against sources the hooks do not share code with: the click tree is
walked here the way ``engram`` walks it, and ``openapi.json`` is read here afresh.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from docs_kit import REPO, Site, build, copy_tree

from engram.cli import cli
from engram.cli.internals import COMMAND_MODULES
from engram.core.jsonio import dumps_text

METHODS = ("get", "put", "post", "patch", "delete", "head", "options", "trace")


def anchor(text: str) -> str:
    """The heading ids the references use: lower case, each run of other characters one '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def every_command() -> Iterator[tuple[str, click.Command]]:
    """(full name, command) for every command and group a user can run."""
    for module in sorted(set(COMMAND_MODULES.values())):
        importlib.import_module(module)

    def walk(command: click.Command, ctx: click.Context) -> Iterator[tuple[str, click.Command]]:
        yield ctx.command_path, command
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None, f"{ctx.command_path} {name}"
                if not sub.hidden:
                    yield from walk(sub, click.Context(sub, info_name=name, parent=ctx))

    root = click.Context(cli, info_name="engram", **cli.context_settings)
    for path, command in walk(cli, root):
        if path != "engram":
            yield path, command


@pytest.mark.req("engram.docs.strict-build")
def test_the_site_builds_strictly_with_no_warning(site: Site) -> None:
    home = site.page("")
    assert "engram" in home.text
    assert (site.root / "404.html").is_file()


@pytest.mark.req("engram.docs.strict-build")
@pytest.mark.parametrize(
    ("broken", "reported"),
    [
        ("[a section](spec/cli.md#no-such-section)", "no-such-section"),
        ("[a page](spec/no-such-page.md)", "no-such-page.md"),
        ("[a file](../no-such-file.json)", "no-such-file.json"),
        ('--8<-- "bench/NO-SUCH-FILE.md"', "NO-SUCH-FILE.md"),
    ],
)
def test_a_broken_link_anchor_or_include_fails_the_build(
    tmp_path: Path, broken: str, reported: str
) -> None:
    tree = copy_tree(tmp_path / "tree")
    page = tree / "docs" / "deployment.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\n\n{broken}\n", encoding="utf-8")
    result = build(tree, tmp_path / "out")
    assert result.returncode != 0, "the strict build accepted a broken reference"
    assert reported in result.stderr


@pytest.mark.req("engram.docs.strict-build")
def test_a_link_to_a_repository_file_outside_docs_is_published_with_the_site(site: Site) -> None:
    published = site.root / "repository" / "requirements.json"
    assert published.read_bytes() == (REPO / "requirements.json").read_bytes()
    links = {a.get("href", "") for tag, a in site.page("spec/").tags if tag == "a"}
    assert "../repository/requirements.json" in links


@pytest.mark.req("engram.docs.nav-complete")
def test_every_built_page_is_in_the_navigation(site: Site) -> None:
    missing = sorted(site.page_urls() - site.nav_urls())
    assert missing == [], f"pages built but not in the navigation (docs/.nav.yml): {missing}"
    assert {"", "quickstart/", "concepts/", "cli/", "http-api/", "spec/"} <= site.nav_urls()


@pytest.mark.req("engram.docs.nav-complete")
def test_a_page_someone_adds_lands_in_the_navigation(tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "tree")
    (tree / "docs" / "a-new-guide.md").write_text("# A new guide\n", encoding="utf-8")
    (tree / "docs" / "spec" / "a-new-decision.md").write_text("# A decision\n", encoding="utf-8")
    (tree / "docs" / "a-new-folder").mkdir()
    (tree / "docs" / "a-new-folder" / "page.md").write_text("# In a folder\n", encoding="utf-8")
    result = build(tree, tmp_path / "out")
    assert result.returncode == 0, result.stderr[-4000:]
    built = Site(tmp_path / "out")
    assert {"a-new-guide/", "spec/a-new-decision/", "a-new-folder/page/"} <= built.nav_urls()
    assert sorted(built.page_urls() - built.nav_urls()) == []


@pytest.mark.req("engram.docs.cli-reference")
def test_every_command_has_its_usage_and_every_option_in_the_reference(site: Site) -> None:
    pages: dict[str, str] = {}
    problems = []
    for path, command in every_command():
        top = path.split()[1]
        html = pages.setdefault(top, (site.root / "cli" / top / "index.html").read_text("utf-8"))
        if f'id="{anchor(path)}"' not in html:
            problems.append(f"{path}: no section")
            continue
        if f"Usage: {path}" not in html:
            problems.append(f"{path}: no usage line")
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                problems += [f"{path}: {opt} missing" for opt in param.opts if opt not in html]
    assert problems == []
    assert len(pages) == len(cli.list_commands(click.Context(cli)))


@pytest.mark.req("engram.docs.cli-reference")
def test_the_cli_index_links_every_top_level_command(site: Site) -> None:
    links = {a.get("href", "") for tag, a in site.page("cli/").tags if tag == "a"}
    for name in cli.list_commands(click.Context(cli)):
        assert f"{name}/" in links, f"cli/index.md does not list engram {name}"


@pytest.mark.req("engram.docs.http-reference")
def test_every_operation_and_schema_of_openapi_json_has_a_section(site: Site) -> None:
    document = json.loads((REPO / "openapi.json").read_text(encoding="utf-8"))
    page = site.page("http-api/")
    expected = {
        anchor(f"{method} {path}")
        for path, item in document["paths"].items()
        for method in item
        if method in METHODS
    }
    expected |= {f"schema-{anchor(name)}" for name in document["components"]["schemas"]}
    assert sorted(expected - page.ids) == []
    assert (site.root / "openapi.json").read_bytes() == (REPO / "openapi.json").read_bytes()


@pytest.mark.req("engram.docs.http-reference")
def test_the_api_page_shows_only_the_documents_own_examples(site: Site) -> None:
    document = json.loads((REPO / "openapi.json").read_text(encoding="utf-8"))

    def examples(node: object) -> Iterator[object]:
        if isinstance(node, dict):
            if "example" in node:
                yield node["example"]
            for example in node.get("examples", {}).values() if "examples" in node else ():
                if isinstance(example, dict) and "value" in example:
                    yield example["value"]
            for value in node.values():
                yield from examples(value)
        elif isinstance(node, list):
            for value in node:
                yield from examples(value)

    text = site.page("http-api/").text
    for example in examples(document["paths"]):
        for leaf in re.findall(r'"([^"]{6,})"', dumps_text(example)):
            assert leaf in text, f"the example value {leaf!r} is not on the page"
    # An invented example would show values the document never states; the viewers we
    # rejected showed a "JWT" bearer token and out-of-range confidences.
    assert "JWT" not in text


@pytest.mark.req("engram.docs.strict-build")
def test_the_site_opens_with_the_readmes_two_set_up_commands() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    assert first_block.startswith('pip install -e ".[server]" && engram serve --demo\n')
    for page in ("index.md", "quickstart.md"):
        text = (REPO / "docs" / page).read_text(encoding="utf-8")
        for line in first_block.splitlines():
            assert line in text, f"docs/{page} does not show the README's `{line}`"
    assert "mkdocs serve" in readme, "the README says how to build and view the site"
