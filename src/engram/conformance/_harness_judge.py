"""The runtime harness: run a runtime under test through scripted scenarios and judge each
runtime requirement from the harness's own request logs.

Spec: Engram v0.1 Conformance §"Conformance Tiers" (runtime rows r1.*, r2.*, r3.*) and §"Runtime
Checklist"; the contract with the runtime (environment, standard input) is in
docs/spec/conformance-bundle.md §"Runtime harness". The runtime is any command: it gets
``ENGRAM_PROVIDER_URL``, ``ENGRAM_TOKEN``, ``OPENAI_BASE_URL`` (and ``ENGRAM_SCOPE`` in the scoped
scenario), reads user lines on standard input and ends at end of input.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engram.conformance._harness_script import KEEP_ID, DiffMode, ExportMode, Script, llm_route
from engram.conformance._harness_servers import LoopbackServer, Request, RequestLog, system_prompt
from engram.conformance._ledger import Ledger, Requirement
from engram.conformance._results import Recorder, Row
from engram.core.clock import Clock, SystemClock

R = "engram.context."
RUNTIME_WITNESSED: tuple[str, ...] = tuple(
    R + slug
    for slug in (
        "r1.docs-link",
        "r1.fetch-at-start",
        "r1.inject",
        "r1.reject-expired",
        "r2.correction-not-authoritative",
        "r2.incremental-sync",
        "r2.propose-correction",
        "r3.fetch-keys",
        "r3.reject-bad-signature",
        "r3.scoped-requests",
        "r3.select-kid",
        "r3.verify-every-export",
    )
)
"""Every requirement id the harness judges (tests/test_ledger.py checks each is in the ledger)."""

DOCS_LINK = "engramspec.org"


@dataclass(frozen=True)
class Scenario:
    name: str
    lines: tuple[str, ...]
    export_mode: ExportMode = "valid"
    diff_mode: DiffMode = "none"
    scope: str | None = None


CORRECTION_VALUE = "Prefers black coffee"
SCENARIOS: tuple[Scenario, ...] = (
    Scenario("valid-export", ("Hello, who am I?",)),
    Scenario("expired-export", ("Hello, who am I?",), export_mode="expired"),
    Scenario("tampered-signature", ("Hello, who am I?",), export_mode="tampered"),
    Scenario("unknown-kid", ("Hello, who am I?",), export_mode="unknown-kid"),
    Scenario(
        "correction",
        ("Hello.", f"/correct {KEEP_ID} {CORRECTION_VALUE}", "What do I like to drink?"),
    ),
    Scenario(
        "diff-tombstone",
        ("Hello.", "Anything new about me?", "And now?"),
        export_mode="short",
        diff_mode="tombstone",
    ),
    Scenario(
        "tampered-diff",
        ("Hello.", "Anything new about me?", "And now?"),
        export_mode="short",
        diff_mode="tampered",
    ),
    Scenario("scoped-request", ("Hello, what is my job?",), scope="professional"),
)


@dataclass
class ScenarioRun:
    scenario: Scenario
    script: Script
    requests: list[Request]
    exit_code: int | None
    stderr_tail: str

    def provider(self, method: str, path: str) -> list[Request]:
        return [
            r
            for r in self.requests
            if r.server == "provider" and r.method == method and r.path == path
        ]

    @property
    def llm(self) -> list[Request]:
        return [r for r in self.requests if r.server == "llm" and r.method == "POST"]

    def prompts(self, after: int = -1) -> list[str]:
        return [system_prompt(r) for r in self.llm if r.seq > after]

    def reached_llm(self, text: str) -> bool:
        return any(text in prompt for prompt in self.prompts())


@dataclass
class RuntimeReport:
    command: list[str]
    rows: list[Row]
    runs: list[ScenarioRun] = field(default_factory=list)
    requirements: tuple[Requirement, ...] = ()


def run_runtime(
    command: Sequence[str],
    ledger: Ledger,
    *,
    docs: Path | None = None,
    clock: Clock | None = None,
    timeout: float = 30.0,
    scenarios: Sequence[Scenario] = SCENARIOS,
) -> RuntimeReport:
    """Run ``command`` once per scenario against loopback servers and judge every runtime row."""
    clock = clock or SystemClock()
    token = "harness-" + secrets.token_urlsafe(16)
    log = RequestLog()
    state: dict[str, Script] = {}
    runs: list[ScenarioRun] = []
    with (
        LoopbackServer("provider", log, lambda r: state["script"].provider_route(base)(r)) as prov,
        LoopbackServer("llm", log, llm_route) as llm,
        tempfile.TemporaryDirectory(prefix="engram-harness-") as home,
    ):
        base = prov.url
        for scenario in scenarios:
            log.clear()
            script = Script(clock, token, scenario.export_mode, scenario.diff_mode)
            state["script"] = script
            env = _environment(base, llm.url + "/v1", token, home, scenario.scope)
            code, stderr = _execute(command, scenario.lines, env, timeout)
            runs.append(ScenarioRun(scenario, script, list(log.requests), code, stderr))
    requirements = ledger.select(party="runtime")
    recorder = Recorder()
    _judge(recorder, {run.scenario.name: run for run in runs}, docs)
    return RuntimeReport(list(command), recorder.rows(requirements), runs, requirements)


def _environment(
    provider: str, llm: str, token: str, home: str, scope: str | None
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "OPENAI_"))}
    env.update(
        ENGRAM_PROVIDER_URL=provider,
        ENGRAM_TOKEN=token,
        ENGRAM_HOME=home,
        OPENAI_BASE_URL=llm,
        OPENAI_API_KEY="harness-not-a-secret",
    )
    if scope is not None:
        env["ENGRAM_SCOPE"] = scope
    return env


def _execute(
    command: Sequence[str], lines: Sequence[str], env: dict[str, str], timeout: float
) -> tuple[int | None, str]:
    stdin = "".join(line + "\n" for line in lines)
    try:
        done = subprocess.run(
            list(command), input=stdin, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as e:
        tail = e.stderr.decode("utf-8", "replace") if isinstance(e.stderr, bytes) else ""
        return None, tail[-2000:]
    return done.returncode, done.stderr[-2000:]


def _judge(rec: Recorder, runs: dict[str, ScenarioRun], docs: Path | None) -> None:
    valid = runs.get("valid-export")
    if valid is not None:
        fetches = valid.provider("GET", "/v1/context")
        first_llm = valid.llm[0].seq if valid.llm else None
        rec.check(
            R + "r1.fetch-at-start",
            valid.scenario.name,
            bool(fetches) and first_llm is not None and fetches[0].seq < first_llm,
            "GET /v1/context did not come before the first LLM request"
            if fetches
            else "the runtime never called GET /v1/context",
        )
        rec.check(
            R + "r1.inject",
            valid.scenario.name,
            valid.reached_llm(valid.script.marker),
            "the export's system_prompt_injection did not reach the LLM's system prompt",
        )
        keyed = bool(valid.provider("GET", "/.well-known/engram-keys"))
        rec.check(
            R + "r3.fetch-keys",
            valid.scenario.name,
            keyed,
            "the runtime never fetched /.well-known/engram-keys",
        )
        rec.check(
            R + "r3.select-kid",
            valid.scenario.name,
            keyed and valid.reached_llm(valid.script.marker),
            "with two published keys the export signed under the second was not used",
        )
    _refused(rec, runs.get("expired-export"), R + "r1.reject-expired", "an expired export")
    for rid in ("r3.reject-bad-signature", "r3.verify-every-export"):
        _refused(rec, runs.get("tampered-signature"), R + rid, "an export signed over other bytes")
    _refused(
        rec, runs.get("unknown-kid"), R + "r3.select-kid", "an export whose kid is unpublished"
    )
    _corrections(rec, runs.get("correction"))
    _diffs(rec, runs.get("diff-tombstone"), runs.get("tampered-diff"))
    scoped = runs.get("scoped-request")
    if scoped is not None:
        asked = [r.query.get("scope") for r in scoped.provider("GET", "/v1/context")]
        rec.check(
            R + "r3.scoped-requests",
            scoped.scenario.name,
            "professional" in asked,
            f"with ENGRAM_SCOPE=professional the runtime asked for scopes {asked}",
        )
    if docs is None:
        rec.skip(R + "r1.docs-link", "docs", "no integration documentation was named (--docs)")
    else:
        text = docs.read_text(encoding="utf-8", errors="replace")
        rec.check(
            R + "r1.docs-link", "docs", DOCS_LINK in text, f"{docs} does not link to {DOCS_LINK}"
        )


def _refused(rec: Recorder, run: ScenarioRun | None, rid: str, what: str) -> None:
    if run is None:
        return
    fetched = bool(run.provider("GET", "/v1/context"))
    leaked = run.reached_llm(run.script.marker)
    rec.check(
        rid,
        run.scenario.name,
        fetched and not leaked,
        f"content of {what} reached the LLM" if leaked else "the runtime never fetched the export",
    )


def _corrections(rec: Recorder, run: ScenarioRun | None) -> None:
    if run is None:
        return
    posts = run.provider("POST", "/v1/context/correct")
    proposed = [
        p
        for p in posts
        if isinstance(p.body, dict)
        and p.body.get("belief_id") == KEEP_ID
        and CORRECTION_VALUE in str(p.body.get("new_value", ""))
        and bool(p.body.get("runtime_id"))
    ]
    rec.check(
        R + "r2.propose-correction",
        run.scenario.name,
        bool(proposed),
        f"after '/correct {KEEP_ID} {CORRECTION_VALUE}' no correction with runtime_id was posted",
    )
    rid = R + "r2.correction-not-authoritative"
    if not proposed:
        rec.skip(rid, run.scenario.name, "the runtime proposed no correction to observe")
        return
    later = run.prompts(after=proposed[0].seq)
    if not later:
        rec.skip(rid, run.scenario.name, "the runtime sent no LLM request after proposing")
        return
    rec.check(
        rid,
        run.scenario.name,
        not run.reached_llm(CORRECTION_VALUE)
        and all(run.script.keep_statement in p for p in later),
        "the unconfirmed correction replaced the belief in the LLM's system prompt",
    )


def _diffs(rec: Recorder, run: ScenarioRun | None, tampered: ScenarioRun | None) -> None:
    rid = R + "r2.incremental-sync"
    if run is not None:
        diffs = [r for r in run.provider("GET", "/v1/context/diff") if "since" in r.query]
        later = run.prompts(after=diffs[0].seq) if diffs else []
        rec.check(
            rid,
            run.scenario.name,
            bool(diffs),
            "the runtime never called GET /v1/context/diff?since= on an export due for refresh",
        )
        if diffs:
            rec.check(
                rid,
                run.scenario.name,
                bool(later) and all(run.script.doomed_statement not in p for p in later),
                "a belief the diff tombstoned still reached the LLM after the diff",
            )
    if tampered is not None and tampered.provider("GET", "/v1/context/diff"):
        rec.check(
            R + "r3.verify-every-export",
            tampered.scenario.name,
            not tampered.reached_llm(tampered.script.forged_statement),
            "a belief from a diff signed over other bytes reached the LLM",
        )


__all__ = [
    "RUNTIME_WITNESSED",
    "SCENARIOS",
    "RuntimeReport",
    "Scenario",
    "ScenarioRun",
    "run_runtime",
]
