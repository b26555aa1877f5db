"""``engram record | recall | distill | outcome | complete | status``: the memory engine's CLI.

engram.ote.v1 & MCP contract (Part V, Plate 03, §3.2). The seat manifest comes from ``--ote FILE``,
else ``$ENGRAM_OTE``, else the nearest ``.engram/ote.toml`` at or above the working directory, else
the default seat ``engram serve`` serves (``_seat.resolve_seat``); the database from
``--database`` (see ``engram db``); remote retrieval endpoints not named in the manifest from
``$THALAMUS_URL`` (there is no default URL). docs/spec/memory-cli.md.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from engram.cli._app import cli
from engram.cli._common import database_option
from engram.cli._conversation_io import RecordedChat, conversation_options, told_apart
from engram.cli._seat import kind_required, ote_option, resolve_seat, seat_engine, subject_option
from engram.cli._settings import settings
from engram.core.canonical import Json, parse_strict
from engram.core.clock import parse_instant
from engram.core.jsonio import dumps_text
from engram.errors import Busy, CanonicalJsonError, InputError, InvalidRequest
from engram.memory.internals import ATTESTATION_NAMESPACE

# The memory engine (numpy, tantivy) is imported inside the functions that run it: `engram
# recall --help` and the other commands' help load none of it (issue 33: every COMMAND --help
# within 3x `python -c pass`), and a cold `engram recall` loads only what recall uses (issue 16).

if TYPE_CHECKING:
    from datetime import datetime

    from rich.console import Console
    from rich.progress import Progress

    from engram.memory import MemoryEngine, RecordInput, RecordResult

F = TypeVar("F", bound=Callable[..., Any])


def emit(value: object, as_json: bool, human: Callable[[], None]) -> None:
    if as_json:
        click.echo(dumps_text(value, indent=2))
    else:
        human()


MAX_LINE_BYTES = 1 << 20  # one JSON line of --from / --batch (a memory's text is <= 100k chars)
BATCH = 5_000  # memories per transaction in record --from (docs/spec/memory-cli.md)
BUSY_RETRIES = 5


def _line_error(path: Path, number: int, e: InputError) -> InvalidRequest:
    """``FILE:LINE:COLUMN: reason`` once (not "not I-JSON: not I-JSON: ...")."""
    if isinstance(e, CanonicalJsonError) and isinstance(e.position, int):
        detail = e.message.split(f" at {e.position}", 1)[-1]  # " (…)" or ""
        return InvalidRequest(f"{path}:{number}:{e.position + 1}: not I-JSON: {e.reason}{detail}")
    return InvalidRequest(f"{path}:{number}: {e.message}")


def _jsonl(path: Path, spool: IO[bytes] | None = None) -> Iterator[tuple[int, Json]]:
    """(line number, value) of each non-blank JSON line, read one line at a time.

    A line longer than MAX_LINE_BYTES is refused without reading it into memory; ``spool``
    receives every byte read (stdin cannot be read twice).
    """
    with path.open("rb") if str(path) != "-" else contextlib.nullcontext(sys.stdin.buffer) as f:
        for number in itertools.count(1):
            line = f.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                raise InvalidRequest(
                    f"{path}:{number}: line is longer than {MAX_LINE_BYTES:,} bytes"
                )
            if spool is not None:
                spool.write(line)
            if not line.strip():
                continue
            try:
                value = parse_strict(line.rstrip(b"\r\n"))
            except InputError as e:
                raise _line_error(path, number, e) from e
            yield number, value


def _record_inputs(path: Path, spool: IO[bytes] | None = None) -> Iterator[tuple[str, RecordInput]]:
    from engram.memory import RecordInput

    for number, value in _jsonl(path, spool):
        where = f"{path}:{number}"
        yield where, RecordInput.from_wire(value, where)


def _record_file(engine: MemoryEngine, source: Path, bar: Progress | None) -> list[RecordResult]:
    """``record --from``: check every line first (nothing is written if one is bad), then
    write in transactions of BATCH memories; a batch that finds the store busy is retried."""
    from engram.memory import record_many
    from engram.memory.internals import check_record

    spool: IO[bytes] | None = None
    if str(source) == "-":
        spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed in the finally below
    task = bar.add_task("checking", total=None) if bar else None
    total = 0
    for where, item in _record_inputs(source, spool):
        check_record(engine, item, where)
        total += 1
        if bar and task is not None and total % 1000 == 0:
            bar.update(task, completed=total)
    readable = source
    if spool is not None:
        spool.flush()
        readable = Path(f"/dev/fd/{spool.fileno()}")
        spool.seek(0)
    if bar and task is not None:
        bar.update(task, description="recording", total=total, completed=0)
        bar.refresh()  # every phase is drawn at least once, however short
    results: list[RecordResult] = []
    batch: list[tuple[str, RecordInput]] = []

    def flush() -> None:
        for attempt in range(BUSY_RETRIES + 1):
            try:
                results.extend(
                    record_many(
                        engine,
                        [i for _, i in batch],
                        where=[w for w, _ in batch],
                        refresh=False,
                    )
                )
                break
            except Busy:
                if attempt == BUSY_RETRIES:
                    raise
                time.sleep(0.5 * (attempt + 1))
        batch.clear()
        if bar and task is not None:
            bar.update(task, completed=len(results))  # advances only once a batch committed
            bar.refresh()

    try:
        for pair in _record_inputs(readable):
            batch.append(pair)
            if len(batch) == BATCH:
                flush()
        if batch:
            flush()
    finally:
        if spool is not None:
            spool.close()
    if bar and task is not None:
        bar.update(task, description="updating the index")
        bar.refresh()
    engine.refresh_index()
    return results


@cli.command("record")
@click.argument("text", required=False)
@click.option("--kind", default=None, help="One of the seat's allowed_kinds.")
@click.option("--ring", default="M4", show_default=True, help="M2, M3, M4 or a mounted ring id.")
@click.option("--thread", default="", help="Conversation or episode this memory belongs to.")
@click.option("--provenance", default=None, help="A JSON object stored with the memory.")
@click.option(
    "--from",
    "source",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="JSON lines {text, kind, ring?, thread?, provenance?}: every line is checked first, "
    f"then written {BATCH:,} per transaction (a re-run skips what is already there); or a "
    "conversation: JSON lines of OpenAI chat messages, or a chat export (see --format).",
)
@conversation_options
@click.option(
    "--supersedes",
    default=None,
    metavar="ID",
    help="TEXT replaces this memory: recall serves the new one, the old stays in history.",
)
@click.option("--json", "as_json", is_flag=True)
@ote_option
@database_option
@subject_option
def record_command(
    text: str | None,
    kind: str | None,
    ring: str,
    thread: str,
    provenance: str | None,
    source: Path | None,
    fmt: str,
    llm_model: str | None,
    llm_endpoint: str | None,
    supersedes: str | None,
    as_json: bool,
    ote: Path | None,
    database: str | None,
    subject: str | None,
) -> None:
    """Record one memory (TEXT --kind K), many (--from FILE.jsonl) or a chat (--from CHAT.json).

    A chat (OpenAI messages, a JSON array or JSON lines) becomes one memory per turn."""
    from engram.memory import RecordInput, record_many

    if (text is None) == (source is None):
        raise InvalidRequest("give either TEXT (with --kind) or --from FILE.jsonl")
    if supersedes is not None and source is not None:
        raise InvalidRequest("--supersedes goes with TEXT, not with --from")
    items: list[RecordInput] = []
    if source is None:
        if kind is None:
            raise kind_required(ote)
        prov = parse_strict(provenance) if provenance else {}
        items = [
            RecordInput.from_wire(
                {"text": text, "kind": kind, "ring": ring, "thread": thread, "provenance": prov}
            )
        ]
    with contextlib.ExitStack() as spooled:
        if source is not None:
            path, fmt = told_apart(spooled, source, fmt)
            if fmt != "records":
                conversation = RecordedChat(path, source, fmt, thread, ring, kind)
                conversation.run(ote, database, subject, llm_model, llm_endpoint, as_json)
                return
            source = path
        if llm_model is not None:
            raise InvalidRequest("--llm-model goes with --from a conversation (messages or chat)")
        with seat_engine(ote, database, subject=subject) as engine:
            console = _stderr_console() if source is not None and not as_json else None
            if source is not None and console is not None and console.is_terminal:
                from rich.progress import Progress

                # Only on a terminal: a bar redrawn into a log or a pipe is noise.
                with Progress(transient=True, console=console) as bar:
                    results = _record_file(engine, source, bar)
            elif source is not None:
                results = _record_file(engine, source, None)
            elif supersedes is not None:
                from engram.cli._seat import actor
                from engram.memory import supersede

                replaced = supersede(engine, supersedes, items[0], actor=actor())
                results = [replaced.record]
            else:
                results = record_many(engine, items)
    if as_json:
        click.echo(
            dumps_text([r.to_wire() for r in results] if source else results[0].to_wire(), indent=2)
        )
        return
    created = sum(r.created for r in results)
    if source is None:
        r = results[0]
        click.echo(
            f"{'recorded' if r.created else 'already present'} {r.memory.id} in "
            f"{r.memory.ring} {r.memory.ring_id} (dense: {r.dense})"
            + (f", superseding {supersedes}" if supersedes else "")
        )
    else:
        click.echo(
            f"recorded {created} new of {len(results)} memories "
            f"(dense: {results[0].dense if results else 'n/a'})"
        )


def parse_as_of(text: str) -> datetime:
    """``--as-of``: an RFC 3339 instant with its offset (a time without one is ambiguous)."""
    try:
        return parse_instant(text)
    except InvalidRequest as e:
        raise InvalidRequest(
            f"--as-of: expected an RFC 3339 instant such as 2026-03-01T12:00:00Z, got {text[:60]!r}"
        ) from e


def _stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


@cli.command("recall")
@click.argument("query", required=False)
@click.option("--k", "k", type=int, default=10, show_default=True)
@click.option("--ring", "rings", multiple=True, help="Only these mounted rings (repeatable).")
@click.option(
    "--batch",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="JSON lines of queries (a string or {query, k}); prints one JSON line each.",
)
@click.option(
    "--as-of",
    "as_of",
    default=None,
    metavar="INSTANT",
    help="Answer from what was current then (RFC 3339, e.g. 2026-03-01T12:00:00Z).",
)
@click.option("--json", "as_json", is_flag=True)
@ote_option
@database_option
@subject_option
def recall_command(
    query: str | None,
    k: int,
    rings: tuple[str, ...],
    batch: Path | None,
    as_of: str | None,
    as_json: bool,
    ote: Path | None,
    database: str | None,
    subject: str | None,
) -> None:
    """Recall the best memories for QUERY within the seat's token budget."""
    from engram.cli._seat import NO_HIT_HINT
    from engram.memory import recall

    if (query is None) == (batch is None):
        raise InvalidRequest("give either QUERY or --batch FILE.jsonl")
    instant = parse_as_of(as_of) if as_of is not None else None
    with seat_engine(ote, database, subject=subject) as engine:
        if batch is not None:
            for number, item in _jsonl(batch):
                q, qk = (
                    (item, k)
                    if isinstance(item, str)
                    else (
                        item.get("query") if isinstance(item, dict) else None,
                        item.get("k", k) if isinstance(item, dict) else k,
                    )
                )
                if not isinstance(q, str):
                    raise InvalidRequest(f"{batch}:{number}: expected a string or {{query, k}}")
                if isinstance(qk, bool) or not isinstance(qk, int):  # recall's own message
                    raise InvalidRequest(
                        f"{batch}:{number}: k: expected an integer from 1 to 1000, got {qk!r}"
                    )
                try:
                    result = recall(engine, q, qk, rings=rings or None, as_of=instant)
                except InvalidRequest as e:
                    raise InvalidRequest(f"{batch}:{number}: {e.message}") from e
                click.echo(dumps_text(result.to_wire()))
            return
        assert query is not None
        result = recall(engine, query, k, rings=rings or None, as_of=instant)

    def human() -> None:
        for rank, hit in enumerate(result.hits, start=1):
            m = hit.memory
            click.echo(f"{rank:2}. [{m.ring} {m.kind} {m.status} {m.mean:.2f}] {m.text}")
            click.echo(f"    {m.id}  score {hit.score:.3f}")
        stages = ", ".join(f"{s}: {v}" for s, v in result.stages.items())
        click.echo(
            f"{len(result.hits)} hit(s), {result.used_tokens}/{result.budget_tokens} "
            f"tokens; {stages}"
        )
        if not result.hits and subject is None:  # a hint, on stderr: no count, no content
            click.echo(NO_HIT_HINT, err=True)

    emit(result.to_wire(), as_json, human)


