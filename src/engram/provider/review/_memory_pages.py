"""The ``/memories`` screens as functions of domain objects (``docs/spec/review-page.md``,
"Memories").

Like ``_pages`` (the review page's screens), each function returns escaped
:class:`~engram.provider.review._html.Html` and none reads the store. Every state-changing form
posts to a same-origin path with the session's synchronizer token; search is a ``GET`` form and
changes nothing. Erasing has its own page: the list and the history only link to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol
from urllib.parse import quote, urlencode

from engram.context import Subject
from engram.core.clock import parse_instant
from engram.errors import InvalidRequest
from engram.memory import ListedMemory, Memory, MemoryHistory
from engram.provider.review._html import Html, concat, render
from engram.provider.review._pages import MEMORIES, when


class HistoryEntry(Protocol):
    """One entry of :class:`engram.memory.MemoryHistory` as these screens read it."""

    @property
    def event(self) -> str: ...
    @property
    def at(self) -> str: ...
    @property
    def actor(self) -> str: ...
    @property
    def detail(self) -> str: ...


CURRENT, FORGOTTEN, SUPERSEDED, ERASED = "current", "forgotten", "superseded", "erased"
# A long memory is cut in the list (the history page shows it whole): a list stays a list.
LIST_CHARS = 600
# Actors the page itself writes: ``page:token:<token id>`` or ``page:link``.
PAGE_ACTOR = "page:"

_STATE_WORDS: Mapping[str, str] = {
    CURRENT: "Agents recall it.",
    FORGOTTEN: "Forgotten: agents no longer recall it. Restore brings it back.",
    SUPERSEDED: "Superseded: a newer memory replaced it; agents recall the newer one.",
    ERASED: "Erased: its words are gone for good; only the record of what happened remains.",
}

_EVENT_TITLES: Mapping[str, str] = {
    "recorded": "Recorded",
    "outcome": "Outcome reported",
    "forgotten": "Forgotten",
    "restored": "Restored",
    "superseded": "Superseded",
    "supersedes": "Replaced an older memory",
    "erased": "Erased",
}


def memory_path(memory_id: str, *action: str) -> str:
    return "/".join([MEMORIES, quote(memory_id, safe=""), *action])


def _state(state: str) -> str:
    """The page's word for a memory's state (history says ``active`` where lists say current)."""
    return CURRENT if state == "active" else state


def _tag(state: str) -> Html:
    word = _state(state)
    return render('<span class="tag $css">$word</span>', css=word, word=word)


def _instant(text: str, subject: Subject) -> Html:
    try:
        return when(parse_instant(text), subject.timezone)
    except InvalidRequest:  # an imported memory's own time, kept as the source wrote it
        return render("<time>$text</time>", text=text)


def _actor(actor: str) -> Html:
    if actor.startswith(PAGE_ACTOR):
        return Html("you, on this page")
    return render("<code>$actor</code>", actor=actor)


def _clip(text: str) -> str:
    return text if len(text) <= LIST_CHARS else text[:LIST_CHARS].rstrip() + " …"


def _csrf_form(action: str, csrf: str, label: str, css: str, extra: Html, described: str) -> Html:
    return render(
        """<form method="post" action="$action"><input type="hidden" name="csrf_token"
value="$csrf">$extra<button class="$css" type="submit" aria-describedby="$described">$label</button>
</form>""",
        action=action,
        csrf=csrf,
        extra=extra,
        css=css,
        label=label,
        described=described,
    )


def actions(memory: Memory, state: str, csrf: str, described: str, *, from_list: bool) -> Html:
    """Forget or Restore (by the state), and the link to the page that asks before erasing."""
    back = Html('<input type="hidden" name="from" value="list">') if from_list else Html("")
    state = _state(state)
    if state == CURRENT:
        toggle = _csrf_form(
            memory_path(memory.id, "forget"), csrf, "Forget", "plain", back, described
        )
    elif state == FORGOTTEN:
        toggle = _csrf_form(
            memory_path(memory.id, "restore"), csrf, "Restore", "primary", back, described
        )
    else:  # superseded: the newer memory is served; restoring the old one is not possible
        toggle = Html("")
    erase = render(
        '<a class="danger" href="$href" aria-describedby="$described">Erase…</a>',
        href=memory_path(memory.id, "erase"),
        described=described,
    )
    return render('<div class="actions">$toggle $erase</div>', toggle=toggle, erase=erase)


def _item(listed: ListedMemory, number: int, subject: Subject, csrf: str) -> Html:
    memory = listed.memory
    text_id = f"memory-{number}"
    return render(
        """<li class="memory" data-state="$state"><p class="statement" id="$text_id">$text</p>
