"""What a query says about time: a window, an ordering preference, "what it was before".

Deterministic rules over the query's words, no model (docs/spec/memory-retrieval.md "Time and
updates"). Relative expressions ("yesterday", "last week", "3 days ago") are read against the
recall instant (the engine's clock, or ``as_of``). English is complete; German, French, Spanish
and Portuguese have the relative-day, last-week/month/year, latest/first and previously words
(a table each; month names and dates are English or ISO 8601). A query with none of these has no
intent, and recall is then exactly what it is without this module.

- window: "today", "yesterday", "this/last week|month|year", "N days|weeks|months|years ago",
  "in the last/past N days|weeks|months|years", "recently" (30 days), "in March 2024",
  "in March" (the latest March not after the instant), "in 2024", "5 March 2024",
  "March 5, 2024", "2024-03-05"; "before", "after", "since", "until" a date bound it on one
  side.
- event: "before/after/since <the|my|our|...> <words>" ("before the move"): the words name an
  event; the window ends (or starts) at the time of the memory that best matches them.
- order: "latest", "most recent", "now", "currently", "these days", "still" prefer newer
  memories; "first", "earliest", "originally", "initially", "at first" prefer older ones.
- previous: "before" ending the query (or before "that", "then", "now"), "previously",
  "used to", "formerly", "former", "originally", "no longer", "anymore", "my/the old":
  superseded memories come back into recall and are preferred (``engram.memory._supersede``).
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

LATEST = "latest"
EARLIEST = "earliest"
MAX_QUERY = 4_000  # characters read: a longer query's tail names no time recall can use

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2,
    "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_NUMBER = r"(\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + ")"
_UNIT = r"(day|week|month|year)s?"
_DETERMINERS = r"(?:the|my|our|his|her|their|your|we|i|he|she|they|it)"

# Words of other languages, mapped to the English cue they mean (whole words, case folded).
_CUES = {
    "yesterday": ("gestern", "ayer", "ontem"),  # not French "hier": German "here"
    "today": ("heute", "aujourd'hui", "hoy", "hoje"),
    "last week": ("letzte woche", "vergangene woche", "semaine dernière", "la semana pasada",
                  "semana passada"),
    "last month": ("letzten monat", "vergangenen monat", "mois dernier", "el mes pasado",
                   "mês passado"),
    "last year": ("letztes jahr", "vergangenes jahr", "l'année dernière", "l'an dernier",
                  "el año pasado", "ano passado"),
    "latest": ("neueste", "neuesten", "aktuell", "derzeit", "jetzt", "dernier", "dernière",
               "actuellement", "maintenant", "último", "última", "actualmente", "ahora",
               "atualmente", "agora"),
    "first": ("zuerst", "erste", "ersten", "ursprünglich", "premier", "première",
              "initialement", "primero", "primera", "originalmente", "primeiro", "primeira"),
    "previously": ("früher", "vorher", "davor", "auparavant", "avant", "anciennement",
                   "antes", "anteriormente"),
}  # fmt: skip
_FOREIGN = [
    (re.compile(r"(?<!\w)" + re.escape(word) + r"(?!\w)"), english)
    for english, words in _CUES.items()
    for word in words
]

_LATEST = re.compile(
    r"\b(latest|most recent(ly)?|newest|now|currently|current|these days|nowadays|still|"
    r"at the moment|right now|last time)\b"
)
_EARLIEST = re.compile(
    r"\b(first|earliest|originally|initially|at first|oldest|in the beginning)\b"
)
_PREVIOUS = re.compile(
    r"\b(previously|used to|formerly|former|originally|no longer|anymore|any more)\b"
    r"|\b(my|our|his|her|their|your|the) old\b"
    r"|\bbefore(?: (?:that|then|this|now))?\s*[?.!]*$"
)


@dataclass(frozen=True)
class TimeIntent:
    """What the query asks of time. ``start``/``end``: the window (either may be open);
    ``event``: words naming an event whose time bounds the window on ``event_side``;
    ``order``: LATEST or EARLIEST; ``previous``: superseded memories count, and are preferred."""

    start: datetime | None = None
    end: datetime | None = None
    event: str = ""
    event_side: str = ""  # "before" (the window ends at the event) or "after"
    order: str = ""
    previous: bool = False

    @property
    def windowed(self) -> bool:
        return self.start is not None or self.end is not None or bool(self.event)


def _fold(query: str) -> str:
    text = unicodedata.normalize("NFKC", query[:MAX_QUERY]).casefold()
    text = text.replace("’", "'")
    for pattern, english in _FOREIGN:
        text = pattern.sub(english, text)
    return re.sub(r"\s+", " ", text).strip()


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _add_months(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months
    return _month_start(index // 12, index % 12 + 1)


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _span(unit: str, now: datetime, back: int) -> tuple[datetime, datetime]:
    """The calendar ``unit`` ``back`` units before the one holding ``now`` (0: this one, to now)."""
    today = _day(now)
    if unit == "day":
        start = today - timedelta(days=back)
        return start, (now if back == 0 else start + timedelta(days=1))
    if unit == "week":
        start = today - timedelta(days=today.weekday() + 7 * back)
        return start, (now if back == 0 else start + timedelta(days=7))
    if unit == "month":
        start = _add_months(today, -back)
        return start, (now if back == 0 else _add_months(start, 1))
    start = datetime(now.year - back, 1, 1, tzinfo=UTC)
    return start, (now if back == 0 else datetime(now.year - back + 1, 1, 1, tzinfo=UTC))


def _named_date(text: str, now: datetime) -> tuple[datetime, datetime, re.Match[str]] | None:
    """The first calendar date, month or year the text names, as a window, with its match."""
    for pattern, build in _DATES:
        match = pattern.search(text)
        if match is None:
            continue
        window = build(match, now)
        if window is not None:
            return window[0], window[1], match
    return None


def _iso(m: re.Match[str], _: datetime) -> tuple[datetime, datetime] | None:
    return _day_window(int(m[1]), int(m[2]), int(m[3]))


def _day_month_year(m: re.Match[str], _: datetime) -> tuple[datetime, datetime] | None:
    return _day_window(int(m[3]), _MONTHS[m[2]], int(m[1]))


def _month_day_year(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    year = int(m[3]) if m[3] else now.year
    return _day_window(year, _MONTHS[m[1]], int(m[2]))


def _day_window(year: int, month: int, day: int) -> tuple[datetime, datetime] | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return start, start + timedelta(days=1)


def _month_year(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    month = _MONTHS[m[1]]
    year = int(m[2]) if m[2] else now.year - (1 if month > now.month else 0)
    start = _month_start(year, month)
    return start, _add_months(start, 1)


def _year(m: re.Match[str], _: datetime) -> tuple[datetime, datetime] | None:
    year = int(m[1])
    return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)


_YEAR = r"((?:19[7-9]|20\d)\d)"
_DATES = [
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), _iso),
    (re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)? (?:of )?" + _MONTH + r",? " + _YEAR + r"\b"),
     _day_month_year),
    (re.compile(r"\b" + _MONTH + r" (\d{1,2})(?:st|nd|rd|th)?(?:,? " + _YEAR + r")?\b"),
     _month_day_year),
    # A month alone only after a preposition: "may" and "march" are also verbs.
    (re.compile(r"\b(?:in|during|of|since|before|after|until|by) " + _MONTH
                + r"(?:,? " + _YEAR + r")?\b"), _month_year),
    (re.compile(r"\b" + _MONTH + r",? " + _YEAR + r"\b"), _month_year),
    (re.compile(r"\b" + _YEAR + r"\b"), _year),
]  # fmt: skip

_Window = tuple[datetime, datetime]
_RELATIVE: list[tuple[re.Pattern[str], Callable[[re.Match[str], datetime], _Window]]] = [
    (re.compile(r"\bday before yesterday\b"), lambda _m, now: _span("day", now, 2)),
    (re.compile(r"\b(yesterday|last night)\b"), lambda _m, now: _span("day", now, 1)),
    (re.compile(r"\b(today|tonight|this (morning|afternoon|evening))\b"),
     lambda _m, now: _span("day", now, 0)),
    (re.compile(r"\b(this|current) (week|month|year)\b"), lambda m, now: _span(m[2], now, 0)),
    (re.compile(r"\blast (week|month|year)\b"), lambda m, now: _span(m[1], now, 1)),
    (re.compile(r"\b(?:in |over |during )?the (?:last|past) " + _NUMBER + " " + _UNIT + r"\b"),
     lambda m, now: (_span(m[2], now, _number(m[1]))[0], now)),
    (re.compile(r"\b(?:in |over |during )?the (?:last|past) (day|week|month|year)\b"),
     lambda m, now: (_span(m[1], now, 1)[0], now)),
    (re.compile(r"\b" + _NUMBER + " " + _UNIT + r" ago\b"),
     lambda m, now: _span(m[2], now, _number(m[1]))),
    (re.compile(r"(?<!most )\brecent(ly)?\b"), lambda _m, now: (now - timedelta(days=30), now)),
]  # fmt: skip

_EVENT = re.compile(
    r"\b(before|after|since|until|till) " + _DETERMINERS + r" ((?:[^\W\d][\w'-]* ?){1,4})"
)
_STOP = re.compile(r"\b(and|or|but|when|what|where|who|did|do|does|was|were|is|are)\b.*$")


def time_intent(query: str, now: datetime) -> TimeIntent | None:
    """The time intent of ``query`` read at ``now`` (aware), or None when it names no time."""
    text = _fold(query)
    start: datetime | None = None
    end: datetime | None = None
    event, side = "", ""
    for pattern, build in _RELATIVE:
        match = pattern.search(text)
        if match is not None:
            start, end = build(match, now)
            break
    else:
        named = _named_date(text, now)
        if named is not None:
            start, end, match = named
            before = text[: match.start()].rstrip()
            if re.search(r"\b(before|until|till|by)$", before):
                start, end = None, start
            elif re.search(r"\b(after|since)$", before):
                start, end = end if before.endswith("after") else start, None
        else:
            found = _EVENT.search(text)
            if found is not None:
                words = _STOP.sub("", found[2]).strip(" ?.!,'")
                if words:
                    event = words
                    side = "before" if found[1] in ("before", "until", "till") else "after"
    previous = _PREVIOUS.search(text) is not None and not event
    order = ""
    if _LATEST.search(text):
        order = LATEST
    elif _EARLIEST.search(text) or previous:
        order = EARLIEST
    if start is None and end is None and not event and not order and not previous:
        return None
    return TimeIntent(start, end, event, side, order, previous)


__all__ = ["EARLIEST", "LATEST", "TimeIntent", "time_intent"]
