"""``engram review-link``: a one-time sign-in link to the subject's review page.

The link opens one review session and then never works again; it expires after ``--ttl``
(default 15 minutes, at most 24 hours). Only the code's hash is stored, so the link is printed
once and cannot be shown again. ``docs/spec/review-page.md`` ("One-time links") has the rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from engram.cli._app import cli
from engram.cli._common import (
    CLOCK,
    DEFAULT_URL,
    cli_store,
    database_option,
    emit,
    json_option,
    parse_ttl,
)
from engram.cli._settings import settings
from engram.core.clock import format_instant
from engram.errors import InvalidRequest

if TYPE_CHECKING:
    from engram.store import Store


def _only_subject(store: Store) -> str:
    from engram.context import list_subjects

    subjects = list_subjects(store)
    if len(subjects) == 1:
        return subjects[0].id
    if not subjects:
        raise InvalidRequest("there are no subjects yet: create one with `engram subject create`")
    raise InvalidRequest(
        f"there are {len(subjects)} subjects: name one with --subject (see `engram subject list`)"
    )


@cli.command("review-link")
@click.option("--subject", "subject_id", default=None, help="Subject id (optional if only one).")
@click.option("--ttl", default="15m", show_default=True, help="Lifetime: 900, 15m, 2h (max 24h).")
@click.option(
    "--url", default=None, help="Provider base URL (default: $ENGRAM_PUBLIC_URL, else local)."
)
@click.option(
    "--page",
    type=click.Choice(["review", "memories"]),
    default="review",
    show_default=True,
    help="Where the link leads: the corrections (/review) or the memories (/memories).",
)
@database_option
@json_option
def review_link_command(
    subject_id: str | None,
    ttl: str,
    url: str | None,
    page: str,
    database: str | None,
    as_json: bool,
) -> None:
    """Print a single-use link that signs the subject in to /review or /memories."""
    from engram.provider.review import create_review_link  # starlette: not for --help (issue 33)

    lifetime = parse_ttl(ttl)
    base = (url or settings().public_url or DEFAULT_URL).rstrip("/")
    with cli_store(database) as store:
        link = create_review_link(store, CLOCK, subject_id or _only_subject(store), lifetime)
    address = f"{base}/review/link?code={link.code}"
    if page == "memories":
        address += "&next=/memories"
    value = {
        "subject_id": link.subject_id,
        "url": address,
        "expires_at": format_instant(link.expires_at),
        "single_use": True,
    }
    emit(value, as_json, address)
    if not as_json:
        click.echo(
            f"single use; expires {format_instant(link.expires_at)}; shown only now", err=True
        )


__all__ = ["review_link_command"]