@cli.command("distill")
@click.argument("episodes", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--kind",
    type=click.Choice(["known_process", "invariant"]),
    default="known_process",
    show_default=True,
)
@click.option("--ring", default="M4", show_default=True)
@click.option("--llm-model", default=None, help="Use an OpenAI-compatible chat model.")
@click.option("--llm-endpoint", default=None, help="Its base URL (default: $THALAMUS_URL).")
@click.option("--json", "as_json", is_flag=True)
@ote_option
@database_option
@subject_option
def distill_command(
    episodes: tuple[Path, ...],
    kind: str,
    ring: str,
    llm_model: str | None,
    llm_endpoint: str | None,
    as_json: bool,
    ote: Path | None,
    database: str | None,
    subject: str | None,
) -> None:
    """Distill debugging episodes (files, or stdin) into a known_process or invariant memory."""
    from engram.memory import ChatDistiller, distill

    texts = [p.read_text(encoding="utf-8") for p in episodes] or [sys.stdin.read()]
    llm = None
    if llm_model:
        endpoint = llm_endpoint or settings().thalamus_url
        if not endpoint:
            raise InvalidRequest("--llm-model needs --llm-endpoint or THALAMUS_URL (no default)")
        llm = ChatDistiller(endpoint, llm_model)
    with seat_engine(ote, database, subject=subject) as engine:
        result = distill(engine, texts, kind, ring, llm=llm)
    emit(
        result.to_wire(),
        as_json,
        lambda: click.echo(
            f"{'recorded' if result.created else 'already present'} {result.memory.id} "
            f"({result.memory.kind}, {result.memory.provenance.get('distiller')}):\n"
            f"{result.memory.text}"
        ),
    )


