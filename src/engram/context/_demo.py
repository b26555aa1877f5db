"""The demo subject ``engram demo`` and ``engram serve --demo`` create (README's first command).

Its beliefs cover every category, including the sensitive ``health`` and ``financial`` ones, so
``?scope=professional`` visibly drops something; its token carries every permission.
"""

from __future__ import annotations

from datetime import timedelta

from engram.context._beliefs import add_belief, create_subject, list_beliefs, list_subjects
from engram.context._model import DemoSubject, Permission
from engram.context._tokens import issue_token
from engram.core.clock import Clock
from engram.store import Store

DEMO_NAME = "Ada Example"
DEMO_TIMEZONE = "Europe/London"
DEMO_TOKEN_TTL = timedelta(days=30)

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
    """Create the demo subject, its beliefs and an all-permissions token (30 days)."""
    subject = create_subject(store, clock, DEMO_NAME, DEMO_TIMEZONE)
    beliefs = tuple(
        add_belief(store, clock, subject.id, category, statement, confidence, source="demo")
        for category, statement, confidence in DEMO_BELIEFS
    )
    token = issue_token(store, clock, subject.id, list(Permission), DEMO_TOKEN_TTL, label="demo")
    return DemoSubject(subject=subject, beliefs=beliefs, token=token)


def ensure_demo(store: Store, clock: Clock) -> DemoSubject:
    """The demo subject, created if absent; either way a fresh all-permissions token.

    The earlier demo token cannot be shown again (only its hash is stored), so a new one is
    issued each time; earlier tokens stay valid until they expire.
    """
    existing = [s for s in list_subjects(store) if s.display_name == DEMO_NAME]
    if not existing:
        return seed_demo(store, clock)
    subject = existing[0]
    token = issue_token(store, clock, subject.id, list(Permission), DEMO_TOKEN_TTL, label="demo")
    return DemoSubject(subject=subject, beliefs=tuple(list_beliefs(store, subject.id)), token=token)


__all__ = ["DEMO_BELIEFS", "DEMO_NAME", "DEMO_TIMEZONE", "ensure_demo", "seed_demo"]
