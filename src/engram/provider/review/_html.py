"""HTML building blocks of the review page: escaping, the page layout, CSS and security headers.

Every value that reaches a page goes through :func:`render`, which escapes it unless it is
already :class:`Html` (markup this package built). A plain ``str`` is therefore always text: a
belief statement such as ``<script>alert(1)</script>`` shows as those characters and runs nothing.
The stylesheet is inline and allowed by its SHA-256 in the Content-Security-Policy, which forbids
everything else (scripts, frames, images, fonts, connections, foreign form targets); the page needs
no script at all. ``docs/spec/review-page.md`` ("Security headers") lists the headers.
"""

from __future__ import annotations

import base64
import hashlib
import html
import string
from collections.abc import Iterable, Mapping

from starlette.responses import HTMLResponse


class Html(str):
    """Markup that is already safe: built by this package from escaped parts."""

    __slots__ = ()


def esc(value: object) -> Html:
    """``value`` as text inside HTML (element content or a quoted attribute)."""
    return Html(html.escape(str(value), quote=True))


def render(template: str, /, **values: object) -> Html:
    """Fill ``$name`` placeholders; every value is escaped unless it is :class:`Html`."""
    filled = {k: v if isinstance(v, Html) else esc(v) for k, v in values.items()}
    return Html(string.Template(template).substitute(filled))


def concat(parts: Iterable[Html]) -> Html:
    return Html("".join(parts))


CSS = """
:root{color-scheme:light dark;--bg:#f6f7f9;--card:#fff;--ink:#1d232b;--muted:#5d6875;
--line:#dde2e8;--accent:#2456c7;--ok:#1d7a46;--okbg:#e6f4ec;--bad:#a8322d;--badbg:#fbeceb;
--new:#7a4c00;--newbg:#fff3d6}
@media (prefers-color-scheme:dark){:root{--bg:#14181d;--card:#1d232b;--ink:#e8ecf0;
--muted:#a3adb8;--line:#303943;--accent:#8fb0ff;--ok:#7ad19d;--okbg:#173326;--bad:#ff9b95;
--badbg:#3a1d1c;--new:#ffd27a;--newbg:#3a2e12}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);line-height:1.5;
font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif}
.wrap{max-width:60rem;margin:0 auto;padding:0 1.25rem}
header.top{background:var(--card);border-bottom:1px solid var(--line)}
header.top .wrap{display:flex;align-items:center;justify-content:space-between;gap:.5rem 1rem;
min-height:3.5rem;flex-wrap:wrap;padding-top:.4rem;padding-bottom:.4rem}
nav.pages{display:flex;gap:1rem}nav.pages a{text-decoration:none;font-weight:600}
nav.pages a[aria-current=page]{color:var(--ink);border-bottom:2px solid var(--accent)}
.brand{font-weight:600;letter-spacing:.01em}.brand b{color:var(--accent)}
.who{display:flex;align-items:center;gap:.75rem;color:var(--muted);font-size:.95rem}
main.wrap{padding-top:1.5rem;padding-bottom:2rem}
h1{font-size:1.6rem;margin:.5rem 0 .25rem}h2{font-size:1.15rem;margin:2rem 0 .75rem}
.lead{color:var(--muted);margin:0 0 1rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:.75rem;padding:1rem 1.25rem;
margin:0 0 1rem}
.narrow{max-width:28rem;margin:2rem auto}
.compare{display:grid;grid-template-columns:1fr 1fr;gap:1rem;margin:.75rem 0}
@media (max-width:40rem){.compare{grid-template-columns:1fr}}
.side{border-radius:.5rem;padding:.75rem 1rem;border:1px solid var(--line)}
.side.now{background:var(--bg)}.side.proposed{background:var(--okbg);border-color:var(--ok)}
.label{display:block;font-size:.75rem;text-transform:uppercase;letter-spacing:.06em;
color:var(--muted);margin-bottom:.25rem}
.statement{white-space:pre-wrap;overflow-wrap:anywhere;margin:0}
.meta{color:var(--muted);font-size:.9rem;margin:.25rem 0 0;overflow-wrap:anywhere}
.problem p{overflow-wrap:anywhere}
.tag{display:inline-block;font-size:.75rem;padding:.05rem .5rem;border-radius:1rem;
border:1px solid var(--line);color:var(--muted);margin-right:.35rem}
.tag.new{background:var(--newbg);color:var(--new);border-color:var(--new)}
.tag.confirmed{background:var(--okbg);color:var(--ok);border-color:var(--ok)}
.tag.rejected{background:var(--badbg);color:var(--bad);border-color:var(--bad)}
.tag.probe{background:var(--bg);color:var(--muted);border-style:dashed}
.card.probe{border-style:dashed;opacity:.85}
.actions{display:flex;gap:.5rem;flex-wrap:wrap;align-items:center;margin-top:.5rem}
.actions form{margin:0}
button{font:inherit;border-radius:.5rem;padding:.45rem 1rem;cursor:pointer;
border:1px solid var(--line);background:var(--card);color:var(--ink)}
button.primary{background:var(--ok);border-color:var(--ok);color:#fff;font-weight:600}
button.danger{color:var(--bad);border-color:var(--bad)}
button.link{border:none;background:none;color:var(--accent);padding:0;text-decoration:underline}
button:focus-visible,a:focus-visible,input:focus-visible{outline:3px solid var(--accent);
outline-offset:2px}
a{color:var(--accent)}a.danger{color:var(--bad)}
label.field{display:block;font-weight:600;margin:.75rem 0 .25rem}
input[type=password],input[type=search]{width:100%;font:inherit;padding:.5rem .75rem;
border-radius:.5rem;border:1px solid var(--line);background:var(--bg);color:var(--ink)}
form.search{display:flex;gap:.5rem;align-items:center}form.search input{flex:1;min-width:0}
form.search label.field{margin:0}
.tag.current{background:var(--okbg);color:var(--ok);border-color:var(--ok)}
.tag.forgotten{background:var(--newbg);color:var(--new);border-color:var(--new)}
.tag.superseded{background:var(--bg);color:var(--muted);border-style:dashed}
.pager{display:flex;gap:1rem;justify-content:space-between;margin:1rem 0}
.card.warning{border-color:var(--bad)}
.notice{border-radius:.5rem;padding:.75rem 1rem;margin:0 0 1rem;border:1px solid var(--ok);
background:var(--okbg)}
.notice.error{border-color:var(--bad);background:var(--badbg)}
.empty{color:var(--muted);font-style:italic}
ul.beliefs{list-style:none;padding:0;margin:0}
ul.beliefs li{padding:.75rem 0;border-top:1px solid var(--line)}
ul.beliefs li:first-child{border-top:none}
ol.timeline{list-style:none;padding:0;margin:0;border-left:2px solid var(--line)}
ol.timeline li{position:relative;padding:0 0 1rem 1.25rem}
ol.timeline li::before{content:"";position:absolute;left:-.45rem;top:.45rem;width:.7rem;
height:.7rem;border-radius:50%;background:var(--accent)}
del{color:var(--bad)}ins{color:var(--ok);text-decoration:none}
footer{color:var(--muted);font-size:.85rem;padding-bottom:2rem;border-top:1px solid var(--line);
padding-top:1rem}
code{font-size:.9em;overflow-wrap:anywhere}
""".strip()