<p class="meta">$tag$kind · recorded $at ·
<a href="$href" aria-describedby="$text_id">History</a></p>
$actions</li>""",
        state=_state(listed.state),
        text_id=text_id,
        text=_clip(memory.text),
        tag=_tag(listed.state),
        kind=memory.kind,
        at=_instant(memory.created_at, subject),
        href=memory_path(memory.id),
        actions=actions(memory, listed.state, csrf, text_id, from_list=True),
    )


def _listing_card(items: Html) -> Html:
    return render('<section class="card"><ul class="beliefs">$items</ul></section>', items=items)


def _search_form(query: str) -> Html:
    return render(
        """<form class="search" method="get" action="$action" role="search">
<label class="field" for="q">Search</label>
<input id="q" name="q" type="search" value="$query" maxlength="500" autocomplete="off">
<button type="submit">Search</button></form>""",
        action=MEMORIES,
        query=query,
    )


def memory_list(
    subject: Subject,
    items: Sequence[ListedMemory],
    csrf: str,
    *,
    query: str = "",
    searched: bool = False,
    cursor: str | None = None,
    next_cursor: str | None = None,
) -> Html:
    """Newest first, a page at a time; or, after a search, the memories that answer it."""
    listing = concat(_item(m, i, subject, csrf) for i, m in enumerate(items))
    if searched:
        heading = render("Best matches for “$q”", q=query)
        empty = "Nothing you have not forgotten answers that. Forgotten memories are not searched."
        lead = "Searched the way your AI tools recall: best answers first, forgotten ones left out."
    else:
        heading = Html("Your memories, newest first")
        empty = "No AI tool has recorded a memory about you yet."
        lead = (
            "What your AI tools have recorded about you. Forget a memory to stop them recalling "
            "it (you can restore it); erase it to delete its words for good."
        )
    pager = Html("")
    if not searched and (cursor or next_cursor):
        newer = Html("<span></span>")
        if cursor:
            newer = render('<a href="$href">← Newest</a>', href=MEMORIES)
        older = (
            render(
                '<a href="$href" rel="next">Older memories →</a>',
                href=f"{MEMORIES}?{urlencode({'cursor': next_cursor})}",
            )
            if next_cursor
            else Html("")
        )
        pager = render(
            '<nav class="pager" aria-label="More memories">$newer$older</nav>',
            newer=newer,
            older=older,
        )
    back = render('<p><a href="$href">← All your memories</a></p>', href=MEMORIES)
    return render(
        """<h1>Hello, $name</h1>
<p class="lead">$lead</p>
$search
$back<h2 id="memories">$heading</h2>
$body
$pager""",
        name=subject.display_name,
        lead=lead,
        search=_search_form(query),
        back=back if searched else Html(""),
        heading=heading,
        body=_listing_card(listing) if listing else render('<p class="empty">$t</p>', t=empty),
        pager=pager,
    )


def _other_memory(entry: HistoryEntry) -> Html:
    """A superseded / supersedes entry names the other memory: a link to its history."""
    other = entry.detail.removeprefix("by ").strip()
    if not other.startswith("mem:"):
        return Html("")
    return render(
        '$words <a href="$href"><code>$id</code></a>',
        words=" by" if entry.event == "superseded" else ":",
        href=memory_path(other),
        id=other,
    )


def _entry(entry: HistoryEntry, subject: Subject) -> Html:
    detail = Html("")
    if entry.event == "outcome":
        detail = render(" · $detail", detail=entry.detail)
    elif entry.event == "forgotten" and entry.detail:
        detail = render(" · reason given: $detail", detail=entry.detail)
    elif entry.event in ("superseded", "supersedes"):
        detail = _other_memory(entry)
    # A recorded entry's actor is the seat that recorded it, never this page.
    who = render("<code>$a</code>", a=entry.actor) if entry.event == "recorded" else None
    return render(
        """<li class="entry"><p class="meta"><strong>$title</strong>$detail · $at by $who</p>
