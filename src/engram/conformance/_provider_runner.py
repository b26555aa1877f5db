"""The provider runner: probe a live Engram provider over HTTP and judge each requirement.

Spec: Engram v0.1 Conformance §"Conformance Tiers" (provider rows p1.*, p2.*, p3.*),
§"Self-Certification Checklist" and §"Error Code Reference"; dispositions follow
OpenWOP v2 Conformance §"Requirement ids". The runner witnesses behaviour, not shapes alone: it
posts a correction and reads the next export; it verifies signatures with engram's own
canonicaliser; it deletes a belief (only through an operator-supplied hook) and looks for the
tombstone. Probes run in a fixed order, each writing legs to a :class:`Recorder`.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx

from engram.conformance import _envelope as env
from engram.conformance._http import Exchange, ProbeClient
from engram.conformance._ledger import Ledger, Requirement
from engram.conformance._results import Recorder, Row, badge, tier_passes, tiers_of
from engram.core.clock import Clock, SystemClock, format_instant
from engram.errors import InvalidRequest

P = "engram.context."
RUNTIME_ID = "engram-conformance"

PROVIDER_WITNESSED: tuple[str, ...] = tuple(
    P + slug
    for slug in (
        "checklist",
        "error-shape",
        "p1.discovery",
        "p1.expires-at-present",
        "p1.expires-within-24h",
        "p1.export-200",
        "p1.identity-fields",
        "p1.unauthenticated-401",
        "p1.version-present",
        "p2.correct-pending",
        "p2.correction-not-applied",
        "p2.diff-tombstones",
        "p2.runtime-id-required",
        "p3.invalid-scope-400",
        "p3.key-fields",
        "p3.keys-endpoint",
        "p3.kid-published",
        "p3.scope-professional",
        "p3.signature-verifies",
    )
)
"""Every requirement id the runner judges (tests/test_ledger.py checks each is in the ledger)."""


@dataclass(frozen=True)
class ProviderRunOptions:
    """What the operator told the runner.

    ``admin_token`` (a token with the ``admin`` permission for the same subject) lets the runner
    add throwaway beliefs through engram's admin API (``POST``/``DELETE /v1/beliefs``) and delete
    them again; ``delete_hook`` is a command run with a belief id appended that deletes that
    belief on the host. Without either, tombstones are ``skipped``, never passed.
    """

    url: str
    token: str
    tier: int = 3
    admin_token: str | None = None
    delete_hook: tuple[str, ...] | None = None
    timeout: float = 10.0

    def __post_init__(self) -> None:
        try:
            parts = urlsplit(self.url)
            parts.port  # noqa: B018 - a port that is not a number in range raises here
        except ValueError as e:
            raise InvalidRequest(f"the provider URL {self.url!r} is not a URL: {e}") from e
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidRequest(f"the provider URL must be an http(s) URL, not {self.url!r}")


@dataclass
class ProviderReport:
    """The outcome of one provider run."""

    url: str
    claimed_tier: int
    rows: list[Row]
    badge: str
    discovery: Any
    requirements: tuple[Requirement, ...]
    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def claim_holds(self) -> bool:
        return tier_passes(self.rows, tiers_of(self.requirements), self.claimed_tier)


@dataclass
class _State:
    keys: dict[str, Any] = field(default_factory=dict)
    export: Any = None
    discovery: Any = None


class _Run:
    """One pass over the probes; each probe method records legs for the ids it witnesses."""

    def __init__(self, client: ProbeClient, options: ProviderRunOptions, clock: Clock) -> None:
        self.c = client
        self.o = options
        self.clock = clock
        self.r = Recorder()
        self.s = _State()

    def check(self, slug: str, scenario: str, ok: bool, failure: str) -> bool:
        if P + slug not in PROVIDER_WITNESSED:
            raise InvalidRequest(f"the runner names an id it does not declare: {P + slug}")
        return self.r.check(P + slug, scenario, ok, failure)

    async def discovery(self) -> None:
        got = await self.c.get("/.well-known/engram")
        body = got.body
        self.s.discovery = body if got.status == 200 else None
        version = body.get("engram_version") if isinstance(body, dict) else None
        self.check(
            "p1.discovery",
            "discovery",
            got.status == 200 and isinstance(body, dict) and version == "0.1",
            f"GET /.well-known/engram: HTTP {got.status}, engram_version {version!r}",
        )

    async def keys(self) -> None:
        got = await self.c.get("/.well-known/engram-keys")
        keys = env.key_list(got.body) if got.status == 200 else None
        ok = keys is not None and len(keys) > 0 and all(isinstance(k, dict) for k in keys)
        self.check(
            "p3.keys-endpoint", "keys", ok, f"HTTP {got.status}: no non-empty Ed25519 key list"
        )
        problems = [p for k in keys or [] for p in env.key_problems(k)]
        self.check("p3.key-fields", "keys", ok and not problems, "; ".join(problems) or "no keys")
        for key in keys or []:
            if isinstance(key, dict) and isinstance(key.get("kid"), str):
                self.s.keys[key["kid"]] = key

    async def export(self) -> None:
        got = await self.c.get("/v1/context", token=self.o.token)
        body = got.body
        problems = env.envelope_problems(body) if got.status == 200 else [f"HTTP {got.status}"]
        self.check("p1.export-200", "export", not problems, "; ".join(problems))
        if got.status != 200 or not isinstance(body, dict):
            body = {}
        self.s.export = body or None
        self.check(
            "p1.expires-at-present",
            "export",
            env.instant(body, "expires_at") is not None,
            f"expires_at is {body.get('expires_at')!r}",
        )
        lifetime = env.lifetime_problem(body)
        self.check("p1.expires-within-24h", "export", lifetime is None, lifetime or "")
        version = body.get("engram_version")
        self.check(
            "p1.version-present",
            "export",
            isinstance(version, str) and bool(version),
            f"engram_version is {version!r}",
        )
        identity = body.get("identity")
        names = ("display_name", "timezone")
        self.check(
            "p1.identity-fields",
            "export",
            isinstance(identity, dict) and all(_text(identity.get(n)) for n in names),
            f"identity is {identity!r}",
        )
        self._signed(body, "export")

    def _signed(self, body: dict[str, Any], scenario: str) -> None:
        kid = body.get("kid")
        self.check(
            "p3.kid-published",
            scenario,
            isinstance(kid, str) and kid in self.s.keys,
            f"{scenario}: kid {kid!r} is not in /.well-known/engram-keys",
        )
        problem = env.signature_problem(body, self.s.keys)
        self.check("p3.signature-verifies", scenario, problem is None, f"{scenario}: {problem}")

    async def unauthenticated(self) -> None:
        probes: list[tuple[str, str | None, dict[str, str] | None]] = [
            ("GET", None, None),
            ("GET", "engram-conformance-not-a-token", None),
            ("DIFF", None, None),
            ("POST", None, None),
        ]
        for method, token, _ in probes:
            if method == "POST":
                got = await self.c.post("/v1/context/correct", self._correction("x"), token=token)
            elif method == "DIFF":
                got = await self.c.get("/v1/context/diff", params={"since": _epoch()})
            else:
                got = await self.c.get("/v1/context", token=token)
            code = _error_code(got)
            self.check(
                "p1.unauthenticated-401",
                "unauthenticated",
                got.status == 401 and code == "unauthorized",
                f"{got.method} {got.path} without a valid token: HTTP {got.status} code {code!r}",
            )

    async def scopes(self) -> None:
        full = self.s.export or {}
        sensitive = [b for b in _beliefs(full) if b.get("category") in env.SENSITIVE_CATEGORIES]
        added: list[str] = []
        if not sensitive and self.o.admin_token is not None:
            # Give the subject one belief of each sensitive category, then look for them.
            for category in sorted(env.SENSITIVE_CATEGORIES):
                ident = await self._admin_add(category)
                if ident is not None:
                    added.append(ident)
                    sensitive.append({"id": ident, "category": category})
        got = await self.c.get("/v1/context", token=self.o.token, params={"scope": "professional"})
        body = got.body if isinstance(got.body, dict) else {}
        leaked = [
            b.get("id") for b in _beliefs(body) if b.get("category") in env.SENSITIVE_CATEGORIES
        ]
        rid = "p3.scope-professional"
        self.check(
            rid,
            "scope",
            got.status == 200 and bool(body),
            f"scope=professional: HTTP {got.status}",
        )
        self.check(rid, "scope", not leaked, f"scope=professional carries {leaked}")
        self.check(
            rid, "scope", body.get("scope") == "professional", f"scope is {body.get('scope')!r}"
        )
        if not sensitive:
            self.r.skip(
                P + rid,
                "scope",
                "the subject behind the token holds no health or financial beliefs, "
                "so their exclusion cannot be observed",
            )
        if body:
            self._signed(body, "scope")
        for ident in added:
            await self._admin_delete(ident)
        got = await self.c.get("/v1/context", token=self.o.token, params={"scope": "invalid"})
        code = _error_code(got)
        self.check(
            "p3.invalid-scope-400",
            "scope",
            got.status == 400 and code == "invalid_scope",
            f"scope=invalid: HTTP {got.status} code {code!r}",
        )

    def _correction(self, belief_id: str, **extra: str) -> dict[str, str]:
        body = {
            "belief_id": belief_id,
            "new_value": f"engram-conformance probe {secrets.token_hex(4)}",
            "runtime_id": RUNTIME_ID,
            "timestamp": format_instant(self.clock.now()),
        }
        body.update(extra)
        return body

    async def corrections(self) -> dict[str, bool]:
        """Post a correction, then check the next export still carries the old value."""
        answers = {"pending": False}
        beliefs = [b for b in _beliefs(self.s.export or {}) if _text(b.get("id"))]
        if not beliefs:
            reason = "the subject behind the token holds no beliefs to correct"
            for slug in ("correct-pending", "correction-not-applied", "runtime-id-required"):
                self.r.skip(P + "p2." + slug, "correction", reason)
            return answers
        target = beliefs[0]
        missing = self._correction(target["id"])
        del missing["runtime_id"]
        got = await self.c.post("/v1/context/correct", missing, token=self.o.token)
        code = _error_code(got)
        self.check(
            "p2.runtime-id-required",
            "correction",
            got.status == 400 and code == "invalid_request",
            f"correction without runtime_id: HTTP {got.status} code {code!r}",
        )
        proposal = self._correction(target["id"])
        got = await self.c.post("/v1/context/correct", proposal, token=self.o.token)
        status = got.body.get("status") if isinstance(got.body, dict) else None
        if got.status == 403:
            reason = "the token is not permitted to propose corrections (403 forbidden)"
            self.r.skip(P + "p2.correct-pending", "correction", reason)
            self.r.skip(P + "p2.correction-not-applied", "correction", reason)
            return answers
        answers["pending"] = self.check(
            "p2.correct-pending",
            "correction",
            got.ok and status == "pending_user_confirmation",
            f"POST /v1/context/correct: HTTP {got.status} status {status!r}",
        )
        after = await self.c.get("/v1/context", token=self.o.token)
        now = {b.get("id"): b for b in _beliefs(after.body)}
        statements = [b.get("statement") for b in _beliefs(after.body)]
        old = target.get("statement")
        self.check(
            "p2.correction-not-applied",
            "correction",
            after.status == 200 and now.get(target["id"], {}).get("statement") == old,
            f"after a pending correction belief {target['id']} reads "
            f"{now.get(target['id'], {}).get('statement')!r}, not {old!r}",
        )
        self.check(
            "p2.correction-not-applied",
            "correction",
            proposal["new_value"] not in statements and missing["new_value"] not in statements,
            "the proposed value is served as a belief before the user confirmed it",
        )
        return answers

    async def diff(self) -> None:
        rid = "p2.diff-tombstones"
        body = self.s.export or {}
        issued = env.instant(body, "issued_at") or self.clock.now()
        since = format_instant(issued - timedelta(seconds=1))
        got = await self.c.get("/v1/context/diff", token=self.o.token, params={"since": since})
        self.check(rid, "diff", got.status == 200, f"GET /v1/context/diff: HTTP {got.status}")
        if isinstance(got.body, dict) and "signature" in got.body:
            self._signed(got.body, "diff")
        victim = await self._delete_one(rid, body)
        if victim is None:
            return
        got = await self.c.get("/v1/context/diff", token=self.o.token, params={"since": since})
        self.check(
            rid,
            "diff",
            got.status == 200 and _has_tombstone(got.body, victim),
            f"after deleting belief {victim} the diff since {since} carries no tombstone for it",
        )
        if isinstance(got.body, dict) and "signature" in got.body:
            self._signed(got.body, "diff")

    async def _delete_one(self, rid: str, export: dict[str, Any]) -> str | None:
        """Delete a belief on the host and return its id; None when no tombstone can be had."""
        if self.o.admin_token is not None:
            victim = await self._admin_add("general")
            if victim is None:
                self.r.skip(P + rid, "diff", "the admin token may not add a belief to delete")
                return None
            got = await self._admin_delete(victim)
            if not got.ok:
                self.r.skip(P + rid, "diff", f"the admin API refused the delete: HTTP {got.status}")
                return None
            return victim
        if self.o.delete_hook is None:
            self.r.skip(
                P + rid,
                "diff",
                "no --admin-token or --delete-hook was given: the host offers the suite no "
                "way to delete a belief, so a tombstone cannot be provoked",
            )
            return None
        beliefs = [str(b["id"]) for b in _beliefs(export) if _text(b.get("id"))]
        if not beliefs:
            self.r.skip(P + rid, "diff", "the subject behind the token holds no beliefs")
            return None
        try:
            process = await asyncio.create_subprocess_exec(*self.o.delete_hook, beliefs[-1])
            code = await asyncio.wait_for(process.wait(), timeout=self.o.timeout)
        except (OSError, TimeoutError) as e:
            self.r.block(P + rid, "diff", f"the delete hook could not run: {e}")
            return None
        if code != 0:
            # The operator's tooling failed, not the host under test: a suite-side failure.
            self.r.block(P + rid, "diff", f"the delete hook exited with status {code}")
            return None
        return beliefs[-1]

    async def _admin_add(self, category: str) -> str | None:
        statement = f"engram-conformance probe {secrets.token_hex(4)} ({category})"
        got = await self.c.post(
            "/v1/beliefs",
            {"category": category, "statement": statement, "source": RUNTIME_ID},
            token=self.o.admin_token,
        )
        ident: object = got.body.get("id") if got.ok and isinstance(got.body, dict) else None
        return ident if isinstance(ident, str) else None

    async def _admin_delete(self, belief_id: str) -> Exchange:
        return await self.c.request("DELETE", f"/v1/beliefs/{belief_id}", token=self.o.admin_token)

    def error_shapes(self) -> None:
        provoked = [x for x in self.c.log if not x.ok]
        for x in provoked:
            problem = env.error_shape_problem(x.status, x.body)
            self.check("error-shape", "errors", problem is None, f"{x.method} {x.path}: {problem}")

    def checklist(self, answers: dict[str, bool]) -> None:
        body = self.s.export or {}
        expires = env.instant(body, "expires_at")
        discovery = self.s.discovery if isinstance(self.s.discovery, dict) else {}
        unauth = next((x for x in self.c.log if x.path == "/v1/context" and x.status == 401), None)
        items = {
            "#1 engram_version is 0.1": body.get("engram_version") == "0.1",
            "#2 expires_at is in the future": expires is not None and expires > self.clock.now(),
            "#3 unauthenticated request returns 401": unauth is not None,
            "#4 discovery engram_version is 0.1": discovery.get("engram_version") == "0.1",
            "#5 correction returns pending_user_confirmation": answers.get("pending", False),
        }
        failed = [name for name, ok in items.items() if not ok]
        self.check("checklist", "checklist", not failed, "; ".join(failed))


async def run_provider(
    options: ProviderRunOptions,
    ledger: Ledger,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Clock | None = None,
) -> ProviderReport:
    """Probe the provider at ``options.url`` and judge every provider requirement of the ledger.

    ``transport`` lets tests run the probe against an in-process ASGI app; the CLI leaves it unset.
    """
    requirements = ledger.select(party="provider")
    async with httpx.AsyncClient(transport=transport, timeout=options.timeout) as http:
        client = ProbeClient(http, options.url)
        run = _Run(client, options, clock or SystemClock())
        await run.discovery()
        await run.keys()
        await run.export()
        await run.unauthenticated()
        await run.scopes()
        answers = await run.corrections()
        await run.diff()
        run.error_shapes()
        run.checklist(answers)
    rows = run.r.rows(requirements)
    return ProviderReport(
        url=options.url,
        claimed_tier=options.tier,
        rows=rows,
        badge=badge(rows, tiers_of(requirements)),
        discovery=run.s.discovery,
        requirements=requirements,
        exchanges=client.log,
    )


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _beliefs(body: Any) -> list[dict[str, Any]]:
    beliefs = body.get("beliefs") if isinstance(body, dict) else None
    return [b for b in beliefs or [] if isinstance(b, dict)]


def _error_code(got: Exchange) -> str | None:
    error = got.body.get("error") if isinstance(got.body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


def _has_tombstone(body: Any, belief_id: str) -> bool:
    """A diff entry for ``belief_id`` marked deleted, wherever the diff lists its changes."""
    if not isinstance(body, dict):
        return False
    for value in body.values():
        for item in value if isinstance(value, list) else []:
            if (
                isinstance(item, dict)
                and item.get("id", item.get("belief_id")) == belief_id
                and (item.get("deleted") is True or item.get("deleted_at") is not None)
            ):
                return True
    return False


def _epoch() -> str:
    return format_instant(datetime.fromisoformat("2020-01-01T00:00:00+00:00"))


__all__ = [
    "PROVIDER_WITNESSED",
    "RUNTIME_ID",
    "ProviderReport",
    "ProviderRunOptions",
    "run_provider",
]