def _signature_text(value: str) -> str:
    if value.lstrip().startswith("-----BEGIN SSH SIGNATURE-----"):
        return value
    path = Path(value)
    try:
        return path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidRequest(f"--attestation: cannot read signature file {value}: {e}") from e


@cli.command("outcome")
@click.argument("memory_id")
@click.argument("signal")
@click.option("--decision-id", required=True, help="Makes a retried verdict one event.")
@click.option("--weight", type=float, default=None, help="Δ size (model-judged: capped 0.30).")
@click.option(
    "--attestation",
    default=None,
    help="ssh-keygen -Y sign signature (file or armored text) for sealed_*/human_*.",
)
@click.option("--principal", default=None, help="Require this allowed_signers principal.")
@click.option(
    "--print-message",
    is_flag=True,
    help=f"Print the bytes to sign (namespace {ATTESTATION_NAMESPACE}) and exit.",
)
@click.option("--json", "as_json", is_flag=True)
@ote_option
@database_option
@subject_option
def outcome_command(
    memory_id: str,
    signal: str,
    decision_id: str,
    weight: float | None,
    attestation: str | None,
    principal: str | None,
    print_message: bool,
    as_json: bool,
    ote: Path | None,
    database: str | None,
    subject: str | None,
) -> None:
    """Apply an outcome SIGNAL to MEMORY_ID's Beta posterior."""
    from engram.memory import outcome
    from engram.memory.internals import attestation_message, signal_weight

    if print_message:
        sys.stdout.buffer.write(
            attestation_message(memory_id, decision_id, signal, signal_weight(signal, weight))
        )
        sys.stdout.buffer.flush()
        return
    with seat_engine(ote, database, subject=subject) as engine:
        result = outcome(
            engine,
            memory_id,
            signal,
            decision_id,
            weight=weight,
            attestation=_signature_text(attestation) if attestation else None,
            principal=principal,
            channel="cli",
        )
    emit(
        result.to_wire(),
        as_json,
        lambda: click.echo(
            f"{'duplicate decision, unchanged' if result.duplicate else 'recorded'}: "
            f"{result.signal} "
            f"(oracle {result.oracle}) Δα={result.delta_alpha} Δβ={result.delta_beta} -> "
            f"Beta({result.alpha:g}, {result.beta:g})"
            + (f", attested by {result.principal}" if result.attested else "")
            + (", tagged for a sealed re-run" if result.reverify else "")
        ),
    )


