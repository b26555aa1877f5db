"""What the Engram v0.1 page leaves open, read liberally without weakening a check (issue 12,
"Runtime SDK"; docs/spec/runtime.md "Beliefs", "Rendering a belief", "Diff shapes", "Keys",
"Documents that are not the one asked for"). Documents are signed here with engram.core; the
independent providers of tests/interop/ exercise the same points over HTTP.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from engram.context.internals import seed_demo
from engram.core.canonical import canonicalize
from engram.core.clock import FixedClock, format_instant
from engram.core.encoding import b64url_decode, b64url_encode
from engram.core.keys import PrivateKey
from engram.errors import InvalidRequest, MalformedExport, ScopeMismatch, SignatureInvalid
from engram.provider import ProviderConfig, create_app
from engram.runtime import (
    AsyncEngramClient,
    ContextView,
    PublishedKey,
    RuntimeConfig,
    Verified,
    render_belief,
    verify_export,
)
from engram.runtime.internals import parse_key_list
from engram.store import Store

NOW = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
KEY = PrivateKey.generate()
KID = "urn:example:key:1"


def _keys(*, padded: bool = False) -> dict[str, PublishedKey]:
    raw = KEY.public_key().raw
    text = base64.urlsafe_b64encode(raw).decode() if padded else b64url_encode(raw)
    body = canonicalize({"keys": [{"kid": KID, "alg": "Ed25519", "public_key": text}]})
    return parse_key_list(body)


def _signed(document: dict[str, Any], *, padded: bool = False) -> bytes:
    signature = KEY.sign(canonicalize(document))
    text = base64.urlsafe_b64encode(signature).decode() if padded else b64url_encode(signature)
    return canonicalize({**document, "signature": text})


def _minimal(**extra: Any) -> dict[str, Any]:
    """The page's "Minimal valid export", without system_prompt_injection."""
    document = {
        "engram_version": "0.1",
        "issued_at": "2026-03-01T10:00:00Z",
        "expires_at": "2026-03-01T22:00:00Z",
        "kid": KID,
        "issuer": {"name": "Test Provider", "url": "https://example.com"},
        "subject": {"id": "550e8400-e29b-41d4-a716-446655440000", "display_name": "Test User"},
        "scope": "full",
        "identity": {
            "display_name": "Test User",
            "timezone": "UTC",
            "created_at": "2026-01-01T00:00:00Z",
            "last_updated": "2026-01-01T00:00:00Z",
        },
        "beliefs": [],
        "corrections": [],
        "evolution": [],
    }
    document.update(extra)
    return document


@pytest.mark.req("engram.runtime.any-belief")
def test_the_minimal_fixture_without_injection_is_valid() -> None:
    view = verify_export(_signed(_minimal()), _keys(), now=NOW)
    assert view.system_prompt() == "User: Test User (UTC)."


@pytest.mark.req("engram.runtime.any-belief")
@pytest.mark.parametrize(
    ("belief", "text"),
    [
        ({"id": "1", "statement": "Likes tea", "text": "ignored"}, "Likes tea"),
        ({"belief_id": "2", "text": "Runs marathons"}, "Runs marathons"),
        (
            {"uuid": "3", "subject": "Ada", "predicate": "works at", "object": "ACME"},
            "Ada works at ACME",
        ),
        ({"@id": "4", "key": "diet", "value": "vegetarian"}, "diet: vegetarian"),
        ({"name": "height_cm", "value": 172}, "height_cm: 172"),
        ({"value": "Prefers mornings"}, "Prefers mornings"),
        (
            {"id": "5", "updated_at": "2026-01-01T00:00:00Z", "mood": "calm", "pets": ["cat"]},
            'mood: calm; pets: ["cat"]',
        ),
        ({"id": "6", "created": "2026", "version": 3}, "(a belief with no readable content)"),
    ],
)
def test_any_belief_object_renders_by_the_documented_rule(
    belief: dict[str, Any], text: str
) -> None:
    assert render_belief(belief) == text


