"""The ACX trust registry has one spelling in every command, ``--trust-registry`` (issue 32,
point 5: ``cartridge pull`` took only ``--trust`` where ``verify``/``import``/``activate`` took
``--registry``, and ``--registry`` means a git folder in ``engram share``). The old spellings
stay as hidden aliases, so scripts keep working."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from engram.cli import cli, run_cli
from engram.cli.internals import TRUST_REGISTRY_HELP

ALIASES = {"--registry", "--trust"}
REFERENCE_ACX = next(
    (Path(__file__).resolve().parents[1] / "vectors" / "acx-reference").rglob("*.acx")
)


def _commands(
    group: click.Group, ctx: click.Context, path: str
) -> Iterator[tuple[str, click.Command]]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None:
            continue
        where = f"{path} {name}".strip()
        if isinstance(command, click.Group):
            yield from _commands(command, click.Context(command, parent=ctx), where)
        else:
            yield where, command


def _trust_options() -> dict[str, list[click.Option]]:
    ctx = click.Context(cli)
    found: dict[str, list[click.Option]] = {}
    for where, command in _commands(cli, ctx, ""):
        for param in command.params:
            if not isinstance(param, click.Option):
                continue
            # `workflow ready --issuers` is another registry (of level issuers), named for it.
            text = (param.help or "").lower()
            described = "trust registry" in text and "issuers" not in text
            alias = param.hidden and set(param.opts) <= ALIASES
            if described or alias or "--trust-registry" in param.opts:
                found.setdefault(where, []).append(param)
    return found


@pytest.mark.req("engram.cli.trust-registry-option")
def test_every_command_spells_the_trust_registry_one_way() -> None:
    found = _trust_options()
    expected = {
        "cartridge verify", "cartridge import", "cartridge activate", "cartridge pull",
        "cartridge push", "cartridge level verify", "workflow verify", "workflow ready",
        "graph verify", "registry index", "registry check", "share agent",
    }  # fmt: skip
    assert expected <= set(found)
    for where, options in found.items():
        visible = [o for o in options if not o.hidden]
        assert [o.opts for o in visible] == [["--trust-registry"]], where
        # One declaration (issue 28): the same help and argument name in every command.
        assert (visible[0].help, visible[0].name) == (TRUST_REGISTRY_HELP, "trust_registry")
        hidden = {flag for o in options if o.hidden for flag in o.opts}
        assert hidden, where
        assert hidden <= ALIASES, where
    # `engram share --registry` stays what it is there: the git folder artifacts go to.
    share = _commands(cli, click.Context(cli), "")
    folder = dict(share)["share agent"]
    registry = next(p for p in folder.params if "--registry" in p.opts)
    assert not getattr(registry, "hidden", False)


@pytest.mark.req("engram.cli.trust-registry-option")
def test_old_spellings_still_work_and_two_at_once_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = tmp_path / "trust.json"
    registry.write_text('{"schemaVersion": "acx.trust-registry/1", "keys": []}')
    verify = ["cartridge", "verify", str(REFERENCE_ACX), "--json"]
    answers = []
    for flag in ("--trust-registry", "--registry", "--trust"):
        code = run_cli(cli, [*verify, flag, str(registry)])
        answers.append((code, capsys.readouterr().out))
    assert answers[0][1]
    assert answers[1:] == [answers[0], answers[0]]  # the same registry under every spelling
    both = [*verify, "--trust-registry", str(registry)]
    assert run_cli(cli, [*both, "--trust", str(registry)]) == 2
    assert "--trust-registry and --trust name the same trust registry" in capsys.readouterr().err
