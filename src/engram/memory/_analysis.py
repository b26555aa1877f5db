"""Text analysis for every Unicode script: the words that index terms and local vectors use.

One analysis serves the write path, the query path, tantivy's index (which receives these
words, stemmed, joined by spaces) and the local vectors, so a memory and a query in the same
script always meet. Rules (``docs/spec/memory-retrieval.md``, "Words in every script"):

- ASCII text keeps the original analysis exactly: lower-cased, apostrophes dropped, runs of
  ``[a-z0-9]``.
- Other text: NFKC, case folding (``ß`` becomes ``ss``), then each character once through a
  cached table: Latin, Greek and Cyrillic diacritics, Arabic harakat and Hebrew points are
  removed (``ü``/``u``, ``é``/``e``, ``ё``/``е``); a few letters without a decomposition fold by
  a short table (``ø``/``o``, ``ł``/``l``, ``đ``/``d``, ``æ``/``ae``); decimal digits of any
  script become ASCII digits; format characters (ZWJ, ZWNJ, direction marks, soft hyphen) and
  variation selectors disappear; every other mark stays with its letter (Devanagari vowel
  signs, the Japanese voicing marks); punctuation, symbols, spaces and everything else
  separate words. Emoji are symbols, so not words: as words they lengthened the English turns
  that carry one and cost a LoCoMo question (measured), and queries rarely hold one.
- Scripts written without spaces (Han, kana and Hangul as one CJK group, Thai, Lao, Khmer,
  Myanmar, Tibetan) become overlapping bigrams of letters (a letter with its marks); a lone
  letter stays a unigram. Other scripts form words; a change of script ends a word.
- A word longer than ``MAX_WORD`` characters is cut into pieces of that length (bounds the
  work one pathological word can cause: a megabyte of one letter is pieces of one term).
"""

from __future__ import annotations

import re
import unicodedata

MAX_WORD = 64
_ASCII_WORD = re.compile(rf"[a-z0-9]{{1,{MAX_WORD}}}")
# Groups written without spaces: their runs are cut into letter bigrams. Han, kana and Hangul
# share one group so that a Japanese run of kanji and kana is one run, as in Lucene's CJK bigrams.
_BIGRAM_GROUPS = frozenset(
    {"CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "HANGUL", "IDEOGRAPHIC", "BOPOMOFO"}
)
_SEGMENTED = {"THAI": "THAI", "LAO": "LAO", "KHMER": "KHMER", "MYANMAR": "MYANMAR"}
_SEGMENTED |= {"TIBETAN": "TIBETAN"}
_CJK = "CJK"
# Marks removed wherever they occur: the generic combining diacritics (the accents of Latin,
# Greek and Cyrillic after decomposition), Arabic harakat and Hebrew points (optional
# vocalisation that users rarely type).
_STRIP_MARKS = (
    (0x0300, 0x036F),
    (0x1AB0, 0x1AFF),
    (0x1DC0, 0x1DFF),
    (0x20D0, 0x20FF),
    (0xFE20, 0xFE2F),
    (0x0591, 0x05BD),
    (0x05BF, 0x05BF),
    (0x05C1, 0x05C2),
    (0x05C4, 0x05C5),
    (0x05C7, 0x05C7),
    (0x0610, 0x061A),
    (0x064B, 0x065F),
    (0x0670, 0x0670),
)
# Letters with no canonical decomposition that readers still expect folded (as Lucene's ASCII
# folding does). Arabic spelling variants (ta marbuta, alef maqsura) are left to the Snowball
# Arabic stemmer, which normalises them itself.
_LETTER_FOLD = {
    "ø": "o",
    "ł": "l",
    "đ": "d",
    "ð": "d",
    "ħ": "h",
    "ŧ": "t",
    "ı": "i",
    "æ": "ae",
    "œ": "oe",
    "þ": "th",
}
# The typographic apostrophe (U+2019) stays a separator, as it was before issue 30: folding
# it like "'" changed the words of every LoCoMo turn with a curly contraction or possessive and
# cost an evidence turn at recall@10 (0.804 -> 0.803 with the model, measured).
_APOSTROPHES = frozenset("'\u02bc")


def _strippable(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _STRIP_MARKS)


def _fold_char(ch: str) -> str:
    """What one (NFKC, case-folded) character becomes before words are cut."""
    if ch.isascii():
        if ch.isalnum():
            return ch
        return "" if ch == "'" else " "
    if ch in _APOSTROPHES:
        return ""
    cp = ord(ch)
    if 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF:
        return ""  # variation selectors: presentation only
    category = unicodedata.category(ch)
    major = category[0]
    if category == "Cf":
        return ""  # ZWJ, ZWNJ, direction marks, soft hyphen: invisible inside a word
    if major == "M":
        return "" if _strippable(ch) else ch
    if major == "L":
        decomposed = unicodedata.normalize("NFD", ch)
        if any(_strippable(c) for c in decomposed):
            ch = unicodedata.normalize("NFC", "".join(c for c in decomposed if not _strippable(c)))
        return _LETTER_FOLD.get(ch, ch)
    if category == "Nd":
        return str(unicodedata.digit(ch))
    if major == "N":
        return ch
    return " "  # punctuation, symbols (emoji too: see the module's docstring), spaces


# The two per-character caches stop growing here, so text that walks the whole code space costs
# time (each character computed again), never unbounded memory in a long-running server.
_CACHE_LIMIT = 1 << 16


class _FoldTable(dict[int, str]):
    """``str.translate`` table filled on first sight of each code point."""

    def __missing__(self, cp: int) -> str:
        folded = _fold_char(chr(cp))
        if len(self) < _CACHE_LIMIT:
            self[cp] = folded
        return folded


_FOLD = _FoldTable()


class _GroupTable(dict[str, str]):
    """A letter's script group (the first word of its Unicode name, bigram scripts merged);
    ``""`` for a mark, which stays in its letter's group."""

    def __missing__(self, ch: str) -> str:
        if unicodedata.category(ch)[0] == "M":
            group = ""
        else:
            first = unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0]
            group = _CJK if first in _BIGRAM_GROUPS else _SEGMENTED.get(first, first)
            if first == "DIGIT":
                group = "LATIN"  # ASCII digits: part of a Latin word, as in the ASCII analysis
        if len(self) < _CACHE_LIMIT:
            self[ch] = group
        return group


