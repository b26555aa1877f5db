"""``engram chat``: a small terminal chat that injects verified Engram context into any
OpenAI-compatible ``/v1/chat/completions`` endpoint.

A working runtime in one command (Engram v0.1 conformance, runtime requirements of Tiers 1-3):
it fetches and verifies the export at session start and refuses to start, saying why, when it
cannot; every turn asks the SDK for the context to inject, so it is refreshed before it expires
and never used after; ``/correct <belief_id> <new value>`` proposes a correction that stays
pending until the subject confirms it, and ``/beliefs`` lists the belief ids it takes. Lines are
read from stdin until EOF, so it runs the same at a terminal and under a test harness.

The LLM: ``--llm-base-url`` (else ``$OPENAI_BASE_URL``) in the OpenAI SDK convention
(``https://host/v1``; a bare ``https://host`` gets ``/v1`` added), ``--model`` (else
``$OPENAI_MODEL``), and ``$OPENAI_API_KEY`` sent as a bearer token when set
(docs/llm-and-embeddings.md). A failed LLM call loses nothing: the turn is reported on stderr
and the user can send it again; without a terminal (a script or harness feeding stdin) the
session goes on with the next line and exits 1 at the end if any turn went unanswered
(docs/spec/runtime.md "engram chat").
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import click

from engram.cli._app import cli
from engram.cli._provider_client import provider_options, runtime_config
from engram.cli._settings import from_settings, given, setting_over_default, settings
from engram.core.canonical import JsonObject, parse_strict
from engram.errors import CanonicalJsonError, EngramError

# httpx and the runtime client load when a chat starts, not for --help (issue 33).
if TYPE_CHECKING:
    from engram.runtime import ContextView, EngramClient

HELP = (
    "commands: /correct <belief_id> <new value>  propose a correction (the subject confirms it)\n"
    "          /beliefs                          the beliefs in the context, with their ids\n"
    "          /context                          show the context being injected\n"
    "          /help                             this text\n"
    "          /quit                             leave (EOF works too)"
)


def completions_url(base_url: str) -> str:
    """``<base>/chat/completions``, adding ``/v1`` to a base URL that names no path."""
    base = base_url.rstrip("/")
    if urlsplit(base).path in ("", "/"):
        base += "/v1"
    return base + "/chat/completions"


class LLMError(click.ClickException):
    """One chat turn could not be answered; the session can go on."""


class LLM:
    """Just enough of the OpenAI chat-completions API: one request, one reply text."""

    def __init__(self, base_url: str, model: str, api_key: str | None) -> None:
        self.url = completions_url(base_url)
        self.model = model
        # httpx loads when a chat starts, not for `engram chat --help` (issue 33).
        from engram.fetch import Fetcher, FetchSettings, party_of

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # The fetch discipline (docs/spec/limits.md §1): 120 s per turn in all, a capped answer.
        settings = FetchSettings(deadline=120.0, read_timeout=120.0)
        self._http = Fetcher(party_of(self.url), headers=headers, settings=settings)

    def reply(self, messages: list[JsonObject]) -> str:
        from engram.fetch import MAX_MODEL_ANSWER, FetchError

        try:
            with self._http.stream(
                "POST", self.url, json={"model": self.model, "messages": messages}
            ) as response:
                if response.status_code != 200:
                    excerpt = self._http.excerpt(response).decode("utf-8", "replace")
                    raise LLMError(
                        f"the LLM at {self.url} answered HTTP {response.status_code}: "
                        + " ".join(excerpt.split())[:200]
                    )
                content = self._http.read(response, MAX_MODEL_ANSWER, "its answer")
        except FetchError as e:
            raise LLMError(f"the LLM at {self.url} cannot be read: {e.message}") from e
        try:
            document = parse_strict(content)
        except CanonicalJsonError as e:
            raise LLMError(f"the LLM at {self.url} sent no chat completion") from e
        choices = document.get("choices") if isinstance(document, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict) or "content" not in message:
            raise LLMError(f"the LLM at {self.url} sent no chat completion")
        return str(message["content"])

    def close(self) -> None:
        self._http.close()


@cli.command(
    "chat",
    epilog="The LLM's API key, if it needs one, is read from $OPENAI_API_KEY (never from the "
    "command line) and sent as a bearer token. Pointing engram at an LLM, embeddings and a "
    "reranker: docs/llm-and-embeddings.md.",
)
@provider_options
@click.option(
    "--llm-base-url",
    default=from_settings("OPENAI_BASE_URL"),
    required=True,
    callback=given,
    metavar="URL",
    help="OpenAI-compatible API base, e.g. http://127.0.0.1:8080/v1 (default: $OPENAI_BASE_URL).",
)
@click.option(
    "--model",
    default="gpt-4o-mini",
    show_default=True,
    callback=setting_over_default("OPENAI_MODEL"),
    help="Model name sent to the LLM (default: $OPENAI_MODEL).",
)
@click.option("--system", "base_prompt", default="", help="Your own system instructions.")
def chat_command(
    provider: str,
    token: str,
    scope: str | None,
    runtime_id: str,
    llm_base_url: str,
    model: str,
    base_prompt: str,
) -> None:
    """Chat with an LLM that is given the user's verified Engram context."""
    from engram.runtime import EngramClient

    interactive = sys.stdin.isatty()
    engram = EngramClient(runtime_config(provider, token, scope, runtime_id))
    llm = LLM(llm_base_url, model, settings().get("OPENAI_API_KEY"))
    try:
        try:
            view = engram.context()
        except EngramError as e:
            raise click.ClickException(f"refusing to start: {e.code}: {e.message}") from e
        click.echo(
            f"engram chat: context for {view.display_name} verified (kid {view.kid}, "
            f"expires {view.expires_at:%Y-%m-%dT%H:%M:%SZ}); /help for commands",
            err=True,
        )
        unanswered = _loop(engram, llm, base_prompt, interactive)
    finally:
        llm.close()
        engram.close()
    if unanswered and not interactive:
        raise click.ClickException(f"{unanswered} turn(s) went unanswered (see above)")


