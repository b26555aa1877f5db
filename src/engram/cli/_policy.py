"""``engram cartridge policy POLICY.json [--host-limits LIMITS.yaml] [--overlay F] [--json]``.

SPEC §9 (lboel/acx@85f1358); docs/spec/acx-policy.md §7. Prints the effective loop-context
policy: every value a host runs with and where it came from (the signed policy, the host's
limits, engram's defaults, the SAVE rule overlay). An invalid policy is refused (exit 2) with
every problem and the requirement id it breaks.

Until the cartridge reader reads the real .acx layout, the command takes the policy file itself
(the bytes of ROM object ``rom/policy/loop-context-policy.json``); reading it out of FILE.acx is
one call, :func:`policy_bytes`, whose ``.acx`` branch is that wiring step.
"""

from __future__ import annotations

from pathlib import Path

import click

from engram.core.jsonio import dumps_text
from engram.errors import InvalidRequest
from engram.policy import (
    EffectivePolicy,
    PolicyError,
    effective_policy,
    load_host_limits,
    load_policy,
    load_rule_overlay,
)

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def policy_bytes(file: Path) -> bytes:
    """The policy's bytes: the file itself, or (once wired) the ROM object inside an ``.acx``."""
    if file.suffix == ".acx":
        raise InvalidRequest(
            f"{file}: reading the policy out of a .acx waits for the re-aligned cartridge reader;"
            " pass the extracted rom/policy/loop-context-policy.json"
        )
    return file.read_bytes()


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
    try:
        policy = load_policy(policy_bytes(file), what=str(file))
    except PolicyError as e:
        if as_json:
            click.echo(
                dumps_text(
                    {"error": e.to_wire()["error"], "problems": [p.to_json() for p in e.problems]},
                    indent=2,
                )
            )
        raise
    host = (
        load_host_limits(host_limits.read_bytes(), what=str(host_limits)) if host_limits else None
    )
    rules = load_rule_overlay(overlay.read_bytes(), policy, what=str(overlay)) if overlay else None
    effective = effective_policy(policy, host, rules)
    if as_json:
        click.echo(dumps_text(effective.to_json(), indent=2))
    else:
        click.echo("\n".join(_render(effective)))


COMMAND = policy_command
