"""Independent Engram v0.1 providers for interoperability tests: they do NOT import engram.

Each peer is written from the conformance page alone and differs from engram's provider on
every point the page leaves open (issue 12, "Tests"):

=============  ====================  ===================  ===================  ===================
               triples               statements           records              keyvalue
=============  ====================  ===================  ===================  ===================
HTTP           bare ASGI callable    Starlette            bare ASGI callable   Starlette
RFC 8785       rfc8785 package       written by hand      rfc8785 package      written by hand
belief         belief_id + subject/  uuid + text +        @id + attributes +   id + key/value +
               predicate/object      category + weight    tags                 domain
diff           op log (op: delete)   UNSIGNED, changed +  changes; deleted     updated +
               signed                deleted [{id, at}]   ones carry           tombstones: bare
                                                          deleted_at, signed   ids, signed
base64url      padded                unpadded             key padded, sig not  unpadded
key list       bare array            {"keys": [...]}      {"keys": [...]}      bare array
instants       +02:00, milliseconds  Z, milliseconds      Z, whole seconds     +05:30, micros
kid            URN                   URL                  URL with fragment    URN (uuid)
extra members  UTF-16 order differs  -                    -                    UTF-16 order differs
injection      none                  its own text         none                 its own text
since          echoed normalised     echoed as sent       not echoed           echoed as sent
=============  ====================  ===================  ===================  ===================

Faults (switchable, several at once): see :data:`FAULTS`. A peer's state lives in memory behind
a lock; tests change it through its admin routes (as a delete hook would) or directly.
"""

from __future__ import annotations

import json
import secrets
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Literal
from urllib.parse import parse_qsl

from peer_crypto import Jcs, PeerKey, b64url, jcs_by_hand, jcs_package

FAULTS: dict[str, str] = {
    "auto-apply": "a correction replaces the belief at once, without the user",
    "sensitive-in-professional": "scope=professional carries the health and financial beliefs",
    "expired": "exports and diffs expired an hour ago",
    "bad-signature": "signatures are over other bytes",
    "missing-tombstones": "diffs leave deletions out",
    "scope-ignored": "the scope parameter is ignored: the full export, labelled full",
    "wrong-scope-label": "scope=professional is filtered but labelled full",
}
"""The faults of issue 12's matrix: name -> what the peer then does."""

RUNTIME_FAULTS: dict[str, str] = {
    "other-subject": "exports are about another subject",
    "rollback": "exports are an older, different state, issued two hours ago",
    "diff-base": "diffs start an hour after the since asked for",
    "expired-key": "the published key expired before the documents it signs",
    "substituted-key": "another key, under another kid, signs and is published",
    "unknown-diff-shape": "diffs list what changed under a member no documented shape has",
}
"""Faults only a runtime can be fooled by (documents that are not the ones asked for)."""

SENSITIVE = ("health", "financial")
DISPLAY_NAME = "Peer User"
TIMEZONE = "Europe/Lisbon"


@dataclass
class PeerBelief:
    """A peer's belief, before it is written in the peer's own shape."""

    id: str
    category: str
    predicate: str
    object: str
    updated: datetime
    deleted: datetime | None = None


def _seed(ids: Callable[[int], str], now: datetime) -> list[PeerBelief]:
    rows = [
        ("professional", "works as", "a data scientist"),
        ("preference", "prefers", "green tea"),
        ("health", "is allergic to", "penicillin"),
        ("financial", "has a mortgage with", "a small bank"),
        ("personal", "lives in", "Lisbon"),
    ]
    return [
        PeerBelief(ids(i), c, p, o, now - timedelta(days=1))
        for i, (c, p, o) in enumerate(rows, start=1)
    ]


# -- the four shapes --------------------------------------------------------------------------


def _offset(hours: int, minutes: int = 0) -> timezone:
    return timezone(timedelta(hours=hours, minutes=minutes))


def instant_plus_two_millis(moment: datetime) -> str:
    return moment.astimezone(_offset(2)).isoformat(timespec="milliseconds")


