"""Text analysis for retrieval: the same function turns a query and a stored document into index terms.

    words       runs of letters/digits, with `_ - ' .` inside a word kept together for the identifier and
                version forms below; any other character separates (so a trailing `?` or `,` never sticks
                to a word).
    apostrophes a negation is one word without its apostrophe, as people also type it (don't, dont -> dont);
                any other apostrophe (straight or curly) ends the word (what's -> what, user's -> user).
    numbers     digit runs are terms ("413", "20" in "Node 20"); a dotted version is one term and so are its
                prefixes ("3.9.1" -> 3.9.1, 3.9), so "Python 3.9" finds "3.9.1" and "0.28.0" finds itself.
    identifiers camelCase, PascalCase, snake_case and kebab-case words are split into their parts, and the
                joined word is kept too (should_ignore_error -> should, ignore, error, shouldignoreerror).
    stemming    every word term goes through the Snowball English stemmer (PyStemmer, the C build of the
                Snowball algorithms), cached per distinct word; numbers and versions are not stemmed.
    stopwords   English glue words of questions ("how do I", "why does", "what") are dropped; code words
                that happen to be English (get, set, name, value, new) are kept.

Kuzu's FTS extension cannot be told to do any of this (its tokenizer drops digits with the default ignore
pattern and cannot split identifiers), which is why history retrieval runs on the in-daemon index in
`nexusd.retrieve.index` and analyses both sides here.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import Stemmer  # PyStemmer

_STEMMER = Stemmer.Stemmer("english")

_WORD = re.compile(r"[A-Za-z0-9]+(?:[_'\u2019\-.][A-Za-z0-9]+)*")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_VERSION = re.compile(r"v?[0-9]+(?:\.[0-9]+)+")

STOPWORDS = frozenset(
    """a about above again all am an and any are as at be been being but by can could did do does
    doing done during each few for from had has have having he her here hers him his how i if in into is it its
    itself just me more most my myself no nor not of off on once only or other our ours out over own same she
    should so some such than that the their them then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours s t d ll m re ve
    instead""".split()
)
# "before" and "after" are not stopwords: code names ordering with them (before_request, afterEach, a hook
# monitor's `before`/`after`), and questions about ordering bugs ask with them (on the four tuning sets: six
# answers up, one down). "should" and "not" carry meaning in identifiers (should_ignore_error) but not in
# prose; identifier parts are kept regardless (see _word_terms), so dropping them from prose costs nothing there.


@lru_cache(maxsize=262_144)
def stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


@lru_cache(maxsize=262_144)
def _word_terms(word: str) -> tuple[str, ...]:
    """Terms of one word as written (case kept for camelCase splitting)."""
    lower = word.lower()
    if _VERSION.fullmatch(lower):
        digits = lower.lstrip("v").split(".")
        return tuple(".".join(digits[:n]) for n in range(len(digits), 1, -1))
    if "." in word:  # a dotted name (module.attr, file.ext): its words
        out: list[str] = []
        for piece in word.split("."):
            if piece:
                out.extend(_word_terms(piece))
        return tuple(out)
    pieces = [p for p in re.split(r"[_'\-]", word) if p]
    parts: list[str] = []
    for piece in pieces:
        parts.extend(_PART.findall(piece))
    if len(parts) <= 1:
        if lower in STOPWORDS:
            return ()
        return (lower if lower.isdigit() else stem(lower),)
    out = [p.lower() if p.isdigit() else stem(p.lower()) for p in parts]
    out.append(stem("".join(pieces).lower()))  # the joined word as a one-part word would be: stemmed
    return tuple(out)


_NEGATION = re.compile(r"(?i)n['\u2019]t$")
_APOSTROPHE = re.compile(r"['\u2019]")


@lru_cache(maxsize=262_144)
def _raw_terms(raw: str) -> tuple[str, ...]:
    """Terms of one word as the text holds it (apostrophes: see the module docstring)."""
    if _NEGATION.search(raw):
        raw = raw[:-2] + raw[-1]  # the apostrophe out: don't -> dont
    word = _APOSTROPHE.split(raw, maxsplit=1)[0].strip("-_.")
    return _word_terms(word) if word else ()


def clear_caches() -> None:
    """Let the per-word caches go (a history build fills them with every word of every diff: ~12 MB for three
    repositories' whole history); queries refill them with their own few words."""
    stem.cache_clear()
    _word_terms.cache_clear()
    _raw_terms.cache_clear()


def terms(text: str) -> list[str]:
    """Index terms of `text`, in order, with repeats (term frequency counts)."""
    out: list[str] = []
    for raw in _WORD.findall(text or ""):
        out.extend(_raw_terms(raw))
    return out


def term_counts(text: str) -> dict[str, int]:
    """Term frequencies of `text` (what `Counter(terms(text))` gives, counted per distinct word first)."""
    out: dict[str, int] = {}
    get = out.get
    for raw, n in Counter(_WORD.findall(text or "")).items():
        for term in _raw_terms(raw):
            out[term] = get(term, 0) + n
    return out


def query_terms(text: str) -> list[str]:
    """Distinct terms of a query, in order of first appearance."""
    return list(dict.fromkeys(terms(text)))


# What a question asks for, from its English form alone (before stopwords drop the words that say it). "How do
# I ...", "show me ...", "is there a way ..." ask how to use the code: a doc section answers. "When did ...",
# "which commit ...", "why was ... removed", "... first added" ask about a change: a commit (or the changelog
# bullet that records it) answers. Most queries say neither, and rank as they did.
_DOC_INTENT = re.compile(
    r"(?ix)^\W*(?:"
    r"how\s+(?:do|can|should|would|could|to|does\s+one|do\s+you|can\s+you)\b"
    r"|show\s+me\b|is\s+there\s+(?:a|any)\s+(?:way|option|setting|example)\b"
    r"|(?:can|could|should|must)\s+i\b|do\s+i\s+(?:need|have)\b"
    r"|where\s+(?:do|can|should)\s+i\b|what\s+(?:is|are)\s+(?:the\s+)?(?:best|recommended|right)\b"
    r"|(?:explain|describe|example\s+of)\b"
    r")"
)
_HISTORY_INTENT = re.compile(
    r"(?ix)\b(?:"
    r"when\s+(?:did|was|were|has|have|had)\b|since\s+when\b"
    r"|(?:which|what)\s+(?:commit|change|pr|pull\s+request|patch|release|version)\b"
    r"|who\s+(?:added|changed|removed|wrote|introduced|broke|fixed)\b"
    r"|why\s+(?:did|was|were|had)\b"
    r"|(?:first|originally)\s+(?:added|introduced|written)\b"
    r"|(?:got|been|was|were)\s+(?:fixed|removed|dropped|reverted|renamed|deprecated|changed)\b"
    r"|stop(?:ped)?\s+\w+ing\b|used\s+to\b|no\s+longer\b"
    r")"
)


def intent(text: str) -> str:
    """'doc' for a how-to question, 'history' for a question about a change, '' for neither (or both)."""
    doc = bool(_DOC_INTENT.search(text or ""))
    history = bool(_HISTORY_INTENT.search(text or ""))
    return "doc" if doc and not history else "history" if history and not doc else ""
