"""The runtime's protocol logic, written once as operations that yield HTTP calls.

Engram v0.1 conformance, runtime requirements of every tier: fetch at session start
(``context``), verify every export and diff against ``/.well-known/engram-keys`` (``_verify``),
refresh before expiry and fall back to the last verified export while the provider is
unreachable but never past its ``expires_at``, incremental sync through ``/v1/context/diff``,
and corrections that stay proposals until the subject confirms them.

No I/O happens here: each operation is a generator that yields :class:`~engram.runtime._wire.Call`
values and is sent the responses, so :class:`EngramClient` and :class:`AsyncEngramClient` drive
the very same logic. Time comes from an injected :class:`~engram.core.clock.Clock`.

Beyond the signature, a validly signed document is used only when it is the one asked for
(docs/spec/runtime.md, "Documents that are not the one asked for"): the scope requested, the
session's subject, not older than an export already accepted for that scope (unless it says the
same thing), and, for a diff, based on the view it updates. A diff that is unsigned, fails any
check, or has a shape not understood is never applied and never raised: the full export is
fetched and verified instead, and the reason is logged (``engram.runtime``) and kept in
``last_diff_fallback``.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from engram.core.canonical import Json, JsonObject, canonicalize, parse_object
from engram.core.clock import Clock, format_instant, parse_instant
from engram.errors import (
    CapacityError,
    EngramError,
    ExportExpired,
    InvalidRequest,
    KeyExpired,
    RemoteError,
    RollbackRefused,
    SubjectMismatch,
    UnknownKeyId,
    UnsupportedVersion,
    VerificationError,
)
from engram.runtime import _wire
from engram.runtime._config import SUPPORTED_VERSIONS, RuntimeConfig
from engram.runtime._verify import (
    MAX_LIFETIME,
    PublishedKey,
    Verified,
    check_fresh,
    check_version,
    parse_document,
    parse_key_list,
    verify_signed,
)
from engram.runtime._view import ContextView, DiffNotApplicableError, content_digest
from engram.runtime._wire import Call, Op

LOG = logging.getLogger("engram.runtime")


@dataclass(frozen=True, slots=True)
class Discovery:
    """``/.well-known/engram`` as read: the protocol version and the endpoints it names."""

    engram_version: str
    document: Mapping[str, Json]
    provider_url: str

    def endpoint(self, name: str, default: str) -> str:
        """Where ``endpoints[name]`` of the discovery document points, else the spec's path.

        Only an endpoint on the provider's own origin is followed: the bearer token goes to
        the provider it was configured for and nowhere else (docs/spec/runtime.md, "Discovery").
        """
        endpoints = self.document.get("endpoints")
        value = endpoints.get(name) if isinstance(endpoints, dict) else None
        if not isinstance(value, str) or not value:
            return default
        if value.startswith("/") and not value.startswith("//"):
            return value
        origin = _origin(value)
        if origin is not None and origin == _origin(self.provider_url):
            return value
        return default


def _origin(url: str) -> tuple[str, str] | None:
    """(scheme, host:port) of ``url``; None when the URL cannot be parsed (a bad port), which
    matches no origin, so an endpoint a provider advertises that way is not followed."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        return None
    return scheme, f"{(parts.hostname or '').lower()}:{port}"


@dataclass(frozen=True, slots=True)
class ProposedCorrection:
    """A correction this runtime sent; the provider holds it until the subject decides.

    ``status`` is what the provider last said (``pending_user_confirmation`` on receipt).
    Nothing in the local view changes because of it (Tier 2: "Does NOT treat a correction as
    authoritative until user confirms").
    """

    id: str
    belief_id: str
    new_value: str
    reason: str
    runtime_id: str
    status: str
    idempotency_key: str
    proposed_at: datetime
    response: Mapping[str, Json] = field(default_factory=dict)


