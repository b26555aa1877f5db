"""``engram conformance provider|runtime|verify``: run the suite, cut and check bundles.

Parse, call :mod:`engram.conformance`, render (a rich table per tier, or JSON), set the exit
code: 0 when the claimed tier passes (provider), every runtime requirement passes (runtime) or
the bundle certifies (verify); 1 otherwise. docs/spec/conformance-bundle.md has the details.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._app import cli
from engram.cli._common import F, rich_console, token_option
from engram.core.canonical import Json
from engram.core.jsonio import dumps_text
from engram.errors import EngramError, InvalidRequest

if TYPE_CHECKING:
    from engram.conformance import Requirement
    from engram.conformance.internals import Row

_STYLE = {
    "executed-pass": "green",
    "executed-fail": "red",
    "skipped": "yellow",
    "blocked": "magenta",
}


@cli.group("conformance")
def conformance_group() -> None:
    """Engram v0.1 conformance: probe a provider, run a runtime, verify a bundle."""


def _ledger_option(command: F) -> F:
    return click.option(
        "--ledger",
        "ledger_path",
        type=click.Path(exists=True, path_type=Path),
        default=None,
        help="A requirements.json or requirements/ directory (default: the one shipped).",
    )(command)


@conformance_group.command("provider")
@click.argument("url")
@token_option(envvar="ENGRAM_TOKEN", required=True, help="Bearer token (read)")
@click.option("--tier", type=click.IntRange(1, 3), default=3, show_default=True)
@token_option(
    "admin_token",
    envvar="ENGRAM_ADMIN_TOKEN",
    required=False,
    help="engram admin token: add and delete probe beliefs, reject the probe corrections",
)
@click.option(
    "--delete-hook",
    default=None,
    help="Command that deletes one belief: {belief_id} is replaced by its id (else appended). "
    "Its output is shown only if it fails.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--bundle", "bundle_path", type=click.Path(path_type=Path), default=None)
@click.option("--sign-key", type=click.Path(exists=True, path_type=Path), default=None)
@click.option("--host-name", default=None, help="host.name (default: the issuer's name).")
@click.option("--host-version", default="unknown", show_default=True)
@click.option(
    "--build-kind",
    type=click.Choice(["image-digest", "commit", "artifact-sha256"]),
    default="commit",
    show_default=True,
)
@click.option("--build-id", default=None, help="host.build.id (required with --bundle).")
@click.option("--timeout", type=float, default=10.0, show_default=True)
@_ledger_option
def provider_command(
    url: str,
    token: str,
    tier: int,
    admin_token: str | None,
    delete_hook: str | None,
    as_json: bool,
    bundle_path: Path | None,
    sign_key: Path | None,
    host_name: str | None,
    host_version: str,
    build_kind: str,
    build_id: str | None,
    timeout: float,
    ledger_path: Path | None,
) -> None:
    """Probe the provider at URL and judge every provider requirement up to --tier."""
    from engram.conformance import ProviderRunOptions, build_bundle, load_ledger, run_provider
    from engram.conformance.internals import BADGES, HostInfo, totals
    from engram.core.keys import load_private_key

    if admin_token and delete_hook:
        raise InvalidRequest("give --admin-token or --delete-hook, not both")
    if (bundle_path is None) != (sign_key is None):
        raise InvalidRequest("--bundle and --sign-key go together")
    if bundle_path is not None and not build_id:
        raise InvalidRequest("a bundle names the build it measured: give --build-id")
    key = load_private_key(sign_key) if sign_key is not None else None
    ledger = load_ledger(ledger_path)
    options = ProviderRunOptions(
        url=url,
        token=token,
        tier=tier,
        admin_token=admin_token,
        delete_hook=tuple(shlex.split(delete_hook)) if delete_hook else None,
        timeout=timeout,
    )
    import asyncio  # the event loop only for a run, not for --help (issue 33)

    report = asyncio.run(run_provider(options, ledger))
    if bundle_path is not None and key is not None and build_id:
        issuer = report.discovery.get("issuer") if isinstance(report.discovery, dict) else None
        name = host_name or (issuer.get("name") if isinstance(issuer, dict) else None) or url
        host = HostInfo(str(name), host_version, build_kind, build_id)
        bundle_path.write_text(
            dumps_text(build_bundle(report, host, key), indent=2) + "\n", encoding="utf-8"
        )
    if as_json:
        click.echo(
            dumps_text(
                {
                    "url": url,
                    "claimedTier": tier,
                    "claimHolds": report.claim_holds,
                    "badge": report.badge,
                    "totals": totals(report.rows),
                    "requirements": [r.to_wire() for r in report.rows],
                    "notes": report.notes,
                },
                indent=2,
            )
        )
    else:
        _render(report.rows, report.requirements, f"provider {url}")
        for note in report.notes:
            click.echo(f"note: {note}")
        verdict = "holds" if report.claim_holds else "does NOT hold"
        click.echo(
            f"claimed tier {tier} ({BADGES[tier]}) {verdict}; recommended badge: {report.badge}"
        )
        if bundle_path is not None:
            click.echo(f"signed bundle written to {bundle_path}")
    if not report.claim_holds:
        raise SystemExit(1)


@conformance_group.command("runtime", context_settings={"ignore_unknown_options": True})
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--docs", type=click.Path(exists=True, path_type=Path), default=None)
@click.option("--timeout", type=float, default=30.0, show_default=True)
@_ledger_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def runtime_command(
    as_json: bool,
    docs: Path | None,
    timeout: float,
    ledger_path: Path | None,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND (after --) as the runtime under test in every scenario and judge it."""
    from engram.conformance import badge, load_ledger, run_runtime
    from engram.conformance.internals import tiers_of, totals

    ledger = load_ledger(ledger_path)
    report = run_runtime(list(command), ledger, docs=docs, timeout=timeout)
    failing = [r for r in report.rows if r.result != "executed-pass"]
    if as_json:
        click.echo(
            dumps_text(
                {
                    "command": list(command),
                    "badge": badge(report.rows, tiers_of(report.requirements)),
                    "totals": totals(report.rows),
                    "requirements": [r.to_wire() for r in report.rows],
                    "scenarios": [
                        {"name": run.scenario.name, "exitCode": run.exit_code}
                        for run in report.runs
                    ],
                },
                indent=2,
            )
        )
    else:
        _render(report.rows, report.requirements, "runtime " + shlex.join(command))
        earned = badge(report.rows, tiers_of(report.requirements))
        click.echo(f"recommended badge: {earned}")
    if failing:
        raise SystemExit(1)


