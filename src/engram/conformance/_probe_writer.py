"""Tier 2 (Writer) probes: corrections stay pending, ``runtime_id`` is required, the diff
carries tombstones.

Spec: Engram v0.1 Conformance §"Tier 2 — Writer" (p2.*). Behaviour is judged without engram's field
names (docs/spec/conformance-bundle.md, "Corrections" and "Tombstones"):

- a probe correction carries a fresh marker; "not applied" means the marker appears nowhere in
  the next export outside its ``corrections`` list (where pending proposals are listed) and the
  target belief's RFC 8785 bytes are unchanged;
- tombstones are read in every shape the runtime understands (:mod:`engram.core.context_wire`),
  and a diff in no documented shape fails with the diff shown;
- a belief is deleted only through the operator's means (``--admin-token`` or ``--delete-hook``),
  and probe corrections are rejected again when the admin token allows it.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from datetime import timedelta

from engram.conformance import _envelope as env
from engram.conformance._http import Exchange
from engram.conformance._probe import (
    ADMIN_TOKEN,
    BELIEF_ID_PLACEHOLDER,
    RUNTIME_ID,
    ProbeRun,
    admin_add,
    admin_delete,
    beliefs,
    error_code,
    identified,
    refuse_token,
)
from engram.conformance._probe_full import signed
from engram.core.canonical import Json, JsonObject, canonicalize
from engram.core.clock import format_instant
from engram.core.context_wire import PROBE_LABEL, DiffShapeError, belief_id, deleted_ids
from engram.core.jsonio import dumps_text

HOOK_OUTPUT_LIMIT = 2000
"""Characters of the delete hook's stdout and stderr shown when it fails."""

# A belief id comes from the provider under test: only a conservative set of characters is
# ever put into the operator's command line (docs/spec/conformance-bundle.md, "--delete-hook").
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:@/+=~%,-]{1,200}$")
_SHOWN_DIFF = 600


async def corrections(run: ProbeRun) -> None:
    """Post a probe without ``runtime_id`` (must be 400) and one with it (must be pending), then
    check the next export shows neither."""
    slugs = ("p2.correct-pending", "p2.correction-not-applied", "p2.runtime-id-required")
    export = run.observed.export or {}
    if not beliefs(export):
        for slug in slugs:
            run.skip(slug, "correction", "the subject behind the token holds no belief at all")
        return
    targets = identified(export)
    # With no belief naming an id, the probe targets a fresh id: a provider that applies it at
    # once shows the marker anyway, which is what is judged.
    target_id, target = (
        targets[0] if targets else (f"engram-conformance-{secrets.token_hex(4)}", None)
    )
    missing, missing_marker = run.probe_correction(target_id, runtime_id=False)
    got = await run.client.post("/v1/context/correct", missing, token=run.options.token)
    code = error_code(got)
    run.check(
        "p2.runtime-id-required",
        "correction",
        got.status == 400 and code == "invalid_request",
        f"correction without runtime_id: HTTP {got.status} code {code!r}",
    )
    probes = [_correction_id(got)]
    proposal, marker = run.probe_correction(target_id)
    got = await run.client.post("/v1/context/correct", proposal, token=run.options.token)
    status = got.body.get("status") if isinstance(got.body, dict) else None
    if got.status == 403:
        reason = "the token is not permitted to propose corrections (403 forbidden)"
        run.skip("p2.correct-pending", "correction", reason)
        run.skip("p2.correction-not-applied", "correction", reason)
        return
    probes.append(_correction_id(got))
    run.observed.correction_answers["pending"] = run.check(
        "p2.correct-pending",
        "correction",
        got.ok and status == "pending_user_confirmation",
        f"POST /v1/context/correct: HTTP {got.status} status {status!r}",
    )
    after = await run.client.get("/v1/context", token=run.options.token)
    _judge_not_applied(run, after, target_id, target, (marker, missing_marker))
    await _withdraw(run, [p for p in probes if p is not None])


def _judge_not_applied(
    run: ProbeRun,
    after: Exchange,
    target_id: str,
    target: JsonObject | None,
    markers: tuple[str, ...],
) -> None:
    rid = "p2.correction-not-applied"
    body = after.body if isinstance(after.body, dict) else {}
    run.check(
        rid,
        "correction",
        after.status == 200 and bool(body),
        f"the next export: HTTP {after.status}",
    )
    # Pending proposals may be listed in the export's corrections; anywhere else the marker
    # means the proposal became part of what the provider serves as authoritative.
    served = canonicalize({k: v for k, v in body.items() if k != "corrections"}).decode("utf-8")
    shown = [m for m in markers if m in served]
    run.check(
        rid,
        "correction",
        not shown,
        f"the proposed value ({shown[0] if shown else ''}) is served before the user confirmed it",
    )
    if target is None:
        return
    now = next((b for b in beliefs(body) if belief_id(b) == target_id), None)
    run.check(
        rid,
        "correction",
        now is not None and canonicalize(now) == canonicalize(target),
        f"after a pending correction belief {target_id} is "
        + ("gone from the export" if now is None else "no longer the same belief object"),
    )


def _correction_id(got: Exchange) -> str | None:
    if not got.ok or not isinstance(got.body, dict):
        return None
    for name in ("id", "correction_id"):
        value = got.body.get(name)
        if isinstance(value, str) and value:
            return value
    return None