def instant_z_millis(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def instant_z_seconds(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def instant_india_micros(moment: datetime) -> str:
    return moment.astimezone(_offset(5, 30)).isoformat(timespec="microseconds")


def triple(b: PeerBelief, at: Callable[[datetime], str]) -> dict[str, Any]:
    return {
        "belief_id": b.id,
        "subject": "the user",
        "predicate": b.predicate,
        "object": b.object,
        "domain": b.category,
        "observed_at": at(b.updated),
    }


def statement(b: PeerBelief, at: Callable[[datetime], str]) -> dict[str, Any]:
    return {
        "uuid": b.id,
        "text": f"The user {b.predicate} {b.object}.",
        "category": b.category,
        "weight": 0.8,
        "updated": at(b.updated),
    }


def record(b: PeerBelief, at: Callable[[datetime], str]) -> dict[str, Any]:
    return {
        "@id": b.id,
        "attributes": {b.predicate: b.object},
        "tags": [b.category],
        "recorded_at": at(b.updated),
    }


def keyvalue(b: PeerBelief, at: Callable[[datetime], str]) -> dict[str, Any]:
    return {
        "id": b.id,
        "key": b.predicate,
        "value": b.object,
        "domain": b.category,
        "updated_at": at(b.updated),
    }


DiffShape = Literal["ops", "lists", "flagged", "bare-ids"]


@dataclass(frozen=True)
class Profile:
    """Everything one peer chooses where the page leaves the choice open."""

    name: str
    http: Literal["asgi", "starlette"]
    jcs: Jcs
    shape: Callable[[PeerBelief, Callable[[datetime], str]], dict[str, Any]]
    id_member: str
    belief_ids: Callable[[int], str]
    diff: DiffShape
    diff_signed: bool
    signature_padded: bool
    key_padded: bool
    key_list_bare: bool
    instant: Callable[[datetime], str]
    kid: str
    extra_members: dict[str, Any] = field(default_factory=dict)
    injection: bool = False
    echo_since: Literal["normalised", "as-sent", "none"] = "as-sent"


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="triples",
            http="asgi",
            jcs=jcs_package,
            shape=triple,
            id_member="belief_id",
            belief_ids=lambda i: f"urn:peer:triples:belief:{i}",
            diff="ops",
            diff_signed=True,
            signature_padded=True,
            key_padded=True,
            key_list_bare=True,
            instant=instant_plus_two_millis,
            kid="urn:peer:triples:key:2026-03",
            # U+FB01 sorts after U+1F600 by code point and before it by UTF-16 code units.
            extra_members={"x-\ufb01": "ligature", "x-\U0001f600": "emoji", "provider_build": 7},
            echo_since="normalised",
        ),
        Profile(
            name="statements",
            http="starlette",
            jcs=jcs_by_hand,
            shape=statement,
            id_member="uuid",
            belief_ids=lambda i: str(uuid.UUID(int=0x5EED0000 + i)),
            diff="lists",
            diff_signed=False,
            signature_padded=False,
            key_padded=False,
            key_list_bare=False,
            instant=instant_z_millis,
            kid="https://statements.peer.example/keys/2026-03",
            injection=True,
        ),
        Profile(
            name="records",
            http="asgi",
            jcs=jcs_package,
            shape=record,
            id_member="@id",
            belief_ids=lambda i: f"rec-{i:04d}",
            diff="flagged",
            diff_signed=True,
            signature_padded=False,
            key_padded=True,
            key_list_bare=False,
            instant=instant_z_seconds,
            kid="https://records.peer.example/.well-known/jwks.json#k1",
            echo_since="none",
        ),
        Profile(
            name="keyvalue",
            http="starlette",
            jcs=jcs_by_hand,
            shape=keyvalue,
            id_member="id",
            belief_ids=lambda i: f"kv:{i}",
            diff="bare-ids",
            diff_signed=True,
            signature_padded=False,
            key_padded=False,
            key_list_bare=True,
            instant=instant_india_micros,
            kid=f"urn:uuid:{uuid.UUID(int=0xC0FFEE)}",
            extra_members={"\ue000-private": 1, "\U00010000-linear-b": 2},
            injection=True,
        ),
    )
}


