"""``engram demo``: a demo subject (beliefs in every category, health and financial included)
and an all-permissions token, printed with the provider URL and a curl line to try."""

from __future__ import annotations

import os

import click

from engram.cli._app import cli
from engram.cli._subject import CLOCK, db_option, emit, json_option, open_cli_store
from engram.context import DemoSubject, seed_demo
from engram.core.canonical import JsonValue

DEFAULT_URL = "http://127.0.0.1:8420"


def demo_summary(demo: DemoSubject, url: str) -> dict[str, JsonValue]:
    return {
        "subject_id": demo.subject.id,
        "display_name": demo.subject.display_name,
        "token": demo.token,
        "url": url,
        "beliefs": len(demo.beliefs),
        "curl": curl_line(url, demo.token),
    }


def curl_line(url: str, token: str, query: str = "") -> str:
    return f'curl -s "{url}/v1/context{query}" -H "Authorization: Bearer {token}"'


def demo_text(demo: DemoSubject, url: str) -> str:
    return "\n".join(
        [
            f"provider:  {url}",
            f"subject:   {demo.subject.id} ({demo.subject.display_name},"
            f" {len(demo.beliefs)} beliefs)",
            f"token:     {demo.token}",
            "try:",
            f"  {curl_line(url, demo.token)}",
            f"  {curl_line(url, demo.token, '?scope=professional')}",
        ]
    )


@cli.command("demo")
@db_option
@json_option
@click.option("--url", default=None, help="Provider URL to print (default: $ENGRAM_PUBLIC_URL).")
def demo_command(db: str | None, as_json: bool, url: str | None) -> None:
    """Create a demo subject and print its id, a token and the provider URL."""
    base = (url or os.environ.get("ENGRAM_PUBLIC_URL") or DEFAULT_URL).rstrip("/")
    store = open_cli_store(db)
    try:
        demo = seed_demo(store, CLOCK)
    finally:
        store.close()
    emit(demo_summary(demo, base), as_json, demo_text(demo, base))


__all__ = ["curl_line", "demo_summary", "demo_text"]
