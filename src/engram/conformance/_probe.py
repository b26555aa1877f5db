"""What every probe of the provider runner shares: the run's options, its HTTP client, the
recorder of legs and what has been observed so far.

Spec: Engram v0.1 Conformance §"Conformance Tiers"; OpenWOP v2 Conformance §"Requirement ids" (a
leg is recorded under a declared requirement id, never an undeclared one). The probes of each
tier live in ``_probe_reader``, ``_probe_writer`` and ``_probe_full``; ``_provider_runner`` runs
them in order. Nothing here assumes engram's own field names: beliefs are found and their ids
read by the documented lists of :mod:`engram.core.context_wire`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from engram.conformance._http import Exchange, ProbeClient
from engram.conformance._results import Recorder
from engram.core.canonical import Json, JsonObject
from engram.core.clock import Clock, format_instant
from engram.core.context_wire import PROBE_LABEL, PROBE_RUNTIME_ID, belief_id
from engram.errors import InvalidRequest, Unauthorized

P = "engram.context."
RUNTIME_ID = PROBE_RUNTIME_ID

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

BELIEF_ID_PLACEHOLDER = "{belief_id}"


@dataclass(frozen=True)
class ProviderRunOptions:
    """What the operator told the runner.

    ``admin_token`` (a token with engram's ``admin`` permission for the same subject) lets the
    runner add throwaway beliefs through engram's admin API (``POST``/``DELETE /v1/beliefs``),
    delete them again, and reject its own probe corrections; ``delete_hook`` is a command
    (argv) that deletes one belief on the host: ``{belief_id}`` in an argument is replaced by
    the id, and without a placeholder the id is appended. Without either, tombstones are
    ``skipped``, never passed.
    """

    url: str
    token: str
    tier: int = 3
    admin_token: str | None = None
    delete_hook: tuple[str, ...] | None = None
    timeout: float = 10.0
    deadline: float = 120.0
    """Seconds one exchange may take in all (docs/spec/limits.md §1); ``timeout`` is per read."""

    def __post_init__(self) -> None:
        try:
            parts = urlsplit(self.url)
            parts.port  # noqa: B018 - a port that is not a number in range raises here
        except ValueError as e:
            raise InvalidRequest(f"the provider URL {self.url!r} is not a URL: {e}") from e
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidRequest(f"the provider URL must be an http(s) URL, not {self.url!r}")


@dataclass
class Observed:
    """What earlier probes saw and later ones judge against."""

    discovery: Json = None
    keys: JsonObject = field(default_factory=dict)
    export: JsonObject | None = None
    correction_answers: dict[str, bool] = field(default_factory=dict)


@dataclass
class ProbeRun:
    """One pass of the runner over one provider."""

    client: ProbeClient
    options: ProviderRunOptions
    clock: Clock
    recorder: Recorder = field(default_factory=Recorder)
    observed: Observed = field(default_factory=Observed)
    notes: list[str] = field(default_factory=list)
    """Facts worth telling the operator that are no requirement's disposition."""

    def check(self, slug: str, scenario: str, ok: bool, failure: str) -> bool:
        return self.recorder.check(self._declared(slug), scenario, ok, failure)

    def skip(self, slug: str, scenario: str, reason: str) -> None:
        self.recorder.skip(self._declared(slug), scenario, reason)

    def block(self, slug: str, scenario: str, reason: str) -> None:
        self.recorder.block(self._declared(slug), scenario, reason)

    @staticmethod
    def _declared(slug: str) -> str:
        if P + slug not in PROVIDER_WITNESSED:
            raise InvalidRequest(f"the runner names an id it does not declare: {P + slug}")
        return P + slug

    def probe_correction(
        self, target_id: str, *, runtime_id: bool = True
    ) -> tuple[dict[str, str], str]:
        """A correction labelled unmistakably as a probe, and the fresh marker it carries."""
        marker = "ecp-" + secrets.token_hex(8)
        body = {
            "belief_id": target_id,
            "new_value": f"{PROBE_LABEL} {marker}: an automated test of this provider, "
            "not a real correction; reject it",
            "runtime_id": RUNTIME_ID,
            "timestamp": format_instant(self.clock.now()),
        }
        if not runtime_id:
            del body["runtime_id"]
        return body, marker


async def admin_add(run: ProbeRun, category: str) -> str | None:
    """Add a throwaway belief through engram's admin API; its id, or None if refused."""
    statement = f"{PROBE_LABEL} {secrets.token_hex(4)} ({category})"
    got = await run.client.post(
        "/v1/beliefs",
        {"category": category, "statement": statement, "source": RUNTIME_ID},
        token=run.options.admin_token,
        judged=False,
    )
    refuse_token(run, got, ADMIN_TOKEN, "admin")
    ident: object = got.body.get("id") if got.ok and isinstance(got.body, dict) else None
    return ident if isinstance(ident, str) else None


async def admin_delete(run: ProbeRun, ident: str) -> Exchange:
    got = await run.client.request(
        "DELETE", f"/v1/beliefs/{ident}", token=run.options.admin_token, judged=False
    )
    refuse_token(run, got, ADMIN_TOKEN, "admin")
    return got


def text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def beliefs(body: Json) -> list[JsonObject]:
    found = body.get("beliefs") if isinstance(body, dict) else None
    return [b for b in found if isinstance(b, dict)] if isinstance(found, list) else []


def identified(body: Json) -> list[tuple[str, JsonObject]]:
    """(id, belief) for every belief of ``body`` that names an id."""
    return [(ident, b) for b in beliefs(body) if (ident := belief_id(b)) is not None]


ADMIN_TOKEN = "--admin-token"  # noqa: S105 - the option's name, not a secret


class TokenRefused(Unauthorized):
    """The provider refused the operator's ``--token`` (401, or 403 on a read) or
    ``--admin-token`` (401 or 403 on engram's admin API): nothing can be
    judged through a token it will not honour, so the run stops in one line instead of
    reporting every requirement ``executed-fail`` against a provider that may be fine."""

    code = "token_refused"


def refuse_token(run: ProbeRun, got: Exchange, what: str, permission: str = "read") -> None:
    """Stop the run when ``got`` (a request made with ``what``) says the token was refused."""
    if got.status not in (401, 403):
        return
    code = error_code(got)
    error = got.body.get("error") if isinstance(got.body, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    said = f"HTTP {got.status}" + (f" {code}" if code else "") + (f": {detail}" if detail else "")
    raise TokenRefused(
        f"the provider at {run.options.url} refused the {what} ({said}); check that it is "
        f"current and has the {permission} permission: nothing was judged"
    )


def error_code(got: Exchange) -> str | None:
    error = got.body.get("error") if isinstance(got.body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


__all__ = [
    "ADMIN_TOKEN",
    "BELIEF_ID_PLACEHOLDER",
    "PROVIDER_WITNESSED",
    "RUNTIME_ID",
    "Observed",
    "P",
    "ProbeRun",
    "ProviderRunOptions",
    "TokenRefused",
    "admin_add",
    "admin_delete",
    "beliefs",
    "error_code",
    "identified",
    "refuse_token",
    "text",
]
