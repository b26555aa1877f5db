"""``engram cartridge level prove | verify | revoke | status-list``: provable levels (SPEC §10).

docs/spec/acx-levels.md §9. Each command parses, calls one ``engram.level`` function and renders.
``prove FILE.acx`` and ``verify --cartridge FILE.acx`` bind to the verified cartridge (its ROM
``manifest_hash``, publisher id, cartridge id and signing keyid, :func:`cartridge_binding`); without
a file, ``--rom-digest`` and ``--publisher`` give the same values by hand. The issuer key is
looked up in an ACX trust registry (``--trust-registry``, SPEC §4.4) and/or
``--trusted-issuer-keyid``.

Status lists and DID documents are dereferenced by :func:`engram.level.fetch_location` (http(s)
and file, 16 MiB, no redirects); the verifier fails closed on whatever it raises.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import click

from engram.cli._acx_input import read_verified
from engram.cli._common import trust_registry_option
from engram.cli._level_keys import key_resolver, status_list_option
from engram.core.canonical import JsonObject, canonicalize, parse_object
from engram.core.clock import SystemClock, format_instant, parse_instant
from engram.core.files import read_regular
from engram.core.jsonio import dumps_text
from engram.errors import InvalidRequest
from engram.level.internals import DEFAULT_COOLDOWN, DEFAULT_DRAW, MIN_ENTRIES

if TYPE_CHECKING:
    from engram.level import Solver
    from engram.level.internals import EvidenceLookup
    from engram.trust import TrustRegistry

CLOCK = SystemClock()
MAX_CREDENTIAL_BYTES = 1 << 24
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)
_DIR = click.Path(file_okay=False, path_type=Path)


@click.group("level")
def level_group() -> None:
    """Provable levels: VC 2.0 / Open Badges 3.0 credentials, revocable by status list."""


@dataclass(frozen=True)
class CartridgeBinding:
    rom_digest: str
    publisher_id: str
    subject_id: str
    publisher_keyids: tuple[str, ...]


def cartridge_binding(
    file: Path | None,
    rom_digest: str | None,
    publisher_id: str | None,
    subject: str | None,
    publisher_keyids: tuple[str, ...],
) -> CartridgeBinding:
    """What a level binds to: a verified cartridge's ROM ``manifest_hash``, publisher id,
    cartridge id and signing keyid, or the values given by hand (no file)."""
    if file is not None:
        if rom_digest or publisher_id:
            raise click.UsageError("give FILE.acx or --rom-digest with --publisher, not both")
        cartridge = read_verified(file)
        keyids = publisher_keyids + ((cartridge.keyid,) if cartridge.keyid else ())
        return CartridgeBinding(
            cartridge.manifest_hash,
            cartridge.publisher_id,
            subject or f"urn:acx:cartridge:{cartridge.cartridge_id}",
            keyids,
        )
    if not rom_digest or not publisher_id:
        raise click.UsageError("give FILE.acx, or --rom-digest and --publisher")
    return CartridgeBinding(
        rom_digest,
        publisher_id,
        subject
        or f"urn:acx:cartridge:{publisher_id}/rom-{rom_digest.removeprefix('sha256:')[:16]}",
        publisher_keyids,
    )


def _write(path: Path, value: object) -> None:
    path.write_bytes(canonicalize(value))


@level_group.command("status-list")
@click.option("--id", "list_id", required=True, help="The list's URL (statusListCredential).")
@click.option("--issuer", "issuer", required=True, help="The verifier's DID (did:web:...).")
@click.option("--key", "key_path", required=True, type=_FILE, help="The verifier's private key.")
@click.option("--key-fragment", default="key-1", show_default=True)
@click.option(
    "--length", type=click.IntRange(min=MIN_ENTRIES), default=MIN_ENTRIES, show_default=True
)
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
def status_list_command(
    list_id: str, issuer: str, key_path: Path, key_fragment: str, length: int, out: Path
) -> None:
    """Write a new, signed, all-clear Bitstring Status List credential."""
    from engram.core.keys import load_private_key
    from engram.level import StatusList, status_list_credential
    from engram.level.internals import add_proof

    now = format_instant(CLOCK.now())
    unsigned = status_list_credential(
        list_id=list_id, issuer=issuer, valid_from=now, status_list=StatusList(length - length % 8)
    )
    signed = add_proof(
        unsigned,
        load_private_key(key_path),
        verification_method=f"{issuer}#{key_fragment}",
        created=now,
    )
    _write(out, signed)
    click.echo(f"wrote {out}: {length - length % 8} entries, revocation, issuer {issuer}")


@level_group.command("revoke")
@click.argument("status_list", type=_FILE)
@click.option("--index", type=click.IntRange(min=0), help="The entry to revoke.")
@click.option("--credential", type=_FILE, help="Revoke this credential's entry.")
@click.option("--key", "key_path", required=True, type=_FILE, help="The list issuer's private key.")
@click.option(
    "-o", "--out", type=click.Path(dir_okay=False, path_type=Path), help="Default: in place."
)
def revoke_command(
    status_list: Path, index: int | None, credential: Path | None, key_path: Path, out: Path | None
) -> None:
    """Set a revocation bit (irreversibly) and re-sign the list."""
    from engram.core.keys import load_private_key
    from engram.level import set_entry, static_resolver
    from engram.level.internals import MAX_FETCH_BYTES, verify_proof

    data = read_regular(status_list, limit=MAX_FETCH_BYTES, what="status list")
    document = parse_object(data, what=str(status_list), error=InvalidRequest)
    if (index is None) == (credential is None):
        raise click.UsageError("give exactly one of --index and --credential")
    if credential is not None:
        entry = (
            parse_object(
                read_regular(credential, what="credential"),
                what=str(credential),
                error=InvalidRequest,
            ).get("credentialStatus")
            or {}
        )
        # A member of the wrong type is bad input, not an AttributeError traceback.
        if not isinstance(entry, dict):
            raise InvalidRequest(f"{credential}: credentialStatus is not a JSON object")
        if entry.get("statusListCredential") != document.get("id"):
            raise InvalidRequest(
                f"{credential} names another status list ({entry.get('statusListCredential')})"
            )
        index = int(str(entry.get("statusListIndex")))
    assert index is not None
    proof = document.get("proof")
    method = proof.get("verificationMethod") if isinstance(proof, dict) else None
    if not isinstance(method, str):
        raise InvalidRequest(f"{status_list} is not a signed status list")
    key = load_private_key(key_path)
    # The key must be the one that signed the list: a list re-signed by another key would fail
    # every relying party's check (STATUS_VERIFICATION_ERROR), so refuse before writing.
    verify_proof(document, static_resolver({method: key.public_key()}))
    signed = set_entry(
        document, index, key, verification_method=method, created=format_instant(CLOCK.now())
    )
    _write(out or status_list, signed)
    click.echo(f"revoked entry {index} of {document.get('id')}")


def _solver(
    solver: str | None, demo_solver: bool, competence: float, timeout: float, file: Path | None
) -> Solver:
    """The command that re-runs the cartridge; the simulated solver only when asked by name
    (a demo: nothing from the cartridge runs, and the credential it earns says so)."""
    from engram.level import CommandSolver, ReferenceSolver

    if demo_solver:
        if solver is not None:
            raise click.UsageError("give --solver COMMAND or --demo-solver, not both")
        return ReferenceSolver(competence)
    if solver is None:
        raise click.UsageError(
            "a level is issued only from a real run: give --solver COMMAND (run once per task "
            "with the cartridge in $ACX_CARTRIDGE), or --demo-solver for a simulated demo level"
        )
    # The command finds the cartridge it re-runs in ACX_CARTRIDGE (absolute: it runs elsewhere).
    extra = {"ACX_CARTRIDGE": str(file.resolve())} if file is not None else {}
    return CommandSolver(shlex.split(solver), timeout_sec=timeout, extra_env=extra)


@level_group.command("prove")
@click.argument("file", type=_FILE, required=False)
@click.option("--rom-digest", help="Without FILE: the ROM manifest_hash (sha256:...).")
@click.option("--publisher", "publisher_id", help="Without FILE: the publisher id.")
@click.option(
    "--publisher-keyid", "publisher_keyids", multiple=True, help="The publisher's key id."
)
@click.option(
    "--subject", help="credentialSubject.id (default: urn:acx:cartridge:<publisher>/rom-...)."
)
@click.option("--verifier-key", required=True, type=_FILE, help="The verifier's private key.")
@click.option("--verifier-did", required=True, help="The verifier's did:web.")
@click.option("--status-list-url", required=True, help="Where the verifier's status list lives.")
@click.option(
    "--ledger", "ledger_path", required=True, type=click.Path(dir_okay=False, path_type=Path)
)
@click.option("--benchmark", type=_FILE, help="A benchmark file (default: the built-in demo).")
@click.option("--benchmark-key", type=_FILE, help="The 32-byte key of a sealed benchmark.")
@click.option(
    "--solver", help="Command run per task, the cartridge in $ACX_CARTRIDGE (the real run)."
)
@click.option(
    "--demo-solver",
    is_flag=True,
    help="Play the built-in simulated solver instead (a demo: nothing from the cartridge runs; "
    "the credential says so).",
)
@click.option("--solver-timeout", type=click.FloatRange(min=0.1), default=300.0, show_default=True)
@click.option(
    "--competence", type=float, default=33.0, show_default=True, help="--demo-solver only."
)
@click.option("--draw", type=click.IntRange(min=1), default=DEFAULT_DRAW, show_default=True)
@click.option(
    "--cooldown-hours",
    type=click.FloatRange(min=0),
    default=DEFAULT_COOLDOWN.total_seconds() / 3600,
    show_default=True,
)
@click.option("--evidence-dir", type=_DIR, help="Write the DSSE evidence envelopes here.")
@click.option("--evidence-base", help="URL prefix under which the evidence folder is published.")
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
def prove_command(
    file: Path | None, rom_digest: str | None, publisher_id: str | None,
    publisher_keyids: tuple[str, ...], subject: str | None,
    verifier_key: Path, verifier_did: str, status_list_url: str, ledger_path: Path,
    benchmark: Path | None, benchmark_key: Path | None, solver: str | None, demo_solver: bool,
    solver_timeout: float, competence: float, draw: int, cooldown_hours: float,
    evidence_dir: Path | None, evidence_base: str | None, out: Path,
) -> None:  # fmt: skip
    """Re-run the ROM on a drawn held-out subset; issue a level credential if the gate passes."""
    from engram.core.keys import load_private_key
    from engram.level import Ledger, Verifier, demo_benchmark, load_benchmark, prove_level

    chosen = _solver(solver, demo_solver, competence, solver_timeout, file)
    binding = cartridge_binding(file, rom_digest, publisher_id, subject, publisher_keyids)
    bench = (
        load_benchmark(
            benchmark.read_bytes(), key=benchmark_key.read_bytes() if benchmark_key else None
        )
        if benchmark
        else demo_benchmark()
    )
    result = prove_level(
        rom_digest=binding.rom_digest,
        publisher_id=binding.publisher_id,
        subject_id=binding.subject_id,
        publisher_keyids=binding.publisher_keyids,
        benchmark=bench,
        solver=chosen,
        verifier=Verifier(verifier_did, load_private_key(verifier_key)),
        ledger=Ledger(ledger_path),
        now=CLOCK.now(),
        status_list_url=status_list_url,
        draw_count=draw,
        cooldown=timedelta(hours=cooldown_hours),
        evidence_base=evidence_base,
    )
    if evidence_dir is not None:
        evidence_dir.mkdir(parents=True, exist_ok=True)
        for item in result.evidence:
            (evidence_dir / item.file_name).write_bytes(item.envelope_bytes)
    r = result.rating
    click.echo(
        f"benchmark {bench.coordinate}: {len(bench.tasks)} tasks,"
        f" held-out slice {bench.held_out_slice_digest}"
    )
    click.echo(
        f"mu={r.mu:.2f} sigma={r.sigma:.3f} games={r.games} passRate={100 * r.pass_rate:.0f}% "
        f"R={r.conservative:.2f} => acxLevel={result.level} tier={result.tier}"
    )
    if result.credential is None:
        click.echo("NOT ISSUED: " + "; ".join(result.failures))
        raise click.exceptions.Exit(1)
    _write(out, result.credential)
    if result.simulated:
        click.echo(f"ISSUED A DEMO LEVEL (simulated solver; the credential says so): wrote {out}")
    else:
        click.echo(f"ISSUED: wrote {out}")


def _published(
    registry: TrustRegistry | None, trusted: tuple[str, ...], credential: JsonObject, now: datetime
) -> frozenset[str] | None:
    """The published issuer key ids: the trust registry's (for this issuer) and any given."""
    from engram.level.internals import registry_issuer_keys

    if registry is None and not trusted:
        return None
    keys = set(trusted)
    if registry is not None:
        issuer = credential.get("issuer")
        issuer_id = issuer.get("id") if isinstance(issuer, dict) else issuer
        proof = credential.get("proof")
        created = proof.get("created") if isinstance(proof, dict) else None
        try:
            signed_at = parse_instant(created) if isinstance(created, str) else now
        except InvalidRequest:
            signed_at = now
        keys |= registry_issuer_keys(
            registry,
            issuer_id=str(issuer_id),
            signed_at=signed_at,
            now=now,
        )
    return frozenset(keys)


