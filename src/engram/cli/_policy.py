"""``engram cartridge policy FILE.acx|POLICY.json [--host-limits Y] [--overlay F] [--json]``.

SPEC §9 (lboel/acx@85f1358); docs/spec/acx-policy.md §7. Prints the effective loop-context
policy: every value a host runs with and where it came from (the signed policy, the host's
limits, engram's defaults, the SAVE rule overlay). An invalid policy is refused (exit 2) with
every problem and the requirement id it breaks.

FILE is a cartridge (its verified ROM object ``rom/policy/loop-context-policy.json`` and its SAVE
``save/policy/rule-overlay.json``, read by :mod:`engram.cli._acx_input`) or the policy document
itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._acx_input import is_cartridge, read_verified
from engram.core.jsonio import dumps_text
from engram.errors import InvalidRequest

if TYPE_CHECKING:
    from engram.policy import EffectivePolicy


_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def policy_bytes(file: Path) -> tuple[bytes, bytes | None]:
    """The policy's bytes and the SAVE overlay's: from a verified cartridge, or the file itself."""
    from engram.policy.internals import POLICY_PATH

    if not is_cartridge(file):
        return file.read_bytes(), None
    cartridge = read_verified(file)
    if cartridge.policy is None:
        raise InvalidRequest(f"{file}: the ROM has no {POLICY_PATH} (SPEC §9.1 requires one)")
    return cartridge.policy, cartridge.overlay


def _render(effective: EffectivePolicy) -> list[str]:
    lines = [f"policy {effective.schema_version} {effective.policy_digest}"]
    width = max(len(e.path) for e in effective.entries)
    for entry in effective.entries:
        lines.append(f"  {entry.path:<{width}}  {dumps_text(entry.value)}  [{entry.source}]")
    lines.append("rules:")
    for rule, source in effective.rules:
        lines.append(f"  {rule['id']} ({rule['severity']}, {rule['category']}) [{source}]")
    return lines


@click.command("policy")
@click.argument("file", type=_FILE)
@click.option(
    "--host-limits", type=_FILE, help="The host's resource-limits.yaml (wins over budget)."
)
@click.option("--overlay", type=_FILE, help="save/policy/rule-overlay.json (field-learned rules).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def policy_command(
    file: Path, host_limits: Path | None, overlay: Path | None, as_json: bool
) -> None:
    """Print the effective loop-context policy and where each value comes from."""
    from engram.policy import (
        PolicyError,
        effective_policy,
        load_host_limits,
        load_policy,
        load_rule_overlay,
    )

    raw, saved_overlay = policy_bytes(file)
    try:
        policy = load_policy(raw, what=str(file))
    except PolicyError as e:
        if as_json:
            click.echo(
                dumps_text(
                    {"error": e.to_wire()["error"], "problems": e.problems_wire()},
                    indent=2,
                )
            )
        raise
    host = (
        load_host_limits(host_limits.read_bytes(), what=str(host_limits)) if host_limits else None
    )
    overlay_bytes = overlay.read_bytes() if overlay else saved_overlay
    rules = (
        load_rule_overlay(overlay_bytes, policy, what=str(overlay or file))
        if overlay_bytes
        else None
    )
    effective = effective_policy(policy, host, rules)
    if as_json:
        click.echo(dumps_text(effective.to_wire(), indent=2))
    else:
        click.echo("\n".join(_render(effective)))


COMMAND = policy_command
