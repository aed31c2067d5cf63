"""Identifier search over a repository's snapshot: dictionary lookups, never Cypher (target: 2 ms p50).

Kuzu's FTS does not split camelCase and its stopwords eat code words (get, name, self, value), so symbols are
found here, in tiers, each result saying which tier matched it:
    exact      the name, exactly (then ignoring case)
    qualified  the qualified name or semantic key, or a dotted suffix of the qualified name ("Base.run")
    prefix     the name starts with the query (ignoring case)
    words      every word of the query is a part of the split name ("normalize params" -> normalizeParams,
               normalize_params, NormalizeParams)
    fulltext   every word appears in the qualified name, path, signature or the first words of the doc
Within a tier the order is fixed: first how closely the name matches the query words (`closeness`: every word
present, nothing extra, in order), then definitions a module or class offers before ones local to a function
body, then the most called first (call sites in the graph: among same-named definitions the one the code uses
most is the likeliest one meant), then kind (class, function, method, ... module), non-test files first, shorter
path, then the semantic key; so the same query on the same graph always answers the same list.
"""

from __future__ import annotations

import bisect
import fnmatch
import functools
from collections.abc import Iterable, Iterator
from typing import Any

from ..textsplit import split_identifier
from .snapshot import Snapshot, Sym

TIERS = ("exact", "qualified", "prefix", "words", "fulltext")
MAX_PREFIX_NAMES = 2_000  # distinct names a prefix may expand to before it stops (reported as a bound)


class Filters:
    def __init__(self, kind: str | None = None, path: str | None = None):
        self.kinds = {k.strip() for k in kind.split(",")} if kind else None
        self.path = path.strip("/") if path else None
        self.glob = bool(self.path and any(ch in self.path for ch in "*?["))

    def ok(self, sym: Sym) -> bool:
        if self.kinds is not None and sym.kind not in self.kinds:
            return False
        if self.path:
            if self.glob:
                return fnmatch.fnmatchcase(sym.path, self.path)
            return sym.path == self.path or sym.path.startswith(self.path.rstrip("/") + "/")
        return True


def search(snap: Snapshot, query: str, filters: Filters, want: int) -> tuple[list[tuple[str, Sym]], dict[str, Any]]:
    """Up to `want` (tier, symbol) pairs in answer order, plus what the search had to leave out.

    `want` is offset + limit of the page: tiers are computed in order and stop once enough results exist,
    which keeps the common case (an exact name) to a few dictionary lookups.
    """
    q = query.strip()
    out: list[tuple[str, Sym]] = []
    seen: set[str] = set()
    info: dict[str, Any] = {"exhausted": True}
    words = tuple(split_identifier(q))

    def order(sym: Sym) -> tuple[Any, ...]:
        return (*closeness(sym.name, words), _local(snap, sym), -len(snap.calls_in.get(sym.id, ())), *snap.rank_key(sym))

    for tier, syms in _tiers(snap, q, info):
        ranked = sorted((s for s in syms if s.id not in seen and filters.ok(s)), key=order)
        for sym in ranked:
            seen.add(sym.id)
            out.append((tier, sym))
        if len(out) > want:
            info["exhausted"] = False  # later tiers were not computed: the total is at least len(out)
            break
    return out, info


_SCOPES = frozenset({"function", "method", "property_function", "constant", "variable"})


def _local(snap: Snapshot, sym: Sym) -> bool:
    """A definition inside a function's body (a helper closure, a class made in a test) is local: found only
    after the definitions a module or a class offers."""
    parent = snap.by_id.get(sym.parent) if sym.parent else None
    return parent is not None and parent.kind in _SCOPES


@functools.lru_cache(maxsize=65_536)
def closeness(name: str, words: tuple[str, ...]) -> tuple[int, int, int]:
    """How closely a name's identifier parts match the query words, lower is closer: (query words missing from
    the name, parts of the name the query did not ask for, 1 when the words are not in the name's order).
    `get header` -> get_header (0, 0, 0) before header_get (0, 0, 1) before get_cookie_header (0, 1, 0)."""
    if not words:
        return (0, 0, 0)
    parts = [p.lower() for p in split_identifier(name)]
    wanted = set(words)
    missing = sum(1 for w in wanted if w not in parts)
    extra = sum(1 for p in parts if p not in wanted)
    it = iter(parts)
    in_order = all(any(p == w for p in it) for w in words)
    return (missing, extra, 0 if in_order else 1)


def _tiers(snap: Snapshot, q: str, info: dict[str, Any]) -> Iterator[tuple[str, Iterable[Sym]]]:
    low = q.lower()
    exact = list(snap.live(snap.name_exact.get(q, ())))
    exact_ci = [s for s in snap.live(snap.name_lower.get(low, ())) if s.name != q]
    yield "exact", [s for s in exact if s.name == q]
    yield "exact", [s for s in exact_ci if s.name.lower() == low]
    qualified: list[Sym] = [s for s in snap.live(snap.qname_lower.get(low, ())) if s.qname.lower() == low]
    key = snap.by_key.get(q) or snap.by_id.get(q)
    if key is not None:
        qualified.append(key)
    if "." in q:
        # "Base.run" names a member by its dotted suffix: look up the last part, then check the suffix.
        last = low.rsplit(".", 1)[1]
        suffix = "." + low
        qualified += [s for s in snap.live(snap.name_lower.get(last, ())) if s.qname.lower().endswith(suffix)]
    yield "qualified", qualified
    if low and not any(ch.isspace() for ch in low):
        yield "prefix", _prefix(snap, low, info)
    words = split_identifier(q)
    if words:
        yield "words", _all_words(snap, snap.name_tokens, words)
        yield "fulltext", _all_words(snap, snap.text_tokens, words)


def _prefix(snap: Snapshot, low: str, info: dict[str, Any]) -> Iterator[Sym]:
    names = snap.sorted_names
    i = bisect.bisect_left(names, low)
    n = 0
    while i < len(names) and names[i].startswith(low):
        if names[i] != low:
            yield from (s for s in snap.live(snap.name_lower.get(names[i], ())) if s.name.lower() == names[i])
        i += 1
        n += 1
        if n >= MAX_PREFIX_NAMES:
            info["prefixCut"] = MAX_PREFIX_NAMES
            return


def _all_words(snap: Snapshot, index: dict[str, Any], words: list[str]) -> list[Sym]:
    lists = [index.get(w) for w in dict.fromkeys(words)]
    if not lists or any(lst is None or not len(lst) for lst in lists):
        return []
    lists.sort(key=len)  # type: ignore[arg-type]
    common = set(lists[0])  # type: ignore[arg-type]
    for lst in lists[1:]:
        common.intersection_update(lst)  # type: ignore[arg-type]
        if not common:
            return []
    return list(snap.live(sorted(common)))


def result_row(snap: Snapshot, tier: str, sym: Sym) -> dict[str, Any]:
    row = sym.ref()
    row["qualifiedName"] = sym.qname
    if sym.signature:
        row["signature"] = sym.signature
    row["match"] = tier
    if snap.is_test(sym.path):
        row["test"] = True
    return row
