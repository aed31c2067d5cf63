"""Text for memory search: identifier-aware tokens, the stored `searchText`, and the token estimate.

Prose and code words share one tokenizer so "normalize params" finds a fact that says `normalizeParams`:
camelCase, PascalCase, snake_case, kebab-case and digit runs are split, and the joined identifier is kept too
("normalizeParams" -> normalize, params, normalizeparams). No stopword list eats code words (get, name, value);
only a handful of English glue words are dropped, and BM25's idf discounts what is common anyway.
"""

from __future__ import annotations

import re

from nexusd.retrieve import pack as retrieve_pack

_WORD = re.compile(r"[A-Za-z0-9]+(?:[_'\-][A-Za-z0-9]+)*")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# Only glue words with no meaning in code; never get/set/name/value/self/new/use.
STOPWORDS = frozenset({"a", "an", "the", "of", "to", "and", "or", "is", "are", "was", "in", "on", "at", "it", "be"})

# Budgets are in tokens, estimated the way every budgeted op estimates them (nexusd.retrieve.pack).
CHARS_PER_TOKEN = retrieve_pack.CHARS_PER_TOKEN


def _norm(word: str) -> str:
    # A light, symmetric stem: plural "s" only ("params" ~ "param"), so queries and documents agree.
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def tokens(text: str) -> list[str]:
    """Lower-cased search tokens of `text`, identifier parts and whole identifiers both, in order."""
    out: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        pieces = re.split(r"[_'\-]", word)
        parts: list[str] = []
        for piece in pieces:
            parts.extend(_PART.findall(piece))
        whole = "".join(pieces).lower()
        for part in parts:
            low = part.lower()
            if low not in STOPWORDS:
                out.append(_norm(low))
        if len(parts) > 1 and whole not in STOPWORDS:
            out.append(_norm(whole))
    return out


def search_text(*fields: str | None) -> str:
    """The stored searchText: the original text plus the split tokens (also indexable by Kuzu FTS)."""
    original = "\n".join(f for f in fields if f)
    return f"{original}\n{' '.join(tokens(original))}"


def estimate_tokens(text: str) -> int:
    return retrieve_pack.estimate(text)