@cli.command("complete")
@click.argument("memory_id", required=False)
@click.option("--dry-run", is_flag=True, help="Show what the rule decides; change nothing.")
@click.option("--verbose", is_flag=True, help="List every memory's verdict, not a summary.")
@click.option("--json", "as_json", is_flag=True)
@ote_option
@database_option
@subject_option
def complete_command(
    memory_id: str | None,
    dry_run: bool,
    verbose: bool,
    as_json: bool,
    ote: Path | None,
    database: str | None,
    subject: str | None,
) -> None:
    """Apply the graduation rule to MEMORY_ID, or to every memory in the mounted rings."""
    from engram.memory import complete

    with seat_engine(ote, database, subject=subject) as engine:
        result = complete(engine, memory_id, apply=not dry_run)

    def human() -> None:
        click.echo(f"graduation: {result.graduation}{' (dry run)' if dry_run else ''}")
        changes = [v for v in result.verdicts if v.status_before != v.status_after]
        shown = result.verdicts if verbose or memory_id is not None else changes
        if not verbose and memory_id is None:
            c = result.summary()
            click.echo(
                f"{c['memories']} memories: {c['changed']} changed; now {c['graduated']} "
                f"graduated, {c['candidate']} candidates, {c['held_import']} held imports"
                + (" (--verbose lists every verdict)" if c["memories"] > len(changes) else "")
            )
        for v in shown:
            change = (
                v.status_after
                if v.status_before == v.status_after
                else f"{v.status_before} -> {v.status_after}"
            )
            click.echo(
                f"  {v.memory_id}: {change} (full lcb {v.full_lcb:.3f} n={v.full_samples:g}"
                f", strong lcb {v.strong_lcb:.3f} n={v.strong_samples:g}) {v.reason}"
            )

    emit(result.to_wire(), as_json, human)