@pytest.mark.req("engram.runtime.any-belief")
def test_beliefs_are_kept_by_any_id_member_and_without_one() -> None:
    beliefs = [
        {
            "belief_id": "b-1",
            "text": "Speaks Portuguese",
            "category": "personal",
            "confidence": 0.7,
        },
        {"text": "An anonymous belief"},
        {"id": 42, "text": "A numbered belief"},
    ]
    view = verify_export(_signed(_minimal(beliefs=beliefs)), _keys(), now=NOW)
    assert [b.id for b in view.beliefs] == ["b-1", None, "42"]
    assert view.belief("b-1") is not None
    assert "- [personal] Speaks Portuguese (confidence 0.70)" in view.system_prompt()
    assert "- An anonymous belief" in view.system_prompt()
    assert len(render_belief({"text": "x" * 5000})) == 1000


@pytest.mark.req("engram.runtime.padded-base64url")
def test_padded_base64url_keys_and_signatures_verify_and_bad_ones_are_signature_errors() -> None:
    body = _signed(_minimal(), padded=True)
    assert verify_export(body, _keys(padded=True), now=NOW).kid == KID
    assert b64url_decode("YQ==", allow_padding=True) == b"a"
    for bad in ("YQ=", "Y===", "YQ==YQ==", "Y Q=="):
        with pytest.raises(InvalidRequest):
            b64url_decode(bad, allow_padding=True)
    with pytest.raises(InvalidRequest):
        b64url_decode("YQ==")  # engram's own documents keep one spelling
    # A key that is not base64url makes only its own documents unusable, as a signature error.
    broken = canonicalize(
        {
            "keys": [
                {"kid": "broken", "alg": "Ed25519", "public_key": "not*base64"},
                {"kid": KID, "alg": "Ed25519", "public_key": KEY.public_key().b64url},
            ]
        }
    )
    keys = parse_key_list(broken)
    assert verify_export(_signed(_minimal()), keys, now=NOW).kid == KID
    with pytest.raises(SignatureInvalid, match="published key its entry is unusable"):
        verify_export(_signed(_minimal(kid="broken")), keys, now=NOW)
    with pytest.raises(SignatureInvalid, match="not base64url"):
        verify_export(canonicalize({**_minimal(), "signature": "%%%"}), _keys(), now=NOW)
    with pytest.raises(MalformedExport, match="key list"):
        parse_key_list(b"<html>502</html>")


@pytest.mark.req("engram.runtime.scope-checked")
def test_a_pushed_export_keeps_its_label_but_professional_still_excludes_health() -> None:
    leaky = _minimal(scope="professional", beliefs=[{"id": "h", "text": "x", "tags": ["Health"]}])
    with pytest.raises(ScopeMismatch, match="health or financial"):
        verify_export(_signed(leaky), _keys(), now=NOW)
    with pytest.raises(ScopeMismatch, match="asked for scope 'professional'"):
        verify_export(_signed(_minimal()), _keys(), now=NOW, scope="professional")


def _view() -> ContextView:
    body = _signed(_minimal(beliefs=[{"id": "a", "text": "A", "version": 2}]))
    return verify_export(body, _keys(), now=NOW)


def _diff(**members: Any) -> Verified:
    document = {
        "engram_version": "0.1",
        "issued_at": "2026-03-01T10:05:00Z",
        "expires_at": "2026-03-01T10:15:00Z",
        "kid": KID,
        "subject": {"id": "550e8400-e29b-41d4-a716-446655440000"},
        "scope": "full",
        **members,
    }
    return Verified(document, KID, NOW + timedelta(minutes=5), NOW + timedelta(minutes=15))


@pytest.mark.req("engram.runtime.diff-shapes")
@pytest.mark.parametrize(
    "members",
    [
        {
            "changes": [{"id": "b", "text": "B"}],
            "tombstones": [{"id": "a", "deleted_at": "2026-03-01T10:01:00Z"}],
        },
        {"changes": [{"id": "b", "text": "B"}, {"id": "a", "deleted_at": "2026-03-01T10:01:00Z"}]},
        {"updated": [{"id": "b", "text": "B"}], "tombstones": ["a"]},
        {"changed": [{"id": "b", "text": "B"}], "deleted": [{"belief_id": "a"}]},
        {
            "ops": [
                {"op": "upsert", "belief": {"id": "b", "text": "B"}},
                {"op": "delete", "id": "a"},
            ]
        },
        {
            "operations": [
                {"action": "add", "id": "b", "text": "B"},
                {"action": "remove", "belief": {"id": "a"}},
            ]
        },
    ],
)
def test_every_documented_diff_shape_applies(members: dict[str, Any]) -> None:
    updated = _view().apply_diff(_diff(since="2026-03-01T10:00:00Z", **members))
    assert [b.id for b in updated.beliefs] == ["b"]


