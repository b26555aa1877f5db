"""The review page's screens as functions of domain objects (``docs/spec/review-page.md``).

Each function returns escaped :class:`~engram.provider.review._html.Html`; none reads the store.
Forms post to same-origin paths and carry the session's synchronizer token (``csrf_token``) or,
before sign-in, the login token (``login_csrf``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from urllib.parse import quote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from engram.context import Belief, ChangeKind, Correction, CorrectionStatus, EvolutionEntry, Subject
from engram.core.clock import format_instant
from engram.core.context_wire import PROBE_LABEL, PROBE_RUNTIME_ID
from engram.provider.review._html import Html, concat, render

BASE = "/review"
MEMORIES = "/memories"


def _path(*parts: str) -> str:
    return "/".join([BASE, *(quote(p, safe="") for p in parts)])


def when(moment: datetime, zone: str) -> Html:
    """An instant in the subject's own time zone, machine-readable in ``datetime``."""
    try:
        local = moment.astimezone(ZoneInfo(zone))
    except (ZoneInfoNotFoundError, ValueError):
        local = moment
    text = f"{local.day} {local:%b %Y, %H:%M} {local.tzname() or ''}".rstrip()
    return render('<time datetime="$iso">$text</time>', iso=format_instant(moment), text=text)


def _nav(current: str, memories: bool) -> Html:
    """Links between the subject's pages; the one shown says so to screen readers."""
    pages = [(BASE, "Corrections")] + ([(MEMORIES, "Memories")] if memories else [])
    if len(pages) < 2:
        return Html("")
    links = concat(
        render(
            '<a href="$href"$current>$label</a>',
            href=href,
            label=label,
            current=Html(' aria-current="page"' if href == current else ""),
        )
        for href, label in pages
    )
    return render('<nav class="pages" aria-label="Your pages">$links</nav>', links=links)


def account(subject: Subject, csrf: str, *, current: str = BASE, memories: bool = False) -> Html:
    """The header's right side: links to the subject's pages, who is signed in, sign-out."""
    return render(
        """$nav<div class="who"><span>Signed in as <strong>$name</strong></span>
<form method="post" action="$action"><input type="hidden" name="csrf_token" value="$csrf">
$next<button class="link" type="submit">Sign out</button></form></div>""",
        nav=_nav(current, memories),
        next=render('<input type="hidden" name="next" value="$page">', page=current)
        if current != BASE
        else Html(""),
        name=subject.display_name,
        action=_path("signout"),
        csrf=csrf,
    )


# What the sign-in form says, per page it leads to (the form's ``next`` field names it).
_SIGN_IN_HEADINGS: Mapping[str, tuple[str, str]] = {
    BASE: ("Review your corrections", "Sign in with"),
    MEMORIES: (
        "See what your AI tools remember",
        "One sign-in serves your memories and your corrections: use",
    ),
}


def sign_in(login_csrf: str, next_page: str = BASE) -> Html:
    heading, intro = _SIGN_IN_HEADINGS.get(next_page, _SIGN_IN_HEADINGS[BASE])
    return render(
        """<section class="card narrow">
<h1>$heading</h1>
<p class="lead">$intro an engram token that has the <code>confirm</code> permission, or open
a one-time link made with <code>engram review-link</code>.</p>
<form method="post" action="$action">
<input type="hidden" name="login_csrf" value="$login">
<input type="hidden" name="next" value="$next">
<label class="field" for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="off" spellcheck="false" required>
<div class="actions"><button class="primary" type="submit">Sign in</button></div>
</form>
</section>""",
        heading=heading,
        intro=intro,
        next=next_page,
        action=_path("signin"),
        login=login_csrf,
    )


def link_landing(
    subject: Subject, code: str, expires_at: datetime, login_csrf: str, next_page: str = BASE
) -> Html:
    return render(
        """<section class="card narrow">
<h1>$heading</h1>
<p class="lead">This one-time link signs you in as <strong>$name</strong>. It works once and
expires $expires.</p>
<form method="post" action="$action">
<input type="hidden" name="login_csrf" value="$login">
<input type="hidden" name="code" value="$code">
<input type="hidden" name="next" value="$next">
<div class="actions"><button class="primary" type="submit">Continue as $name</button></div>
</form>
</section>""",
        heading="Sign in to your memories" if next_page == MEMORIES else "Sign in to review",
        next=next_page,
        name=subject.display_name,
        expires=when(expires_at, subject.timezone),
        action=_path("link"),
        login=login_csrf,
        code=code,
    )


