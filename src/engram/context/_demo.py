"""The demo subject ``engram demo`` and ``engram serve --demo`` use (README's first command).

Its beliefs cover every category, including the sensitive ``health`` and ``financial`` ones, so
``?scope=professional`` visibly drops something; its token carries every permission. Both
commands reuse one demo subject and one token (kept in a 0600 file the CLI names) instead of
adding a subject or a token at every start; docs/spec/context-model.md "The demo subject".
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from datetime import timedelta
from pathlib import Path

from engram.context._beliefs import (
    add_belief,
    create_subject,
    ensure_schema,
    list_beliefs,
    list_subjects,
)
from engram.context._model import DemoSubject, Permission, TokenGrant
from engram.context._tokens import authenticate_token, issue_token, revoke_token
from engram.core.clock import Clock
from engram.errors import EngramError, StoreError
from engram.store import Store

DEMO_NAME = "Ada Example"
DEMO_TIMEZONE = "Europe/London"
DEMO_TOKEN_TTL = timedelta(days=30)
DEMO_TOKEN_RENEW = timedelta(days=1)  # a kept token closer to expiry than this is replaced

DEMO_BELIEFS: tuple[tuple[str, str, float], ...] = (
    ("professional", "Works as a data engineer at a logistics company.", 0.95),
    ("preference", "Prefers concise answers with code examples in Python.", 0.9),
    ("goal", "Is preparing a talk on streaming pipelines for next spring.", 0.7),
    ("personal", "Lives in London and cycles to work.", 0.8),
    ("relationship", "Has a sister, Grace, who is a physician.", 0.6),
    ("health", "Is allergic to penicillin.", 0.99),
    ("financial", "Is saving for a house deposit and prefers low-risk investments.", 0.75),
    ("general", "Likes to be greeted in the morning with the weather forecast.", 0.5),
)


def seed_demo(store: Store, clock: Clock) -> DemoSubject:
    """Create the demo subject, its beliefs and an all-permissions token (30 days).

    Setting up a demo database is a composition root: the context tables are brought up to
    date first (domain calls only check them)."""
    ensure_schema(store)
    subject = create_subject(store, clock, DEMO_NAME, DEMO_TIMEZONE)
    beliefs = tuple(
        add_belief(store, clock, subject.id, category, statement, confidence, source="demo")
        for category, statement, confidence in DEMO_BELIEFS
    )
    token = issue_token(store, clock, subject.id, list(Permission), DEMO_TOKEN_TTL, label="demo")
    return DemoSubject(subject=subject, beliefs=beliefs, token=token)


def ensure_demo(store: Store, clock: Clock, token_file: Path) -> DemoSubject:
    """The demo subject and its all-permissions token, both reused; created when absent.

    Only a token's hash is in the database, so the raw demo token is kept in ``token_file``
    (mode 0600) and reused while it authenticates, carries every permission and has more than
    :data:`DEMO_TOKEN_RENEW` to live. Otherwise a new one is issued and the file rewritten; a
    file group or others could read is treated as leaked: its token is revoked and replaced.
    """
    ensure_schema(store)  # like seed_demo: a composition root
    subjects = [s for s in list_subjects(store) if s.display_name == DEMO_NAME]
    kept, leaked = _read_token_file(token_file)
    grant = _grant(store, clock, kept) if kept else None
    if grant is not None and leaked:
        revoke_token(store, clock, grant.subject_id, grant.token_id)
        grant = None
    usable = grant is not None and (
        grant.permissions == frozenset(Permission)
        and grant.expires_at - clock.now() > DEMO_TOKEN_RENEW
    )
    if grant is not None and kept and usable:
        for subject in subjects:
            if subject.id == grant.subject_id:
                beliefs = tuple(list_beliefs(store, subject.id))
                return DemoSubject(subject=subject, beliefs=beliefs, token=kept)
    if not subjects:
        demo = seed_demo(store, clock)
    else:
        subject = subjects[0]
        token = issue_token(
            store, clock, subject.id, list(Permission), DEMO_TOKEN_TTL, label="demo"
        )
        demo = DemoSubject(subject, tuple(list_beliefs(store, subject.id)), token)
    _write_token_file(token_file, demo.token)
    return demo


def _grant(store: Store, clock: Clock, token: str) -> TokenGrant | None:
    try:
        return authenticate_token(store, clock, token)
    except EngramError:  # unknown (the file belongs to another database), revoked or expired
        return None


def _read_token_file(path: Path) -> tuple[str | None, bool]:
    """(the token in ``path`` or None, whether group or others can read the file)."""
    try:
        with path.open("rb") as f:
            mode = stat.S_IMODE(os.fstat(f.fileno()).st_mode)
            text = f.read(4096).decode("utf-8", "replace").strip()
    except FileNotFoundError:
        return None, False
    except OSError as e:
        raise StoreError(f"cannot read the demo token file {path}: {e.strerror or e}") from e
    return (text or None), bool(mode & 0o077)


def _write_token_file(path: Path, token: str) -> None:
    """Write ``token`` to ``path`` atomically, readable by its owner only (0600)."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.fchmod(fd, 0o600)  # the umask can only narrow the mode; pin it exactly
            os.write(fd, (token + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        temporary.replace(path)
    except OSError as e:
        raise StoreError(f"cannot write the demo token file {path}: {e.strerror or e}") from e
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


__all__ = [
    "DEMO_BELIEFS",
    "DEMO_NAME",
    "DEMO_TIMEZONE",
    "DEMO_TOKEN_RENEW",
    "DEMO_TOKEN_TTL",
    "ensure_demo",
    "seed_demo",
]