def _loop(engram: EngramClient, llm: LLM, base_prompt: str, interactive: bool) -> int:
    """Read and answer lines until EOF or /quit; return how many turns went unanswered."""
    history: list[JsonObject] = []
    unanswered = 0
    while True:
        if interactive:
            click.echo("you> ", nl=False, err=True)
        line = sys.stdin.readline()
        if not line:
            return unanswered
        text = line.strip()
        if not text:
            continue
        if text in ("/quit", "/exit"):
            return unanswered
        if text == "/help":
            click.echo(HELP)
        elif text == "/context":
            click.echo(_context_now(engram).system_prompt())
        elif text == "/beliefs":
            click.echo(_beliefs_text(_context_now(engram)))
        elif text.startswith("/correct"):
            _correct(engram, text)
        elif text.startswith("/"):
            click.echo(f"unknown command {text.split()[0]}; /help lists them", err=True)
        else:
            # Each turn asks the SDK again: it refreshes before expiry and refuses stale context.
            view = _context_now(engram)
            own = [{"role": "system", "content": base_prompt}] if base_prompt else []
            from engram.runtime import with_context

            messages = with_context([*own, *history, {"role": "user", "content": text}], view)
            try:
                answer = llm.reply(messages)
            except LLMError as e:
                # The turn stays out of the history, so sending it again asks the same question.
                unanswered += 1
                again = "; send it again to retry" if interactive else ""
                click.echo(
                    f"error: {e.format_message()} (this turn was not answered{again})", err=True
                )
                continue
            history += [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
            click.echo(answer)


def _beliefs_text(view: ContextView) -> str:
    """One line per belief in the injected context: the id `/correct` takes, then the belief."""
    if not view.beliefs:
        return f"no beliefs in the {view.scope} context"
    return "\n".join(f"{b.id}  [{b.category}] {b.statement}" for b in view.beliefs)


def _context_now(engram: EngramClient) -> ContextView:
    try:
        return engram.context()
    except EngramError as e:
        raise click.ClickException(
            f"stopping: no verified context to inject: {e.code}: {e.message}"
        ) from e


def _correct(engram: EngramClient, text: str) -> None:
    parts = text.split(maxsplit=2)
    if len(parts) < 3:
        click.echo("usage: /correct <belief_id> <new value>", err=True)
        return
    _, belief_id, new_value = parts
    try:
        proposed = engram.propose_correction(belief_id, new_value, reason="user typed /correct")
    except EngramError as e:
        click.echo(f"correction not sent: {e.code}: {e.message}", err=True)
        return
    click.echo(
        f"correction {proposed.id} for {belief_id}: {proposed.status} "
        "(the context changes once the user confirms it)"
    )


__all__ = ["LLM", "LLMError", "chat_command", "completions_url"]