@pytest.mark.req("engram.runtime.diff-shapes")
@pytest.mark.parametrize(
    "members",
    [
        {"delta": {"b": "B"}},
        {"changes": [{"text": "no id"}]},
        {"tombstones": [7.5]},
        {"ops": [{"op": "merge", "id": "b"}]},
        {"changes": {"id": "b"}},
    ],
)
def test_a_diff_shape_not_understood_is_never_applied(members: dict[str, Any]) -> None:
    from engram.runtime import DiffNotApplicableError

    with pytest.raises(DiffNotApplicableError, match="not understood"):
        _view().apply_diff(_diff(**members))


@pytest.mark.req("engram.runtime.since-instants")
@pytest.mark.parametrize(
    ("since", "applies"),
    [
        ("2026-03-01T10:00:00Z", True),
        ("2026-03-01T12:00:00.000+02:00", True),  # the same instant, spelled otherwise
        ("2026-03-01T09:59:59Z", True),  # rounded down: covers everything after the cursor
        ("2026-03-01T10:00:01Z", False),  # would leave a gap
        ("opaque-token", False),
    ],
)
def test_since_is_compared_as_an_instant(since: str, applies: bool) -> None:
    from engram.runtime import DiffNotApplicableError

    diff = _diff(since=since, changes=[])
    if applies:
        assert _view().apply_diff(diff).issued_at == NOW + timedelta(minutes=5)
    else:
        with pytest.raises(DiffNotApplicableError):
            _view().apply_diff(diff)


@pytest.mark.req("engram.runtime.diff-base-checked")
def test_a_diff_for_another_subject_scope_or_older_version_is_not_applied() -> None:
    from engram.runtime import DiffNotApplicableError

    view = _view()
    for diff in (
        _diff(changes=[], subject={"id": "someone-else"}),
        _diff(changes=[], scope="professional"),
        _diff(changes=[{"id": "a", "text": "old A", "version": 1}]),
    ):
        with pytest.raises(DiffNotApplicableError):
            view.apply_diff(diff)
    older = Verified(
        _diff(changes=[]).document, KID, NOW - timedelta(minutes=1), NOW + timedelta(minutes=9)
    )
    with pytest.raises(DiffNotApplicableError, match="issued before"):
        view.apply_diff(older)


class _Alternate(httpx.AsyncBaseTransport):
    """Two provider workers behind one address: each request goes to the next worker."""

    def __init__(self, *apps: Any) -> None:
        self.transports = [httpx.ASGITransport(app=app) for app in apps]
        self.turn = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        transport = self.transports[self.turn % len(self.transports)]
        if request.url.path == "/v1/context":
            self.turn += 1
        return await transport.handle_async_request(request)


@pytest.mark.req("engram.runtime.rollback-refused")
async def test_an_older_export_with_the_same_content_is_not_a_rollback(memory_store: Store) -> None:
    # Each worker signs and caches its own bytes: the second answer can be older and equal.
    clock = FixedClock(NOW)
    demo = seed_demo(memory_store, clock)
    early = create_app(ProviderConfig(), memory_store, clock)
    late = create_app(ProviderConfig(), memory_store, clock)
    transport = _Alternate(late, early)
    async with AsyncEngramClient(
        RuntimeConfig("http://provider.test", demo.token),
        transport=httpx.ASGITransport(app=early),
        clock=clock,
    ) as warm:
        await warm.fetch()  # the early worker signs at 10:00 and caches it
    clock.advance(timedelta(minutes=5))
    config = RuntimeConfig("http://provider.test", demo.token)
    async with AsyncEngramClient(config, transport=transport, clock=clock) as engram:
        newer = await engram.fetch()  # the late worker signs at 10:05
        older = await engram.fetch()  # the early worker's cached 10:00 bytes
    assert older.issued_at < newer.issued_at
    assert format_instant(older.issued_at) == "2026-03-01T10:00:00Z"
    assert [b.id for b in older.beliefs] == [b.id for b in newer.beliefs]