# -- a peer -----------------------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    body: bytes
    content_type: str = "application/json"


class Peer:
    """One independent provider: state, faults and the documents it serves."""

    def __init__(self, profile: Profile, base_url: str = "http://peer.invalid") -> None:
        self.profile = profile
        self.base_url = base_url
        self.token = f"peer-{profile.name}-{secrets.token_hex(8)}"
        self.admin_token = f"peer-admin-{profile.name}-{secrets.token_hex(8)}"
        self.key = PeerKey()
        self.other_key = PeerKey()
        self.subject_id = f"subject-{profile.name}"
        # A real key list is stable between fetches (runtimes may pin its digest).
        self.keys_created = datetime.now(UTC).replace(microsecond=0) - timedelta(days=10)
        self.lock = threading.Lock()
        self.faults: frozenset[str] = frozenset()
        self.reset()

    # -- state --------------------------------------------------------------------------

    def reset(self, faults: frozenset[str] = frozenset()) -> None:
        unknown = faults - FAULTS.keys() - RUNTIME_FAULTS.keys()
        assert not unknown, f"unknown faults {unknown}"
        with self.lock:
            self.faults = faults
            self.created = datetime.now(UTC) - timedelta(days=30)
            self.beliefs = _seed(self.profile.belief_ids, datetime.now(UTC))
            self.corrections: list[dict[str, Any]] = []

    def live(self) -> list[PeerBelief]:
        return [b for b in self.beliefs if b.deleted is None]

    def delete(self, belief_id: str) -> bool:
        with self.lock:
            for b in self.beliefs:
                if b.id == belief_id and b.deleted is None:
                    b.deleted = datetime.now(UTC)
                    return True
        return False

    def add(self, category: str, predicate: str, obj: str) -> str:
        with self.lock:
            ident = self.profile.belief_ids(100 + len(self.beliefs))
            self.beliefs.append(PeerBelief(ident, category, predicate, obj, datetime.now(UTC)))
            return ident

    def shaped(self, belief: PeerBelief) -> dict[str, Any]:
        return self.profile.shape(belief, self.profile.instant)

    # -- documents ----------------------------------------------------------------------

    def _window(self, now: datetime, ttl: timedelta) -> tuple[datetime, datetime]:
        if "expired" in self.faults:
            return now - timedelta(hours=3), now - timedelta(hours=1)
        if "rollback" in self.faults:
            return now - timedelta(hours=2), now - timedelta(hours=2) + ttl
        return now, now + ttl

    def _signing(self) -> tuple[str, PeerKey]:
        if "substituted-key" in self.faults:
            return self.profile.kid + "-substitute", self.other_key
        return self.profile.kid, self.key

    def _head(self, scope: str, issued: datetime, expires: datetime) -> dict[str, Any]:
        kid, _ = self._signing()
        subject = "someone-else" if "other-subject" in self.faults else self.subject_id
        label = "full" if "wrong-scope-label" in self.faults and scope == "professional" else scope
        return {
            "engram_version": "0.1",
            "issued_at": self.profile.instant(issued),
            "expires_at": self.profile.instant(expires),
            "kid": kid,
            "issuer": {"name": f"peer {self.profile.name}", "url": self.base_url},
            "subject": {"id": subject, "display_name": DISPLAY_NAME},
            "scope": label,
            **self.profile.extra_members,
        }

    def _admitted(self, scope: str) -> Callable[[PeerBelief], bool]:
        if scope == "professional" and "sensitive-in-professional" not in self.faults:
            return lambda b: b.category not in SENSITIVE
        return lambda _: True

    def export(self, scope: str) -> bytes:
        if "scope-ignored" in self.faults:
            scope = "full"
        now = datetime.now(UTC)
        issued, expires = self._window(now, timedelta(hours=12))
        with self.lock:
            admitted = self._admitted(scope)
            beliefs = [b for b in self.live() if admitted(b)]
            if "rollback" in self.faults:
                beliefs = [replace(b, object=b.object + " (as it was)") for b in beliefs]
            document = self._head(scope, issued, expires)
            document.update(
                {
                    "identity": {
                        "display_name": DISPLAY_NAME,
                        "timezone": TIMEZONE,
                        "created_at": self.profile.instant(self.created),
                        "last_updated": self.profile.instant(self.created),
                    },
                    "beliefs": [self.shaped(b) for b in beliefs],
                    "corrections": [dict(c) for c in self.corrections]
                    if self.profile.injection
                    else [],
                    "evolution": [],
                }
            )
            if self.profile.injection:
                lines = [f"{DISPLAY_NAME}, {TIMEZONE}. What we know:"]
                lines += [f"* {b.predicate} {b.object}" for b in beliefs]
                document["system_prompt_injection"] = "\n".join(lines)
        return self._signed(document)

    def diff(self, since_text: str, scope: str) -> bytes:
        since = _parse(since_text)
        if "scope-ignored" in self.faults:
            scope = "full"
        now = datetime.now(UTC)
        issued, expires = self._window(now, timedelta(minutes=10))
        with self.lock:
            admitted = self._admitted(scope)
            changed = [
                b for b in self.beliefs if b.deleted is None and b.updated > since and admitted(b)
            ]
            deleted = [
                b
                for b in self.beliefs
                if b.deleted is not None and b.deleted > since and admitted(b)
            ]
        if "missing-tombstones" in self.faults:
            deleted = []
        document = self._head(scope, issued, expires)
        starts = since + timedelta(hours=1) if "diff-base" in self.faults else since
        if self.profile.echo_since == "normalised" or "diff-base" in self.faults:
            document["since"] = self.profile.instant(starts)
        elif self.profile.echo_since == "as-sent":
            document["since"] = since_text
        document["until"] = self.profile.instant(issued)
        if "unknown-diff-shape" in self.faults:
            document["delta"] = {
                "set": [self.shaped(b) for b in changed],
                "unset": [b.id for b in deleted],
            }
        else:
            document.update(self._diff_members(changed, deleted))
        if not self.profile.diff_signed:
            return self.profile.jcs(document)
        return self._signed(document)

    def _diff_members(self, changed: list[PeerBelief], deleted: list[PeerBelief]) -> dict[str, Any]:
        at = self.profile.instant
        shape = self.profile.diff
        if shape == "ops":
            ops = [{"op": "upsert", "belief": self.shaped(b)} for b in changed]
            ops += [
                {"op": "delete", "belief_id": b.id, "at": at(b.deleted or b.updated)}
                for b in deleted
            ]
            return {"ops": ops}
        if shape == "lists":
            return {
                "changed": [self.shaped(b) for b in changed],
                "deleted": [
                    {"id": b.id, "deleted_at": at(b.deleted or b.updated)} for b in deleted
                ],
            }
        if shape == "flagged":
            flagged = [
                {self.profile.id_member: b.id, "deleted_at": at(b.deleted or b.updated)}
                for b in deleted
            ]
            return {"changes": [self.shaped(b) for b in changed] + flagged}
        return {"updated": [self.shaped(b) for b in changed], "tombstones": [b.id for b in deleted]}

    def _signed(self, document: dict[str, Any]) -> bytes:
        _, key = self._signing()
        preimage = self.profile.jcs(document)
        if "bad-signature" in self.faults:
            preimage = self.profile.jcs({**document, "issued_at": "1999-01-01T00:00:00Z"})
        signature = b64url(key.sign(preimage), padded=self.profile.signature_padded)
        return self.profile.jcs({**document, "signature": signature})

    def key_list(self) -> bytes:
        kid, key = self._signing()
        created = self.keys_created
        expired = "expired-key" in self.faults
        expires = created + timedelta(days=9 if expired else 70)
        entries = [
            {
                "kid": kid,
                "alg": "Ed25519",
                "public_key": b64url(key.public_raw(), padded=self.profile.key_padded),
                "created_at": self.profile.instant(created),
                "expires_at": self.profile.instant(expires),
                "use": "sig",
            }
        ]
        return self.profile.jcs(entries if self.profile.key_list_bare else {"keys": entries})

    def discovery(self) -> bytes:
        return self.profile.jcs(
            {
                "engram_version": "0.1",
                "issuer": {"name": f"peer {self.profile.name}", "url": self.base_url},
                "endpoints": {
                    "context": "/v1/context",
                    "diff": "/v1/context/diff",
                    "correct": "/v1/context/correct",
                    "keys": "/.well-known/engram-keys",
                },
                "scopes": ["full", "professional"],
            }
        )

    # -- corrections --------------------------------------------------------------------

    def correct(self, body: Any) -> Answer:
        if not isinstance(body, dict):
            return self.error(400, "invalid_request", "the body is not a JSON object")
        for name in ("belief_id", "new_value", "runtime_id"):
            if not isinstance(body.get(name), str) or not body[name]:
                return self.error(400, "invalid_request", f"{name} is required")
        ident = f"corr-{secrets.token_hex(6)}"
        with self.lock:
            if "auto-apply" in self.faults:
                for b in self.beliefs:
                    if b.id == body["belief_id"]:
                        b.object = body["new_value"]
                        b.updated = datetime.now(UTC)
            self.corrections.append(
                {
                    "correction_id": ident,
                    "belief_id": body["belief_id"],
                    "proposed": body["new_value"],
                    "state": "pending_user_confirmation",
                }
            )
        return self.json(202, {"correction_id": ident, "status": "pending_user_confirmation"})

    # -- HTTP, framework-free -----------------------------------------------------------

    def json(self, status: int, value: Any) -> Answer:
        return Answer(status, self.profile.jcs(value))

    def error(self, status: int, code: str, message: str) -> Answer:
        return self.json(status, {"error": {"code": code, "message": message, "status": status}})

    def handle(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> Answer:
        """One request as plain values; both HTTP fronts call this."""
        params = dict(parse_qsl(query, keep_blank_values=True))
        if method == "GET" and path == "/.well-known/engram":
            return Answer(200, self.discovery())
        if method == "GET" and path == "/.well-known/engram-keys":
            return Answer(200, self.key_list())
        if path.startswith("/admin/"):
            return self._admin(method, path, headers, body)
        if headers.get("authorization") != f"Bearer {self.token}":
            return self.error(401, "unauthorized", "Token missing or invalid")
        scope = params.get("scope", "full")
        if scope not in ("full", "professional"):
            return self.error(400, "invalid_scope", f"unknown scope {scope[:40]!r}")
        if method == "GET" and path == "/v1/context":
            return Answer(200, self.export(scope))
        if method == "GET" and path == "/v1/context/diff":
            since = params.get("since")
            if since is None or _parse_or_none(since) is None:
                return self.error(400, "invalid_request", "since must be an RFC 3339 date-time")
            return Answer(200, self.diff(since, scope))
        if method == "POST" and path == "/v1/context/correct":
            try:
                # The standard library's parser, as a small provider would use.
                parsed = json.loads(body or b"null")
            except ValueError:
                return self.error(400, "invalid_request", "the body is not JSON")
            return self.correct(parsed)
        return self.error(404, "invalid_request", f"no route {method} {path}")

    def _admin(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Answer:
        if headers.get("authorization") != f"Bearer {self.admin_token}":
            return self.error(401, "unauthorized", "admin token missing or invalid")
        prefix = "/admin/beliefs/"
        if method == "DELETE" and path.startswith(prefix):
            ident = path[len(prefix) :]
            if not self.delete(ident):
                return self.error(404, "belief_not_found", f"no belief {ident}")
            return self.json(200, {"deleted": ident, "by": "peer admin"})
        return self.error(404, "invalid_request", f"no admin route {method} {path}")


def _parse(text: str) -> datetime:
    moment = _parse_or_none(text)
    assert moment is not None
    return moment


def _parse_or_none(text: str) -> datetime | None:
    # A "+" the client did not encode arrives as a space.
    text = text.replace(" ", "+")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


__all__ = ["FAULTS", "PROFILES", "RUNTIME_FAULTS", "Answer", "Peer", "PeerBelief", "Profile"]