@conformance_group.command("verify")
@click.argument("bundle", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--discovery", default=None, help="The host's discovery document: URL or file.")
@click.option("--json", "as_json", is_flag=True)
@_ledger_option
def verify_command(
    bundle: Path, discovery: str | None, as_json: bool, ledger_path: Path | None
) -> None:
    """Recompute a bundle's digests, resolve its key in the host's discovery, apply the rules."""
    from engram.conformance import load_ledger, verify_bundle
    from engram.conformance.internals import read_discovery

    document: Json = None
    problem: str | None = None
    if discovery is not None:
        try:
            document = read_discovery(discovery)
        except (EngramError, OSError) as e:
            problem = getattr(e, "message", None) or str(e)
    report = verify_bundle(
        bundle.read_bytes(), load_ledger(ledger_path), discovery=document, discovery_error=problem
    )
    if as_json:
        click.echo(dumps_text(report.to_wire(), indent=2))
    else:
        click.echo(f"{report.outcome.value}: {report.message}")
        if report.unsigned:
            shown = ", ".join(f"{k}={v!r}" for k, v in report.unsigned.items())
            click.echo(f"unsigned (outside the signature, shown as carried, not verified): {shown}")
        for note in report.notes:
            click.echo(f"note: {note}")
    if not report.ok:
        raise SystemExit(1)


def _render(rows: list[Row], requirements: tuple[Requirement, ...], title: str) -> None:
    from rich.table import Table

    from engram.conformance.internals import BADGES

    console = rich_console()
    by_id = {r.id: r for r in requirements}
    for tier in (1, 2, 3):
        table = Table(title=f"{title}: tier {tier} ({BADGES[tier]})", title_justify="left")
        # On a terminal too narrow for every column, the detail wraps; an id never breaks.
        table.add_column("requirement", no_wrap=True)
        for column in ("party", "result", "detail"):
            table.add_column(column, overflow="fold")
        for row in rows:
            req = by_id.get(row.id)
            if req is None or req.tier != tier:
                continue
            style = _STYLE[row.result]
            table.add_row(
                row.id, req.party or "", f"[{style}]{row.result}[/{style}]", row.detail or ""
            )
        if table.row_count:
            console.print(table)


__all__ = ["conformance_group"]