def _decision_forms(correction: Correction, csrf: str) -> Html:
    form = """<form method="post" action="$action"><input type="hidden" name="csrf_token"
value="$csrf"><button class="$css" type="submit">$label</button></form>"""
    return concat(
        render(
            form, action=_path("corrections", correction.id, verb), csrf=csrf, css=css, label=lbl
        )
        for verb, css, lbl in (("confirm", "primary", "Confirm"), ("reject", "danger", "Reject"))
    )


def pending_card(
    correction: Correction,
    current: Belief | None,
    subject: Subject,
    csrf: str,
    *,
    probe: bool = False,
) -> Html:
    """A pending correction beside the belief it would change, with Confirm and Reject."""
    if current is None:
        now_side = render(
            """<span class="label">Now</span><p><span class="tag new">new belief</span></p>
<p class="meta">No belief has the id <code>$bid</code> yet: confirming adds the proposed text as
a new belief.</p>""",
            bid=correction.belief_id,
        )
        tag, history = Html('<span class="tag new">new</span>'), Html("")
    else:
        now_side = render(
            """<span class="label">Now</span><p class="statement">$text</p>
<p class="meta">version $version · confidence $confidence</p>""",
            text=current.statement,
            version=current.version,
            confidence=f"{current.confidence:.2f}",
        )
        tag = render('<span class="tag">$category</span>', category=current.category)
        history = render('<a href="$href">History</a>', href=_path("beliefs", current.id))
    reason = (
        render('<p class="meta">Reason given: $reason</p>', reason=correction.reason)
        if correction.reason
        else Html("")
    )
    return render(
        """<article class="card pending$probe" id="correction-$cid">
<p class="meta">$tag Proposed by <strong>$runtime</strong> · $received</p>
<div class="compare">
<div class="side now">$now_side</div>
<div class="side proposed"><span class="label">Proposed</span>
<p class="statement">$proposed</p></div>
</div>
$reason<div class="actions">$forms $history</div>
</article>""",
        cid=correction.id,
        probe=" probe" if probe else "",
        tag=render('<span class="tag probe">conformance probe</span>') if probe else tag,
        runtime=correction.runtime_id,
        received=when(correction.received_at, subject.timezone),
        now_side=now_side,
        proposed=correction.new_value,
        reason=reason,
        forms=_decision_forms(correction, csrf),
        history=history,
    )


def _belief_item(belief: Belief, subject: Subject) -> Html:
    return render(
        """<li><p class="statement">$text</p>
<p class="meta"><span class="tag">$category</span>version $version · updated $updated ·
<a href="$href">History</a></p></li>""",
        text=belief.statement,
        category=belief.category,
        version=belief.version,
        updated=when(belief.updated_at, subject.timezone),
        href=_path("beliefs", belief.id),
    )


def _resolved_item(correction: Correction, subject: Subject) -> Html:
    status = "confirmed" if correction.status is CorrectionStatus.CONFIRMED else "rejected"
    moment = correction.resolved_at or correction.received_at
    return render(
        """<li><p class="statement">$value</p>
<p class="meta"><span class="tag $status">$status</span>
from <strong>$runtime</strong> · $at</p></li>""",
        value=correction.new_value,
        status=status,
        runtime=correction.runtime_id,
        at=when(moment, subject.timezone),
    )


def dashboard(
    subject: Subject,
    pending: Sequence[Correction],
    beliefs: Sequence[Belief],
    resolved: Sequence[Correction],
    csrf: str,
) -> Html:
    """The signed-in view: what waits for a decision, what is believed, what was decided.

    Conformance probes (corrections a conformance runner sent to test the provider) are shown
    in a section of their own, never among the proposals about the subject.
    """
    by_id: Mapping[str, Belief] = {b.id: b for b in beliefs}
    probes = [c for c in pending if is_probe(c)]
    pending = [c for c in pending if not is_probe(c)]
    count = len(pending)
    lead = (
        "Nothing is waiting for you."
        if count == 0
        else f"{count} proposed correction{'s' if count != 1 else ''} "
        f"{'waits' if count == 1 else 'wait'} for your decision."
    )
    cards = concat(pending_card(c, by_id.get(c.belief_id), subject, csrf) for c in pending) or Html(
        '<p class="empty">No AI tool has proposed a change. Corrections appear here until you '
        "confirm or reject them.</p>"
    )
    items = concat(_belief_item(b, subject) for b in beliefs) or Html(
        '<li class="empty">No beliefs yet.</li>'
    )
    probe_section = (
        render(
            """<h2 id="probes">Conformance probes</h2>
<p class="meta">Automated tests of this provider sent by a conformance runner (runtime
<code>$runtime</code>), checking that corrections wait for you. They say nothing about you:
reject them.</p>
$cards""",
            runtime=PROBE_RUNTIME_ID,
            cards=concat(
                pending_card(c, by_id.get(c.belief_id), subject, csrf, probe=True) for c in probes
            ),
        )
        if probes
        else Html("")
    )
    recent = (
        render(
            '<h2 id="decided">Recent decisions</h2>\n<section class="card"><ul class="beliefs">'
            "$items</ul></section>",
            items=concat(_resolved_item(c, subject) for c in resolved),
        )
        if resolved
        else Html("")
    )
    return render(
        """<h1>Hello, $name</h1>
<p class="lead">$lead</p>
<h2 id="pending">Waiting for your decision</h2>
$cards
<h2 id="beliefs">What engram believes about you</h2>
<section class="card"><ul class="beliefs">$items</ul></section>
$probes
$recent""",
        name=subject.display_name,
        lead=lead,
        cards=cards,
        items=items,
        probes=probe_section,
        recent=recent,
    )