async def _withdraw(run: ProbeRun, correction_ids: list[str]) -> None:
    """Reject the probe corrections when the host gave the means; otherwise say they wait."""
    if not correction_ids:
        return
    if run.options.admin_token is None:
        run.notes.append(
            f"probe correction(s) {', '.join(correction_ids)} stay pending on the host, labelled "
            f"{PROBE_LABEL!r} (runtime_id {RUNTIME_ID!r}): reject them, or give --admin-token"
        )
        return
    for cid in correction_ids:
        got = await run.client.post(
            f"/v1/corrections/{cid}/reject", {}, token=run.options.admin_token, judged=False
        )
        refuse_token(run, got, ADMIN_TOKEN, "admin")
        if not got.ok:
            run.notes.append(f"probe correction {cid} could not be rejected: HTTP {got.status}")


async def diff(run: ProbeRun) -> None:
    """The diff answers, is signed correctly when signed, and carries a tombstone for a belief
    deleted through the operator's means."""
    rid = "p2.diff-tombstones"
    export = run.observed.export or {}
    issued = env.instant(export, "issued_at") or run.clock.now()
    since = format_instant(issued - timedelta(seconds=1))
    params = {"since": since}
    got = await run.client.get("/v1/context/diff", token=run.options.token, params=params)
    run.check(rid, "diff", got.status == 200, f"GET /v1/context/diff: HTTP {got.status}")
    if isinstance(got.body, dict) and "signature" in got.body:
        signed(run, got.body, "diff")
    if got.status == 200:
        _shape(run, got.body)
    victim = await _delete_one(run, export)
    if victim is None:
        return
    got = await run.client.get("/v1/context/diff", token=run.options.token, params=params)
    deleted = _shape(run, got.body) if got.status == 200 else None
    run.check(
        rid,
        "diff",
        got.status == 200 and deleted is not None and victim in deleted,
        f"after deleting belief {victim} the diff since {since} carries no tombstone for it"
        + ("" if deleted is None else f" (it deletes {sorted(deleted)[:10]})"),
    )
    if isinstance(got.body, dict) and "signature" in got.body:
        signed(run, got.body, "diff")


def _shape(run: ProbeRun, body: Json) -> frozenset[str] | None:
    """The ids the diff deletes; an executed-fail showing the diff when its shape is unknown."""
    try:
        if not isinstance(body, dict):
            raise DiffShapeError("the diff is not a JSON object")
        return deleted_ids(body)
    except DiffShapeError as e:
        shown = dumps_text(body)[:_SHOWN_DIFF]
        run.check("p2.diff-tombstones", "diff", False, f"diff shape not understood ({e}): {shown}")
        return None


async def _delete_one(run: ProbeRun, export: JsonObject) -> str | None:
    """Delete a belief on the host and return its id; None when no tombstone can be had."""
    rid = "p2.diff-tombstones"
    if run.options.admin_token is not None:
        victim = await admin_add(run, "general")
        if victim is None:
            run.skip(rid, "diff", "the admin token may not add a belief to delete")
            return None
        got = await admin_delete(run, victim)
        if not got.ok:
            run.skip(rid, "diff", f"the admin API refused the delete: HTTP {got.status}")
            return None
        return victim
    if run.options.delete_hook is None:
        run.skip(
            rid,
            "diff",
            "no --admin-token or --delete-hook was given: the host offers the suite no "
            "way to delete a belief, so a tombstone cannot be provoked",
        )
        return None
    ids = [ident for ident, _ in identified(export)]
    if not ids:
        run.skip(rid, "diff", "the subject behind the token holds no belief that names an id")
        return None
    victim = ids[-1]
    if not _SAFE_ID.match(victim):
        run.block(rid, "diff", f"the belief id {victim!r} is not safe to put in a command line")
        return None
    problem = await run_hook(run.options.delete_hook, victim, run.options.timeout)
    if problem is not None:
        # The operator's tooling failed, not the host under test: a suite-side failure.
        run.block(rid, "diff", problem)
        return None
    return victim


def hook_argv(hook: tuple[str, ...], belief: str) -> list[str]:
    """The hook's argv for one belief: ``{belief_id}`` replaced, else the id appended."""
    if any(BELIEF_ID_PLACEHOLDER in arg for arg in hook):
        return [arg.replace(BELIEF_ID_PLACEHOLDER, belief) for arg in hook]
    return [*hook, belief]


async def run_hook(hook: tuple[str, ...], belief: str, timeout: float) -> str | None:
    """Run the delete hook with its output captured; None on success, else why it failed
    (with its output, which is shown only then and never mixed into the run's own output)."""
    try:
        process = await asyncio.create_subprocess_exec(
            *hook_argv(hook, belief),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as e:
        return f"the delete hook could not run: {e}"
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        return f"the delete hook did not finish within {timeout:g} s"
    if process.returncode == 0:
        return None
    shown = "; ".join(
        f"{name}: {' '.join(data.decode('utf-8', 'replace').split())[:HOOK_OUTPUT_LIMIT]}"
        for name, data in (("stdout", out), ("stderr", err))
        if data.strip()
    )
    return f"the delete hook exited with status {process.returncode}" + (
        f" ({shown})" if shown else ""
    )


__all__ = ["corrections", "diff", "hook_argv", "run_hook"]
