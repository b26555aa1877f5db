"""URLs a runtime author mistypes and URLs a provider advertises badly: each is refused or
ignored with an engram error, never a bare ``ValueError`` or a traceback (docs/spec/runtime.md,
"Discovery")."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from runtime_harness import RealProvider

from engram.core.canonical import parse_strict
from engram.errors import InvalidRequest
from engram.runtime import RuntimeConfig


def _parsed(data: bytes | str) -> dict[str, Any]:
    # Strictly parsed and checked to be an object; the test then walks it freely.
    value = parse_strict(data)
    assert isinstance(value, dict)
    return value


# The `engram_shell` fixture (tests/conftest.py): `engram ARGS...` in a subprocess.
Shell = Callable[..., subprocess.CompletedProcess[str]]


@pytest.mark.req("engram.runtime.bad-url-refused")
@pytest.mark.parametrize(
    "url",
    ["http://[::1", "http://127.0.0.1:99999", "http://127.0.0.1:port", "ftp://provider.test"],
)
def test_a_provider_url_that_is_not_a_url_is_refused_when_the_config_is_built(url: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        RuntimeConfig(url, "eng_token")
    assert url in caught.value.message


@pytest.mark.req("engram.runtime.bad-url-refused", "engram.runtime.token-origin")
async def test_an_endpoint_with_a_bad_port_in_discovery_is_ignored() -> None:
    # The provider advertises its endpoints under a public URL whose port is out of range.
    with RealProvider.start(public_url="https://provider.test:99999") as provider:
        async with provider.async_client() as engram:
            view = await engram.context()
        discovery = _parsed(provider.wire.bodies["/.well-known/engram"])
    assert discovery["endpoints"]["context"].startswith("https://provider.test:99999")
    assert view.display_name == "Ada Example"
    assert {r.url.host for r in provider.wire.sent} == {"provider.test"}
    assert {r.url.port for r in provider.wire.sent} == {None}


@pytest.mark.req("engram.runtime.cli-fetch", "engram.runtime.bad-url-refused")
@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999"])
def test_context_fetch_with_a_malformed_url_is_one_line_and_exit_2(
    url: str, engram_shell: Shell
) -> None:
    run = engram_shell("context", "fetch", "--provider", url, "--token", "eng_secret")
    assert run.returncode == 2
    assert run.stderr.startswith("error: invalid_request: provider_url ")
    assert run.stderr.count("\n") == 1
    assert "eng_secret" not in run.stderr


@pytest.mark.req("engram.runtime.cli-fetch")
def test_context_fetch_from_an_unreachable_provider_is_one_line_and_exit_1(
    engram_shell: Shell, closed_port: int
) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    run = engram_shell("context", "fetch", "--provider", url, "--token", "eng_secret")
    assert run.returncode == 1
    assert run.stderr.startswith(f"error: remote_error: cannot reach the provider at {url}")
    assert run.stderr.count("\n") == 1
    assert "eng_secret" not in run.stderr
