"""Tier 1 (Reader) probes: discovery, the export, unauthenticated requests, error shapes and
the self-certification checklist.

Spec: Engram v0.1 Conformance §"Tier 1 — Reader" (p1.*), §"Self-Certification Checklist" and
§"Error Code Reference". The export is judged by the minimal fixture's members; its injection
may be left out when the beliefs it would be built from are there (a note, not a failure).
"""

from __future__ import annotations

from datetime import UTC, datetime

from engram.conformance import _envelope as env
from engram.conformance._probe import ProbeRun, error_code, refuse_token, text
from engram.core.canonical import JsonObject
from engram.core.clock import format_instant

UNAUTHENTICATED_TOKEN = "engram-conformance-not-a-token"  # noqa: S105 - a deliberately bad token


async def discovery(run: ProbeRun) -> None:
    got = await run.client.get("/.well-known/engram")
    body = got.body
    run.observed.discovery = body if got.status == 200 else None
    version = body.get("engram_version") if isinstance(body, dict) else None
    run.check(
        "p1.discovery",
        "discovery",
        got.status == 200 and isinstance(body, dict) and version == "0.1",
        f"GET /.well-known/engram: HTTP {got.status}, engram_version {version!r}",
    )


async def export(run: ProbeRun) -> JsonObject:
    """Fetch and judge the export; returns it ({} when there is none) for later tiers."""
    got = await run.client.get("/v1/context", token=run.options.token)
    refuse_token(run, got, "--token")
    body = got.body
    problems = env.envelope_problems(body) if got.status == 200 else [f"HTTP {got.status}"]
    run.check("p1.export-200", "export", not problems, "; ".join(problems))
    if got.status != 200 or not isinstance(body, dict):
        body = {}
    run.observed.export = body or None
    if body and "system_prompt_injection" not in body:
        run.notes.append(
            "the export carries no system_prompt_injection: runtimes build the prompt from "
            "its beliefs (allowed by Tier 1)"
        )
    run.check(
        "p1.expires-at-present",
        "export",
        env.instant(body, "expires_at") is not None,
        f"expires_at is {body.get('expires_at')!r}",
    )
    lifetime = env.lifetime_problem(body)
    run.check("p1.expires-within-24h", "export", lifetime is None, lifetime or "")
    version = body.get("engram_version")
    run.check(
        "p1.version-present",
        "export",
        isinstance(version, str) and bool(version),
        f"engram_version is {version!r}",
    )
    identity = body.get("identity")
    run.check(
        "p1.identity-fields",
        "export",
        isinstance(identity, dict)
        and all(text(identity.get(n)) for n in ("display_name", "timezone")),
        f"identity is {identity!r}",
    )
    return body


async def unauthenticated(run: ProbeRun) -> None:
    """Four requests without a valid token; each must be 401 ``unauthorized``."""
    correction, _ = run.probe_correction("engram-conformance-unauthenticated")
    probes = [
        run.client.get("/v1/context"),
        run.client.get("/v1/context", token=UNAUTHENTICATED_TOKEN),
        run.client.get("/v1/context/diff", params={"since": _epoch()}),
        run.client.post("/v1/context/correct", correction),
    ]
    for probe in probes:
        got = await probe
        code = error_code(got)
        run.check(
            "p1.unauthenticated-401",
            "unauthenticated",
            got.status == 401 and code == "unauthorized",
            f"{got.method} {got.path} without a valid token: HTTP {got.status} code {code!r}",
        )


def error_shapes(run: ProbeRun) -> None:
    """Every non-2xx answer the run provoked, against the spec's shape and table."""
    for x in (x for x in run.client.log if not x.ok and x.judged):
        problem = env.error_shape_problem(x.status, x.body)
        run.check("error-shape", "errors", problem is None, f"{x.method} {x.path}: {problem}")


def checklist(run: ProbeRun) -> None:
    """The page's five checklist answers, taken from the same exchanges."""
    body = run.observed.export or {}
    expires = env.instant(body, "expires_at")
    found = run.observed.discovery
    discovered = found if isinstance(found, dict) else {}
    unauth = next((x for x in run.client.log if x.path == "/v1/context" and x.status == 401), None)
    items = {
        "#1 engram_version is 0.1": body.get("engram_version") == "0.1",
        "#2 expires_at is in the future": expires is not None and expires > run.clock.now(),
        "#3 unauthenticated request returns 401": unauth is not None,
        "#4 discovery engram_version is 0.1": discovered.get("engram_version") == "0.1",
        "#5 correction returns pending_user_confirmation": run.observed.correction_answers.get(
            "pending", False
        ),
    }
    failed = [name for name, ok in items.items() if not ok]
    run.check("checklist", "checklist", not failed, "; ".join(failed))


def _epoch() -> str:
    return format_instant(datetime(2020, 1, 1, tzinfo=UTC))


__all__ = ["checklist", "discovery", "error_shapes", "export", "unauthenticated"]
