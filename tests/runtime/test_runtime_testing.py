"""``engram.runtime.testing.FakeProvider``, used the way a runtime author's own tests use it.

The client in every test is the real ``EngramClient`` / ``AsyncEngramClient``; only the provider
is fake. The export it serves is checked once more with code that shares nothing with engram
(``rfc8785`` for the canonical bytes, ``cryptography`` for Ed25519), so "correctly signed"
does not rest on engram agreeing with itself.
"""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from engram.core.clock import FixedClock
from engram.errors import (
    ExportExpired,
    InvalidScope,
    ScopeMismatch,
    SignatureInvalid,
    Unauthorized,
    UnknownKeyId,
)
from engram.runtime import EngramClient, RuntimeConfig
from engram.runtime.testing import FAULTS, FakeProvider

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = re.compile(r"```python\n((?:(?!```).)*?engram\.runtime\.testing(?:(?!```).)*)```", re.S)

BELIEFS = [
    {"category": "preference", "statement": "Prefers vegetarian food"},
    {"category": "health", "statement": "Allergic to peanuts"},
]


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.mark.req("engram.runtime.testing.fake-provider-verifies")
def test_a_users_test_fetches_and_verifies_through_the_fake() -> None:
    provider = FakeProvider(BELIEFS, display_name="Ada", timezone="Europe/London")
    with provider.client() as engram:
        view = engram.context()
        prompt = engram.system_prompt()
    assert view.kid == provider.kid
    assert view.subject_id == provider.subject_id
    assert [b.text for b in view.beliefs] == ["Prefers vegetarian food", "Allergic to peanuts"]
    assert prompt.startswith("User: Ada (Europe/London).")
    assert [r.url.path for r in provider.requests] == [
        "/.well-known/engram",
        "/v1/context",
        "/.well-known/engram-keys",
    ]


@pytest.mark.req("engram.runtime.testing.fake-provider-verifies")
async def test_the_async_client_verifies_the_same_export() -> None:
    provider = FakeProvider(BELIEFS)
    async with provider.async_client(provider.config(scope="professional")) as engram:
        view = await engram.context()
        proposed = await engram.propose_correction("belief-1", "Eats fish too")
    assert view.scope == "professional"
    assert [b.text for b in view.beliefs] == ["Prefers vegetarian food"]  # health left out
    assert proposed.status == "pending_user_confirmation"
    assert provider.corrections[0]["belief_id"] == "belief-1"


@pytest.mark.req("engram.runtime.testing.fake-provider-verifies")
def test_the_export_verifies_with_code_that_is_not_engrams() -> None:
    provider = FakeProvider(BELIEFS)
    document = provider.export()
    keys = provider.key_list()["keys"]
    assert isinstance(keys, list)
    [key] = keys
    assert isinstance(key, dict)
    assert key["kid"] == document["kid"] == provider.kid
    public = Ed25519PublicKey.from_public_bytes(_b64url(str(key["public_key"])))
    signature = _b64url(str(document["signature"]))
    unsigned = {k: v for k, v in document.items() if k != "signature"}
    public.verify(signature, rfc8785.dumps(unsigned))  # raises InvalidSignature if not


@pytest.mark.req("engram.runtime.testing.fake-provider-faults")
def test_an_expired_export_is_refused() -> None:
    provider = FakeProvider(BELIEFS, fault="expired")
    with provider.client() as engram, pytest.raises(ExportExpired):
        engram.fetch()


@pytest.mark.req("engram.runtime.testing.fake-provider-faults")
def test_a_tampered_export_is_refused() -> None:
    provider = FakeProvider(BELIEFS, fault="tampered")
    with provider.client() as engram, pytest.raises(SignatureInvalid):
        engram.fetch()
    assert engram.current is None  # nothing unverified is held


@pytest.mark.req("engram.runtime.testing.fake-provider-faults")
def test_an_export_of_another_scope_is_refused() -> None:
    provider = FakeProvider(BELIEFS, fault="wrong-scope")
    with provider.client() as engram, pytest.raises(ScopeMismatch):
        engram.fetch()
    professional = provider.config(scope="professional")
    with provider.client(professional) as engram, pytest.raises(ScopeMismatch):
        engram.fetch()


@pytest.mark.req("engram.runtime.testing.fake-provider-faults")
def test_an_export_signed_by_an_unpublished_key_is_refused() -> None:
    provider = FakeProvider(BELIEFS, fault="unknown-kid")
    with provider.client() as engram, pytest.raises(UnknownKeyId):
        engram.fetch()


@pytest.mark.req("engram.runtime.testing.fake-provider-faults")
def test_clearing_the_fault_serves_a_good_export_again_on_the_shared_clock() -> None:
    clock = FixedClock(datetime(2026, 6, 1, 9, 0, tzinfo=UTC))
    provider = FakeProvider(BELIEFS, clock=clock, lifetime=timedelta(hours=2))
    with provider.client() as engram:
        first = engram.fetch()
        provider.fault = "tampered"
        with pytest.raises(SignatureInvalid):
            engram.fetch()
        assert engram.current is first  # the verified view already held stays
        clock.advance(timedelta(hours=3))
        assert engram.current is None  # and is never used past its expires_at
        provider.fault = None
        assert engram.fetch().issued_at == clock.now()
    assert set(FAULTS) == {"expired", "tampered", "wrong-scope", "unknown-kid"}


@pytest.mark.req("engram.runtime.testing.fake-provider-verifies")
def test_an_unknown_scope_and_a_wrong_token_answer_as_a_provider_does() -> None:
    provider = FakeProvider()
    unknown = provider.config(scope="everything")
    with provider.client(unknown) as engram, pytest.raises(InvalidScope):
        engram.fetch()
    wrong = RuntimeConfig(provider.base_url, "not-the-token")
    with EngramClient(wrong, transport=provider.transport()) as engram, pytest.raises(Unauthorized):
        engram.fetch()
    with pytest.raises(ValueError, match="24 hours"):
        FakeProvider(lifetime=timedelta(hours=25))


def _examples() -> list[str]:
    return EXAMPLE.findall((REPO / "docs" / "spec" / "runtime.md").read_text("utf-8"))


@pytest.mark.req("engram.runtime.testing.docs-example")
def test_the_documented_example_runs_as_written() -> None:
    [code] = _examples()
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/spec/runtime.md", "exec"), namespace)  # noqa: S102 - the example
    assert "test_my_bot_sees_the_users_preferences" in namespace
    namespace["test_my_bot_sees_the_users_preferences"]()
    namespace["test_my_bot_refuses_a_tampered_export"]()