def _evidence_lookup(folder: Path | None) -> EvidenceLookup:
    from engram.level.internals import MAX_FETCH_BYTES, envelope_file_name

    def lookup(link: str) -> bytes | None:
        if folder is None:
            return None
        name = envelope_file_name(link)
        path = folder / name if name else None
        if path is None or not path.is_file():
            return None
        return read_regular(path, limit=MAX_FETCH_BYTES, what="evidence")

    return lookup


@level_group.command("verify")
@click.argument("credential", type=_FILE)
@click.option("--cartridge", type=_FILE, help="The .acx the level must be bound to (verified).")
@click.option("--rom-digest", help="Without --cartridge: the ROM manifest_hash to bind to.")
@click.option("--publisher", "publisher_id", help="The cartridge's publisher id.")
@click.option("--publisher-keyid", "publisher_keyids", multiple=True)
@click.option(
    "--issuer-key",
    "issuer_key",
    help="Issuer public key: PEM file or z6Mk multikey.",
)
@click.option("--did-document", type=_FILE, help="The issuer's DID document (did:web).")
@trust_registry_option
@click.option("--trusted-issuer-keyid", "trusted", multiple=True, help="A published issuer key id.")
@status_list_option("The status list credential (file or URL); default: its URL.")
@click.option(
    "--evidence", "evidence_dir", type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option("--json", "as_json", is_flag=True)
def verify_command(
    credential: Path, cartridge: Path | None, rom_digest: str | None, publisher_id: str | None,
    publisher_keyids: tuple[str, ...], issuer_key: str | None, did_document: Path | None,
    trust_registry: TrustRegistry | None, trusted: tuple[str, ...], status_list: str | None,
    evidence_dir: Path | None, as_json: bool,
) -> None:  # fmt: skip
    """Check a level credential; report every departure and check; exit 1 unless verified."""
    from engram.level import verify_level
    from engram.level.internals import pinned_fetch

    data = read_regular(credential, limit=MAX_CREDENTIAL_BYTES, what="credential")
    try:
        document = parse_object(data, what=str(credential), error=InvalidRequest)
    except InvalidRequest:
        document = {}
    now = CLOCK.now()
    if cartridge is not None:
        if rom_digest:
            raise click.UsageError("give --cartridge or --rom-digest, not both")
        bound = cartridge_binding(cartridge, None, None, None, publisher_keyids)
        rom_digest, publisher_id, publisher_keyids = (
            bound.rom_digest, publisher_id or bound.publisher_id, bound.publisher_keyids,
        )  # fmt: skip
    published = _published(trust_registry, trusted, document, now)
    report = verify_level(
        data,
        resolve=key_resolver(issuer_key, did_document, document),
        now=now,
        rom_digest=rom_digest,
        publisher_id=publisher_id,
        publisher_keyids=publisher_keyids,
        published_issuer_keys=published,
        status_fetch=pinned_fetch(status_list),
        evidence=_evidence_lookup(evidence_dir),
    )
    if as_json:
        click.echo(dumps_text(report.to_wire(), indent=2))
    else:
        marks = {True: "ok  ", False: "FAIL", None: "--  "}
        for finding in report.findings:
            click.echo(f"{marks[finding.ok]} {finding.check:<13} {finding.path}: {finding.message}")
        verdict = "VERIFIED" if report.verified else "NOT VERIFIED"
        if report.revoked:
            verdict += " (REVOKED)"
        click.echo(f"{verdict}; issuer trusted: {report.trusted}")
        if report.simulated:
            click.echo("DEMO LEVEL: the built-in simulated solver played it; it measures nothing")
    if not report.verified:
        raise click.exceptions.Exit(1)


COMMAND = level_group
