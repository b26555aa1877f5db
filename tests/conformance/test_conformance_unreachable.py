"""Hosts the suite cannot reach and URLs that are not URLs, from the shell: one line, a non-zero
exit, no report or bundle for a host that was never observed, never a traceback
(docs/spec/conformance-bundle.md, "Provider runner" and "Verifying a bundle")."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conformance_faults import BASE_URL, FaultyProvider

from engram.conformance import ProviderRunOptions, build_bundle, load_ledger, run_provider
from engram.conformance.internals import HostInfo
from engram.core.clock import FixedClock
from engram.core.jsonio import dumps_text
from engram.core.keys import PrivateKey, save_private_key
from engram.errors import InvalidRequest
from engram.store import Store

# The `engram_shell` fixture (tests/conftest.py): `engram ARGS...` in a subprocess.
Shell = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.req("engram.conformance.runner.unreachable-host")
def test_an_unreachable_provider_stops_the_run_in_one_line_and_writes_no_bundle(
    tmp_path: Path, engram_shell: Shell, closed_port: int
) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    key = tmp_path / "bundle-key.pem"
    save_private_key(key, PrivateKey.generate())
    bundle = tmp_path / "bundle.json"
    run = engram_shell(
        "conformance", "provider", url, "--token", "eng_secret", "--admin-token", "eng_admin",
        "--bundle", str(bundle), "--sign-key", str(key), "--build-id", "abc123",
    )  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.startswith(
        f"error: remote_error: cannot reach the provider at {url} (GET /.well-known/engram): "
    )
    assert run.stderr.count("\n") == 1
    assert "eng_secret" not in run.stderr
    assert "eng_admin" not in run.stderr
    assert run.stdout == ""
    assert not bundle.exists()


@pytest.mark.req("engram.conformance.runner.unreachable-host")
@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999", "127.0.0.1:8420"])
def test_a_provider_url_that_is_not_a_url_is_refused_before_any_probe(
    url: str, engram_shell: Shell
) -> None:
    with pytest.raises(InvalidRequest):
        ProviderRunOptions(url, "eng_token")
    run = engram_shell("conformance", "provider", url, "--token", "eng_secret")
    assert run.returncode == 2
    assert run.stderr.startswith("error: invalid_request: the provider URL ")
    assert run.stderr.count("\n") == 1


@pytest.mark.req("engram.conformance.bundle.three-outcomes")
@pytest.mark.parametrize("where", ["closed-port", "bad-url"])
async def test_verify_names_an_unreachable_discovery_host_as_no_discovery(
    memory_store: Store, tmp_path: Path, where: str, engram_shell: Shell, closed_port: int
) -> None:
    clock = FixedClock(datetime(2026, 3, 1, 9, 0, tzinfo=UTC))
    provider = FaultyProvider(memory_store, clock)
    options = ProviderRunOptions(BASE_URL, provider.token, admin_token=provider.token)
    report = await run_provider(options, load_ledger(), transport=provider.transport(), clock=clock)
    host = HostInfo("engram", "0.1.0", "commit", "0123456789abcdef")
    bundle = tmp_path / "bundle.json"
    bundle.write_text(dumps_text(build_bundle(report, host, provider.signing_key()), indent=2))

    discovery = f"http://127.0.0.1:{closed_port}" if where == "closed-port" else "http://[::1"
    run = engram_shell("conformance", "verify", str(bundle), "--discovery", discovery)
    assert run.returncode == 1
    outcome, unsigned = run.stdout.splitlines()
    assert outcome.startswith(f"no-discovery: no discovery document was read (GET {discovery}")
    assert unsigned.startswith("unsigned (outside the signature, shown as carried, not verified):")
    assert run.stderr == ""