</li>""",
        title=_EVENT_TITLES.get(entry.event, entry.event),
        detail=detail,
        at=_instant(entry.at, subject),
        who=who or _actor(entry.actor),
    )


def history_page(subject: Subject, memory: Memory | None, story: MemoryHistory, csrf: str) -> Html:
    """One memory: its words, its state and what can be done, and what happened to it."""
    state = _state(story.state)
    if memory is None:
        head = render(
            '<section class="card"><p class="meta">$tag</p><p class="empty">$words</p></section>',
            tag=_tag(state),
            words=_STATE_WORDS[ERASED],
        )
    else:
        head = render(
            """<section class="card"><p class="statement" id="memory-text">$text</p>
<p class="meta">$tag$kind · recorded $at$thread</p>
<p>$words</p>
$actions</section>""",
            text=memory.text,
            tag=_tag(state),
            kind=memory.kind,
            at=_instant(memory.created_at, subject),
            thread=render(" · thread <code>$t</code>", t=memory.thread) if memory.thread else "",
            words=_STATE_WORDS.get(state, ""),
            actions=actions(memory, state, csrf, "memory-text", from_list=False),
        )
    return render(
        """<p><a href="$back">← All your memories</a></p>
<h1>History of a memory</h1>
<p class="lead">Memory <code>$mid</code></p>
$head
<h2>What happened, oldest first</h2>
<ol class="timeline">$entries</ol>""",
        back=MEMORIES,
        mid=story.memory_id,
        head=head,
        entries=concat(_entry(e, subject) for e in story.entries),
    )


def erase_confirmation(subject: Subject, memory: Memory, state: str, csrf: str) -> Html:
    """The second question before an erase: what it does, that it is final, and the way out."""
    forget_instead = Html("")
    if _state(state) == CURRENT:
        action = memory_path(memory.id, "forget")
        forget_instead = _csrf_form(
            action, csrf, "Forget instead", "plain", Html(""), "memory-text"
        )
    return render(
        """<p><a href="$back">← History of this memory</a></p>
<section class="card warning">
<h1>Erase this memory for good?</h1>
<p class="statement" id="memory-text">$text</p>
<p class="meta">$tag$kind · recorded $at</p>
<p>Erasing deletes its words from the database and the search index. It cannot be undone:
only a record that a memory was erased stays (its id, a fingerprint of its words, who and when).
If you may want it back one day, forget it instead.</p>
<form method="post" action="$action"><input type="hidden" name="csrf_token" value="$csrf">
<input type="hidden" name="confirm" value="erase">
<div class="actions"><button class="danger" type="submit">Erase for good</button>
<a href="$back">Keep it</a></div></form>
<div class="actions">$forget</div>
</section>""",
        back=memory_path(memory.id),
        text=memory.text,
        tag=_tag(state),
        kind=memory.kind,
        at=_instant(memory.created_at, subject),
        action=memory_path(memory.id, "erase"),
        csrf=csrf,
        forget=forget_instead,
    )


__all__ = [
    "CURRENT",
    "ERASED",
    "FORGOTTEN",
    "PAGE_ACTOR",
    "SUPERSEDED",
    "actions",
    "erase_confirmation",
    "history_page",
    "memory_list",
    "memory_path",
]
