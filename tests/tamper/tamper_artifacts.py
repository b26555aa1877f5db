"""Real signed artifacts to tamper with, made by engram's own provider and runner, and the
verifiers' answers as meanings (tests/tamper/json_tamper.py, "accept").

- export and diff: ``GET /v1/context`` and ``GET /v1/context/diff`` of the provider app over a
  fresh store (the diff carries a change and a tombstone); their meaning is the RFC 8785 bytes
  of the signed members plus the signature's bytes (a padded spelling of the same signature
  means the same);
- bundle: a certification bundle of a runner pass over that provider; its meaning is the
  bundle less the members ``verify`` shows as unsigned, and those must be shown as carried.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from starlette.testclient import TestClient

from engram.conformance import (
    Outcome,
    ProviderRunOptions,
    build_bundle,
    load_ledger,
    run_provider,
    verify_bundle,
)
from engram.conformance.internals import UNSIGNED, HostInfo
from engram.context import add_belief, delete_belief
from engram.context.internals import seed_demo
from engram.core.canonical import canonicalize, parse_strict
from engram.core.clock import FixedClock, format_instant
from engram.core.context_wire import read_diff
from engram.core.encoding import b64url_decode
from engram.core.jsonio import dumps_text
from engram.provider import ProviderConfig, create_app
from engram.runtime import PublishedKey, verify_export
from engram.runtime.internals import parse_document, parse_key_list, verify_signed
from engram.store import open_store
from engram.store.keys import KeyStore


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


BASE_URL = "http://provider.test"
Meaning = tuple[bytes, bytes]


@dataclass
class Artifacts:
    """The originals and what a verifier needs to judge them."""

    clock: FixedClock
    keys: dict[str, PublishedKey]
    export: bytes
    diff: bytes
    bundle: bytes
    discovery: dict[str, Any]
    unsigned_edits: list[str] = field(default_factory=list)

    def accept_export(self, data: bytes) -> Meaning:
        view = verify_export(data, self.keys, now=self.clock.now())
        return _signed_meaning(dict(view.export))

    def accept_diff(self, data: bytes) -> Meaning:
        document = parse_document(data, "diff")
        verified = verify_signed(
            document, self.keys, now=self.clock.now(), clock_skew=timedelta(seconds=60), what="diff"
        )
        read_diff(verified.document)  # a diff whose shape is not understood is never used
        return _signed_meaning(verified.document)

    def accept_bundle(self, data: bytes) -> tuple[bytes, bool]:
        report = verify_bundle(data, _LEDGER, discovery=self.discovery)
        if report.outcome is not Outcome.CERTIFIED:
            raise RuntimeError(f"{report.outcome.value}: {report.message}")
        bundle = _parsed(data)
        carried = {name: _member(bundle, name) for name in UNSIGNED}
        original = _parsed(self.bundle)
        if carried != {name: _member(original, name) for name in UNSIGNED}:
            self.unsigned_edits.append(
                ", ".join(n for n in UNSIGNED if carried[n] != _member(original, n))
            )
        # Accepted with an edit in an unsigned member: fine only if verify shows it as carried.
        return canonicalize(_without(bundle, UNSIGNED)), report.unsigned == carried


_LEDGER = load_ledger()


def _signed_meaning(document: dict[str, Any]) -> Meaning:
    signature = document.get("signature")
    assert isinstance(signature, str)
    content = {k: v for k, v in document.items() if k != "signature"}
    return canonicalize(content), b64url_decode(signature, allow_padding=True)


def _member(bundle: Any, dotted: str) -> Any:
    value = bundle
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _without(bundle: dict[str, Any], dotted: tuple[str, ...]) -> dict[str, Any]:
    copy = _parsed(canonicalize(bundle))
    for name in dotted:
        head, _, tail = name.partition(".")
        if isinstance(copy.get(head), dict):
            copy[head].pop(tail, None)
    assert isinstance(copy, dict)
    return copy


def make_artifacts() -> Artifacts:
    """Sign an export, a diff and a bundle with engram's provider over a fresh store."""
    clock = FixedClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    store = open_store("memory://")
    demo = seed_demo(store, clock)
    app = create_app(ProviderConfig(public_url=BASE_URL), store, clock)
    auth = {"Authorization": f"Bearer {demo.token}"}
    with TestClient(app, base_url=BASE_URL) as http:
        keys = parse_key_list(http.get("/.well-known/engram-keys").content)
        export = http.get("/v1/context", headers=auth).content
        issued = _parsed(export)["issued_at"]
        clock.advance(timedelta(seconds=5))
        delete_belief(store, clock, demo.subject.id, demo.beliefs[-1].id)
        add_belief(store, clock, demo.subject.id, "preference", "Likes \U0001f375 and café", 0.7)
        since = format_instant(
            datetime.fromisoformat(issued.replace("Z", "+00:00")) - timedelta(seconds=1)
        )
        diff = http.get("/v1/context/diff", params={"since": since}, headers=auth).content
        discovery = _parsed(http.get("/.well-known/engram").content)
    bundle = _bundle(app, store, clock, demo.token)
    return Artifacts(clock, keys, export, diff, bundle, discovery)


def _bundle(app: Any, store: Any, clock: FixedClock, token: str) -> bytes:
    options = ProviderRunOptions(BASE_URL, token, admin_token=token)
    report = asyncio.run(
        run_provider(options, _LEDGER, transport=httpx.ASGITransport(app=app), clock=clock)
    )
    _, key = KeyStore(store).ensure_active(clock.now(), timedelta(days=90))
    bundle = build_bundle(report, HostInfo("engram", "0.1.0", "commit", "0123abc"), key)
    return dumps_text(bundle, indent=2).encode("utf-8")


Accept = Callable[[bytes], Any]

__all__ = ["Accept", "Artifacts", "make_artifacts"]
