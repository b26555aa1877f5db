"""The demo subject that ``engram demo`` and ``engram serve --demo`` share: where its token is
kept, and the lines that introduce it. A shared CLI helper (no command of its own).

The raw token is kept in a file only its owner can read (mode 0600; see :func:`token_file`),
and the text names that file instead of printing the token, so a live token does not land in a
terminal scroll-back or beside the provider's access log. docs/spec/context-model.md "The demo
subject".
"""

from __future__ import annotations

import hashlib
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlencode

from engram.cli._common import CLOCK
from engram.cli._settings import settings
from engram.core.canonical import Json
from engram.core.jsonio import dumps_text

if TYPE_CHECKING:
    from engram.context.internals import DemoSubject
    from engram.store import Store

TOKEN_SUFFIX = ".demo-token"  # noqa: S105 - a file name suffix, not a secret


def token_file(url: str) -> Path:
    """Where the demo token of the database at ``url`` is kept.

    Beside a SQLite file (``engram.db`` -> ``engram.demo-token``, so the default is
    ``$ENGRAM_HOME/engram.demo-token``); for any other database in ``$ENGRAM_HOME``, named by a
    digest of its URL without the password.
    """
    from engram.store.internals import redact_url

    if url.startswith("sqlite://"):
        path = Path(unquote(url[len("sqlite://") :]))
        return path.with_name(path.stem + TOKEN_SUFFIX)
    digest = hashlib.sha256(redact_url(url).encode("utf-8")).hexdigest()[:16]  # no password
    return settings().home / f"demo-{digest}{TOKEN_SUFFIX}"


def open_demo(store: Store) -> tuple[DemoSubject, Path]:
    """The demo subject of ``store`` (created if absent) and the file that keeps its token."""
    from engram.context.internals import ensure_demo

    path = token_file(store.url)  # the URL without any password
    return ensure_demo(store, CLOCK, path), path


def curl_line(url: str, token: str, query: str = "") -> str:
    return f'curl -s "{url}/v1/context{query}" -H "Authorization: Bearer {token}"'


# The memory REST routes the demo's curl lines show: recording the OpenAPI document's first
# example of a memory, then recalling it with a question in other words.
RECORD_ROUTE = ("post", "/v1/memories")
RECALL_ROUTE = ("get", "/v1/memories/search")
RECALL_QUESTION = "how does she like to travel"


def memory_curl_lines(url: str, token: str, kinds: Sequence[str]) -> list[str]:
    """Recording and recalling a memory over /v1/memories, built from the served OpenAPI
    document (``kinds``: the seat's, which that document lists): the record route's first
    request example as the body, the recall route's one required query parameter for the
    question. A route or example the document no longer has fails here (and in the tests)."""
    from engram.provider import openapi_document

    # Read as the nested JSON it is: a missing member is a KeyError, which the tests catch.
    paths: Any = openapi_document(memory=True, memory_kinds=list(kinds))["paths"]
    (method, path), (recall_method, recall_path) = RECORD_ROUTE, RECALL_ROUTE
    record = paths[path][method]
    examples = record["requestBody"]["content"]["application/json"]["examples"]
    body = dict(next(iter(examples.values()))["value"])
    if body.get("kind") not in kinds:  # a seat without the example's kind: one of its own
        body["kind"] = kinds[0]
    (question,) = [
        p["name"]
        for p in paths[recall_path][recall_method]["parameters"]
        if p.get("in") == "query" and p.get("required")
    ]
    auth = f'-H "Authorization: Bearer {token}"'
    return [
        f'curl -s -X {method.upper()} "{url}{path}" {auth} '
        f'-H "Content-Type: application/json" -d {shlex.quote(dumps_text(body, sort_keys=False))}',
        f'curl -s "{url}{recall_path}?{urlencode({question: RECALL_QUESTION})}" {auth}',
    ]


def demo_summary(demo: DemoSubject, path: Path, url: str) -> dict[str, Json]:
    return {
        "subject_id": demo.subject.id,
        "display_name": demo.subject.display_name,
        "token": demo.token,
        "token_file": str(path),
        "url": url,
        "beliefs": len(demo.beliefs),
        "curl": curl_line(url, f"$(cat {path})"),
    }


def demo_text(demo: DemoSubject, path: Path, url: str) -> str:
    token = f"$(cat {path})"
    return "\n".join(
        [
            f"provider:  {url}",
            f"subject:   {demo.subject.id} ({demo.subject.display_name},"
            f" {len(demo.beliefs)} beliefs)",
            f"token:     in {path} (mode 0600, all permissions; reused at every start)",
            "try:",
            f"  {curl_line(url, token)}",
            f"  {curl_line(url, token, '?scope=professional')}",
        ]
    )


__all__ = [
    "TOKEN_SUFFIX",
    "curl_line",
    "demo_summary",
    "demo_text",
    "memory_curl_lines",
    "open_demo",
    "token_file",
]
