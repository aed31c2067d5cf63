"""Identifier-aware text splitting, shared by symbol search and memory recall.

"normalizeParams" -> ["normalize", "params"], "HTTP2Server" -> ["http", "2", "server"],
"normalize_params" -> ["normalize", "params"]. Kuzu's FTS tokenizer splits on punctuation but not on case
changes and drops digits (docs/field-notes.md, full-text search), so text that must be found by identifier words carries these
tokens in its `searchText`.
"""

from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z0-9]+")
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z]|[0-9]|\b)|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def split_identifier(name: str) -> list[str]:
    """Lower-cased word parts of one identifier (camelCase, PascalCase, snake_case, digits)."""
    out: list[str] = []
    for word in _WORD.findall(name):
        out.extend(p.lower() for p in _PARTS.findall(word))
    return out


@lru_cache(maxsize=131_072)
def _tokens(word: str) -> tuple[str, ...]:
    """A word lower-cased, then its identifier parts. Cached: the same words recur across a repository's
    symbols (a cold index of the standard library splits ~150k words, of which a few thousand are distinct)."""
    return (word.lower(), *split_identifier(word))


def clear_cache() -> None:
    """Forget the split words (after a big batch: the entries it made would outlive it among its freed objects)."""
    _tokens.cache_clear()


def search_text(*texts: str) -> str:
    """The original words plus their identifier parts, lower-cased, for full-text indexes."""
    words: list[str] = []
    seen: set[str] = set()
    for text in texts:
        for word in _WORD.findall(text or ""):
            for token in _tokens(word):
                if token not in seen:
                    seen.add(token)
                    words.append(token)
    return " ".join(words)