class Engine:
    """The state one runtime session keeps: discovery, the key list, the view, proposals."""

    def __init__(self, config: RuntimeConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.discovery: Discovery | None = None
        self.keys: dict[str, PublishedKey] | None = None
        self.view: ContextView | None = None
        self.pending: dict[str, ProposedCorrection] = {}
        self.last_refresh_error: EngramError | None = None
        self.last_diff_fallback: str | None = None
        self.subject_id: str | None = config.subject_id
        # Per scope: (issued_at, content digest) of the newest export accepted (rollback check).
        self.accepted: dict[str, tuple[datetime, str]] = {}

    # -- discovery and keys -------------------------------------------------------------

    def discover(self) -> Op[Discovery]:
        """Read ``/.well-known/engram`` and refuse a provider that speaks no version we read."""
        call = Call("GET", _wire.DISCOVERY_PATH, authenticated=False)
        body = _wire.expect_ok(call, (yield call))
        document = parse_document(body, "discovery document")
        if isinstance(document.get("engram_version"), str):
            check_version(document, "discovery document")
        else:
            # A provider may list several versions instead of naming one.
            offered = document.get("supported_versions")
            if not isinstance(offered, list) or not SUPPORTED_VERSIONS.intersection(offered):
                check_version(document, "discovery document")
        version = document.get("engram_version")
        self.discovery = Discovery(
            version if isinstance(version, str) else "0.1", document, self.config.base_url
        )
        return self.discovery

    def _discovered(self) -> Op[Discovery]:
        if self.discovery is None:
            return (yield from self.discover())
        return self.discovery

    def fetch_keys(self) -> Op[dict[str, PublishedKey]]:
        """Fetch ``/.well-known/engram-keys`` and replace the cached key list (Tier 3)."""
        discovery = yield from self._discovered()
        call = Call("GET", discovery.endpoint("keys", _wire.KEYS_PATH), authenticated=False)
        self.keys = parse_key_list(
            _wire.expect_ok(call, (yield call)),
            pinned_kids=self.config.pinned_kids,
            pinned_sha256=self.config.pinned_key_list_sha256,
        )
        return self.keys

    def _verify(self, document: JsonObject, what: str) -> Op[Verified]:
        """Verify with the cached keys; an unknown kid (or one whose cached entry had expired)
        refetches the key list once, then fails.

        When the list was fetched for this very verification it is already current, and the
        document is refused without a second request (docs/spec/runtime.md, "Keys").
        """
        fetched_now = self.keys is None
        keys = self.keys if self.keys is not None else (yield from self.fetch_keys())
        try:
            return self._verify_with(document, keys, what)
        except (UnknownKeyId, KeyExpired):
            if fetched_now:
                raise
        keys = yield from self.fetch_keys()
        return self._verify_with(document, keys, what)

    def _verify_with(
        self, document: JsonObject, keys: Mapping[str, PublishedKey], what: str
    ) -> Verified:
        return verify_signed(
            document,
            keys,
            now=self.clock.now(),
            clock_skew=self.config.clock_skew,
            what=what,
            pinned_kids=self.config.pinned_kids,
        )

    # -- exports, diffs and the schedule --------------------------------------------------

    def fetch(self, scope: str | None = None) -> Op[ContextView]:
        """GET ``/v1/context`` (scoped when asked), verify it, check it is the export asked for,
        and make it the session's view when it is for the configured scope."""
        discovery = yield from self._discovered()
        wanted = scope if scope is not None else self.config.scope
        params = () if wanted is None else (("scope", wanted),)
        call = Call("GET", discovery.endpoint("context", _wire.CONTEXT_PATH), params)
        response = yield call
        delay = _wire.short_retry_after(response)
        if delay is not None:  # rate limited for a moment: wait it out once, then ask again
            response = yield dataclasses.replace(call, wait_before=delay)
        body = _wire.expect_ok(call, response)
        verified = yield from self._verify(parse_document(body, "export"), "export")
        view = ContextView.from_export(verified, wanted)
        self._accept(view)
        if wanted == self.config.scope:
            self.view = view
            self._reconcile(view)
        return view

    def _accept(self, view: ContextView) -> None:
        """Refuse a validly signed export about another subject, or older than one already
        accepted for its scope unless it says the same thing (another worker signed the same
        state earlier): an old export would silently undo what changed since."""
        if self.subject_id is not None and view.subject_id != self.subject_id:
            raise SubjectMismatch(
                f"the export is about subject {view.subject_id!r}, this session's is "
                f"{self.subject_id!r}"
            )
        digest = content_digest(view.export)
        newest = self.accepted.get(view.scope)
        if newest is not None and view.issued_at < newest[0] and digest != newest[1]:
            raise RollbackRefused(
                f"the export was issued at {format_instant(view.issued_at)}, before the "
                f"{view.scope} export already accepted ({format_instant(newest[0])}), and says "
                "something else: refusing to roll the context back"
            )
        self.subject_id = view.subject_id
        if newest is None or view.issued_at >= newest[0]:
            self.accepted[view.scope] = (view.issued_at, digest)

    def sync(self) -> Op[ContextView]:
        """Move the view forward with ``/v1/context/diff?since=<cursor>`` (Tier 2).

        With no view yet, or when the diff cannot be used (the provider has none for this
        cursor, it is unsigned, fails verification, has a shape not understood, or does not
        follow this view), the whole export is fetched and verified instead.
        """
        view = self.current()
        if view is None or self._base_issued_at(view) + MAX_LIFETIME <= self.clock.now():
            # Diffs carry beliefs, not the whole identity: rebase on a full export at least
            # once a day (docs/spec/runtime.md, "Incremental sync").
            return (yield from self.fetch())
        discovery = yield from self._discovered()
        params: tuple[tuple[str, str], ...] = (("since", view.cursor),)
        if self.config.scope is not None:
            params += (("scope", self.config.scope),)
        call = Call("GET", discovery.endpoint("diff", _wire.DIFF_PATH), params)
        response = yield call
        if response.status_code in _NO_DIFF:
            # The provider cannot answer from this cursor (too old, unknown, or no diff
            # support): a full export is always a correct answer.
            return (yield from self._fall_back(f"the diff request answered {response.status_code}"))
        body = _wire.expect_ok(call, response)
        try:
            document = parse_document(body, "diff")
            if "signature" not in document:
                raise DiffNotApplicableError("the diff is not signed")
            verified = yield from self._verify(document, "diff")
            updated = view.apply_diff(verified)
        except (VerificationError, UnsupportedVersion, DiffNotApplicableError) as e:
            reason = e.message if isinstance(e, EngramError) else str(e)
            return (yield from self._fall_back(reason))
        self.last_diff_fallback = None
        self.view = updated
        self._reconcile(updated)
        return updated

    def _fall_back(self, reason: str) -> Op[ContextView]:
        LOG.info("diff not applied (%s); fetching and verifying the full export instead", reason)
        self.last_diff_fallback = reason
        return (yield from self.fetch())

    @staticmethod
    def _base_issued_at(view: ContextView) -> datetime:
        issued = view.export.get("issued_at")
        return parse_instant(issued) if isinstance(issued, str) else view.issued_at

    def current(self) -> ContextView | None:
        """The view if it may still be used now; an expired one is dropped, never returned."""
        if self.view is not None and self.clock.now() >= self.view.expires_at:
            self.view = None
        return self.view

    def context(self) -> Op[ContextView]:
        """The view to inject now: fetched at session start, refreshed once within
        ``refresh_margin`` of expiry, and while the provider is unreachable the last verified
        view until its ``expires_at`` (exclusive), never after."""
        held = self.view
        view = self.current()
        if view is None:
            try:
                return (yield from self.fetch())
            except (RemoteError, CapacityError) as e:
                if held is None:
                    raise
                raise ExportExpired(
                    f"the last verified export expired at {format_instant(held.expires_at)} "
                    f"and a fresh one could not be fetched: {e.message}"
                ) from e
        if self.clock.now() < view.expires_at - self.config.refresh_margin:
            return view
        try:
            refreshed = yield from self.sync()
        except (RemoteError, CapacityError) as e:
            self.last_refresh_error = e
            check_fresh(view.expires_at, self.clock.now())
            return view
        self.last_refresh_error = None
        return refreshed

    # -- corrections ----------------------------------------------------------------------

    def propose_correction(
        self, belief_id: str, new_value: str, reason: str = ""
    ) -> Op[ProposedCorrection]:
        """POST ``/v1/context/correct`` with this runtime's id and an Idempotency-Key (Tier 2).

        One retry with the same key when the provider could not be reached, so a correction
        that did arrive is not recorded twice. The local view is left as it is.
        """
        if not belief_id or not new_value.strip():
            raise InvalidRequest("a correction needs a belief id and a non-empty new value")
        discovery = yield from self._discovered()
        now = self.clock.now()
        body: JsonObject = {
            "belief_id": belief_id,
            "new_value": new_value,
            "runtime_id": self.config.runtime_id,
            "timestamp": format_instant(now),
        }
        if reason:
            body["reason"] = reason
        key = str(uuid.uuid4())
        call = Call(
            "POST",
            discovery.endpoint("correct", _wire.CORRECT_PATH),
            body=canonicalize(body),
            headers=(("Content-Type", "application/json"), ("Idempotency-Key", key)),
        )
        try:
            response = yield call
        except RemoteError:
            response = yield call
        answer = _object(_wire.expect_ok(call, response), "correction response")
        status = answer.get("status")
        ident = answer.get("id") or answer.get("correction_id")
        proposed = ProposedCorrection(
            id=ident if isinstance(ident, str) else key,
            belief_id=belief_id,
            new_value=new_value,
            reason=reason,
            runtime_id=self.config.runtime_id,
            status=status if isinstance(status, str) else "pending_user_confirmation",
            idempotency_key=key,
            proposed_at=now,
            response=answer,
        )
        if proposed.status == "pending_user_confirmation":
            self.pending[proposed.id] = proposed
        return proposed

    def _reconcile(self, view: ContextView) -> None:
        """Forget proposals the newly verified view shows decided: listed with a final status
        in the export's ``corrections``, or visible as the belief's current statement."""
        decided = {
            c.get("id")
            for c in view.corrections
            if c.get("status") not in (None, "pending_user_confirmation")
        }
        for ident, proposed in list(self.pending.items()):
            belief = view.belief(proposed.belief_id)
            if ident in decided or (belief is not None and belief.mentions(proposed.new_value)):
                del self.pending[ident]


_NO_DIFF = frozenset({400, 404, 405, 409, 410, 501})


def _object(body: bytes, what: str) -> dict[str, Any]:
    return parse_object(body, what=f"the {what}", error=RemoteError)


__all__ = ["Discovery", "Engine", "ProposedCorrection"]