def is_probe(correction: Correction) -> bool:
    """A correction a conformance runner sent to test the provider (labelled by its runtime id
    or its text), not a proposal about the subject."""
    return correction.runtime_id == PROBE_RUNTIME_ID or correction.new_value.startswith(PROBE_LABEL)


_KIND_TITLES = {
    ChangeKind.CREATED: "Created",
    ChangeKind.CORRECTED: "Corrected",
    ChangeKind.DELETED: "Deleted",
}


def _entry(entry: EvolutionEntry, subject: Subject) -> Html:
    via = (
        render(" · confirmed correction from <strong>$runtime</strong>", runtime=entry.runtime_id)
        if entry.runtime_id
        else Html("")
    )
    before = (
        render('<p class="statement"><del>$text</del></p>', text=entry.previous)
        if entry.previous is not None
        else Html("")
    )
    after = (
        render('<p class="statement"><ins>$text</ins></p>', text=entry.value)
        if entry.value is not None
        else Html("")
    )
    return render(
        """<li class="entry">
<p class="meta"><strong>$title</strong> · version $version · $at$via</p>
$before$after</li>""",
        title=_KIND_TITLES.get(entry.kind, entry.kind.value),
        version=entry.version,
        at=when(entry.at, subject.timezone),
        via=via,
        before=before,
        after=after,
    )


def history(
    subject: Subject,
    belief_id: str,
    current: Belief | None,
    entries: Sequence[EvolutionEntry],
    pending: Sequence[Correction],
    csrf: str,
) -> Html:
    """One belief: its current value, corrections waiting for it, and every change, newest first."""
    if current is None:
        head = Html(
            '<section class="card"><p class="empty">This belief was deleted; its content is '
            "erased and only the record of its changes remains.</p></section>"
        )
    else:
        head = render(
            """<section class="card"><span class="label">Current</span>
<p class="statement">$text</p>
<p class="meta"><span class="tag">$category</span>version $version · confidence $confidence ·
source $source</p></section>""",
            text=current.statement,
            category=current.category,
            version=current.version,
            confidence=f"{current.confidence:.2f}",
            source=current.source,
        )
    waiting = concat(pending_card(c, current, subject, csrf, probe=is_probe(c)) for c in pending)
    if waiting:
        waiting = render("<h2>Waiting for your decision</h2>\n$cards", cards=waiting)
    return render(
        """<p><a href="$back">← All corrections and beliefs</a></p>
<h1>History of a belief</h1>
<p class="lead">Belief <code>$bid</code></p>
$head
$waiting
<h2>Changes, newest first</h2>
<ol class="timeline">$entries</ol>""",
        back=BASE,
        bid=belief_id,
        head=head,
        waiting=waiting,
        entries=concat(_entry(e, subject) for e in entries),
    )


def problem(
    title: str, message: str, action_href: str = BASE, action: str = "Back to review"
) -> Html:
    """The body of an error page: what happened and the one thing to do next."""
    return render(
        """<section class="card narrow problem">
<h1>$title</h1>
<p>$message</p>
<div class="actions"><a href="$href">$action</a></div>
</section>""",
        title=title,
        message=message,
        href=action_href,
        action=action,
    )


__all__ = [
    "BASE",
    "MEMORIES",
    "account",
    "dashboard",
    "history",
    "is_probe",
    "link_landing",
    "pending_card",
    "problem",
    "sign_in",
    "when",
]