_GROUP = _GroupTable()
_BIGRAM = frozenset({_CJK, *_SEGMENTED.values()})


def fold(text: str) -> str:
    """``text`` normalised for word cutting: the rules above, words separated by spaces."""
    if text.isascii():
        return text.lower().replace("'", "")
    return unicodedata.normalize("NFKC", text).casefold().translate(_FOLD)


def script_of(word: str) -> str:
    """The script group of a word this module produced (``LATIN`` for ASCII words)."""
    return "LATIN" if word.isascii() else _GROUP[word[0]]


def _segments(run: str) -> list[tuple[str, list[str]]]:
    """A run of word characters cut where the script changes, as (group, letters with marks)."""
    out: list[tuple[str, list[str]]] = []
    group = ""
    letters: list[str] = []
    for ch in run:
        g = _GROUP[ch]
        if not g:
            if letters:
                letters[-1] += ch
            else:
                letters.append(ch)
            continue
        if g != group and letters:
            out.append((group or g, letters))
            letters = []
        group = g
        letters.append(ch)
    if letters:
        out.append((group or "UNKNOWN", letters))
    return out


def cache_sizes() -> tuple[int, int, int]:
    """Entries in the character-fold and script-group caches, and the limit of each."""
    return len(_FOLD), len(_GROUP), _CACHE_LIMIT


def words(text: str) -> list[str]:
    """The words of ``text`` in order (stop words kept): the raw material of every feature."""
    folded = fold(text)
    if folded.isascii():
        return _ASCII_WORD.findall(folded)
    out: list[str] = []
    for run in folded.split():
        if run.isascii():
            out.extend(_ASCII_WORD.findall(run))
            continue
        for group, letters in _segments(run):
            if group in _BIGRAM and len(letters) > 1:
                out.extend(letters[i] + letters[i + 1] for i in range(len(letters) - 1))
            else:
                word = "".join(letters)
                out.extend(word[i : i + MAX_WORD] for i in range(0, len(word), MAX_WORD))
    return out


__all__ = ["MAX_WORD", "cache_sizes", "fold", "script_of", "words"]