_CSS_HASH = base64.b64encode(hashlib.sha256(CSS.encode("utf-8")).digest()).decode("ascii")

CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; style-src 'sha256-{_CSS_HASH}'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)

SECURITY_HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # Not no-referrer: with it browsers send "Origin: null" on our own form posts.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}

_LAYOUT = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>$title · engram $section</title>
<style>$css</style>
</head>
<body>
<header class="top"><div class="wrap">
<span class="brand">engram <b>$section</b></span>$account</div>
</header>
<main class="wrap">
$notice$body
</main>
<footer class="wrap">$footer</footer>
</body>
</html>
"""


# Each section of the subject's pages: (the brand's second word, the footer's sentence).
SECTIONS: Mapping[str, tuple[str, str]] = {
    "review": (
        "review",
        "Corrections proposed by your AI tools wait here until you decide. "
        "Nothing is applied without you.",
    ),
    "memories": (
        "memories",
        "What your AI tools remember about you. Forget hides a memory and can be undone; "
        "erase removes it for good.",
    ),
}


def page(
    title: str,
    body: Html,
    *,
    section: str = "review",
    account: Html | None = None,
    notice: str | None = None,
    error: str | None = None,
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> HTMLResponse:
    """A complete page with the security headers; ``notice``/``error`` show a banner above;
    ``section`` (a key of :data:`SECTIONS`) names the brand and the footer."""
    brand, footer = SECTIONS[section]
    banner = Html("")
    if error:
        banner = render('<p class="notice error" role="alert">$text</p>\n', text=error)
    elif notice:
        banner = render('<p class="notice" role="status">$text</p>\n', text=notice)
    document = render(
        _LAYOUT,
        title=title,
        section=brand,
        footer=footer,
        css=Html(CSS),
        account=account or Html(""),
        notice=banner,
        body=body,
    )
    return HTMLResponse(
        document, status_code=status, headers={**SECURITY_HEADERS, **(headers or {})}
    )


__all__ = [
    "CONTENT_SECURITY_POLICY",
    "CSS",
    "SECTIONS",
    "SECURITY_HEADERS",
    "Html",
    "concat",
    "esc",
    "page",
    "render",
]