@cli.command("status")
@click.option("--json", "as_json", is_flag=True)
@ote_option
@database_option
@subject_option
def status_command(
    as_json: bool, ote: Path | None, database: str | None, subject: str | None
) -> None:
    """Ring counts, graduation, attestation anchor, oracle split and vector coverage."""
    from engram.memory import status

    seat = resolve_seat(ote)
    with seat_engine(ote, database, seat, subject) as engine:
        report = status(engine)

    def human() -> None:
        click.echo(f"seat: {report.seat_id} (manifest {seat.path}, from {seat.origin})")
        for r in report.rings:
            click.echo(
                f"  {r['ring']} {r['ring_id']} ({r['access']}, {r['budget_share_pct']}%): "
                f"{r['memories']} memories, {r['graduated']} graduated, "
                f"{r['held_imports']} held imports, {r['forgotten']} forgotten"
            )
        click.echo(f"graduation: {report.graduation}")
        a = report.attestation
        if a.get("configured"):
            fingerprints = a.get("key_fingerprints")
            keys = ", ".join(map(str, fingerprints)) if isinstance(fingerprints, list) else ""
            click.echo(
                f"attestation: anchor {a.get('anchor')} "
                f"sha256 {a.get('sha256', '(missing)')} "
                f"keys {keys or '(none)'}"
            )
        else:
            click.echo("attestation: no [attestation] anchor configured")
        split = ", ".join(f"{k}={v}" for k, v in sorted(report.oracle_split.items())) or "none"
        click.echo(f"oracle_split: {split}")
        click.echo(f"grandfathered_until_apply: {report.grandfathered_until_apply}")
        cov = report.vector_coverage
        engines = cov.get("dense")
        dense = (
            ", ".join(f"{k} {v}" for k, v in engines.items()) if isinstance(engines, dict) else ""
        )
        dense = dense or "none"
        click.echo(
            f"vector coverage: local-hash-128 {cov['local-hash-128']}/{cov['memories']}; "
            f"dense: {dense}"
        )

    emit({**report.to_wire(), "seat": seat.to_wire()}, as_json, human)
