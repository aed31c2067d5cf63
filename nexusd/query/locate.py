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
present, nothing extra, in order), then definitions with a body before interface members (declarations only),
then definitions a module or class offers before ones local to a function
body, then the most used first (`usage`: the other files that call it, then its callers, bound edges only:
among same-named definitions the one the code uses, and uses from elsewhere, is the likeliest one meant), then
kind (class, function, method, ... module), non-test files first, shorter path, then the semantic key; so the
same query on the same graph always answers the same list.

The asker's context (`near`: the file being edited, optionally a line of it) ranks equally close names by their
relation to that file, right after closeness and before everything else (`Near.relation`): what a call at that line
is bound to in the graph (the resolver has read the receiver there: `response.close()`), then in scope at that line
(a definition of an enclosing function or class, innermost first; a class member goes with its class, members of
the enclosing classes' bases right after their own; then the file's top level; the definition holding the line
itself last, since the asker has that one open), the same file (when no line is given), defined in a file the near file imports (directly, then
through more import hops), a definition local to a function of the same file that does not enclose the line, then
by how many leading directories its path shares with the near file. Without `near` every symbol has the same relation and the order
is the one above.
"""

from __future__ import annotations

import bisect
import fnmatch
import functools
import weakref
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


def search(snap: Snapshot, query: str, filters: Filters, want: int,
           near: Near | None = None) -> tuple[list[tuple[str, Sym]], dict[str, Any]]:  # fmt: skip
    """Up to `want` (tier, symbol) pairs in answer order, plus what the search had to leave out.

    `want` is offset + limit of the page: tiers are computed in order and stop once enough results exist,
    which keeps the common case (an exact name) to a few dictionary lookups.
    """
    q = query.strip()
    out: list[tuple[str, Sym]] = []
    seen: set[str] = set()
    info: dict[str, Any] = {"exhausted": True}
    words = tuple(split_identifier(q))

    def head(sym: Sym) -> tuple[Any, ...]:
        related = near.relation(sym) if near is not None else _UNRELATED
        return (*closeness(sym.name, words), _declared_only(snap, sym), *related, _local(snap, sym))

    for tier, syms in _tiers(snap, q, info):
        kept = [s for s in syms if s.id not in seen and filters.ok(s)]
        for sym in ranked(snap, kept, head, want + 1 - len(out)):
            seen.add(sym.id)
            out.append((tier, sym))
        if len(out) > want:
            info["exhausted"] = False  # later tiers were not computed: the total is at least len(out)
            break
    return out, info


def ranked(snap: Snapshot, syms: list[Sym], head: Any, need: int) -> list[Sym]:
    """`syms` sorted by (head, usage, rank_key), exactly for the first `need` positions at least: `usage` reads
    call edges, so it is computed only inside the runs of equal heads that reach those positions (a wide prefix
    has thousands of candidates, and a page shows twenty). Later positions keep the (head, rank_key) order; a
    later page asks with a larger `need`, and the runs before it are sorted the same way in both answers."""
    keyed = sorted(((head(s), snap.rank_key(s), s) for s in syms), key=lambda t: (t[0], t[1]))
    out: list[Sym] = []
    i = 0
    while i < len(keyed):
        j = i + 1
        while j < len(keyed) and keyed[j][0] == keyed[i][0]:
            j += 1
        run = keyed[i:j]
        if len(out) < need and len(run) > 1:
            run.sort(key=lambda t: (usage(snap, t[2]), t[1]))
        out += [t[2] for t in run]
        i = j
    return out


_SCOPES = frozenset({"function", "method", "property_function", "constant", "variable"})


def _declared_only(snap: Snapshot, sym: Sym) -> bool:
    """A member of an interface is a declaration with no body: an equally close definition with one (the
    implementation a reader opens) comes first, whatever the asker's context."""
    parent = snap.by_id.get(sym.parent) if sym.parent else None
    return parent is not None and parent.kind == "interface"


def _local(snap: Snapshot, sym: Sym) -> bool:
    """A definition inside a function's body (a helper closure, a class made in a test) is local: found only
    after the definitions a module or a class offers."""
    parent = snap.by_id.get(sym.parent) if sym.parent else None
    return parent is not None and parent.kind in _SCOPES


MAX_USAGE_EDGES = 512  # call edges into one symbol read to count its calling files (beyond: the edges decide)
USAGE_KEPT = 200_000  # symbols whose usage a snapshot keeps before the memo starts again
_USAGE: weakref.WeakKeyDictionary[Snapshot, tuple[int, dict[str, tuple[int, int]]]] = weakref.WeakKeyDictionary()


def usage(snap: Snapshot, sym: Sym) -> tuple[int, int]:
    """How much the code uses a definition, as a sort key (most used first): minus the other files whose
    definitions call it, then minus its call edges (one per calling definition). Only bound edges count: a `name-only` edge is the resolver's
    guess, not a use. A name asked with no context most likely comes from outside the definition's file (read in
    another file, a traceback, a doc), so the one other files call is the interface people name; a definition
    called only where it is defined (a test's class `C`, a private helper) shares its name by chance."""
    try:
        version, kept = _USAGE.get(snap, (None, None))
    except TypeError:  # a snapshot type that takes no weak reference: count every time
        return _usage(snap, sym)
    if kept is None or version != snap.version or len(kept) >= USAGE_KEPT:
        kept = {}
        try:
            _USAGE[snap] = (snap.version, kept)
        except TypeError:
            return _usage(snap, sym)
    found = kept.get(sym.id)
    if found is None:
        found = kept[sym.id] = _usage(snap, sym)
    return found


def _usage(snap: Snapshot, sym: Sym) -> tuple[int, int]:
    edges = snap.calls_in.get(sym.id, ())
    files: set[str] = set()
    sites = 0
    for n, edge in enumerate(edges):
        if edge.resolution == "name-only":
            continue
        sites += 1
        if n < MAX_USAGE_EDGES:
            path = snap.path_of(edge.other)  # (not the caller itself: see `Snapshot.path_of`)
            if path is not None and path != sym.path:
                files.add(path)
    return (-len(files), -sites)


_UNRELATED = (0, 0)
MAX_BASE_DEPTH = 8  # inheritance levels followed from a class enclosing the near line (cycles exist)
MAX_BASE_IMPORT_HOPS = 3  # how far a base class's name is looked for from a file that is not the near file
MAX_IMPORT_FILES = 50_000  # files the import walk from the near file visits before it stops (a bound, not a cut)
CALLED_HERE, IN_SCOPE, SAME_FILE, IMPORTED, OTHER_SCOPE, ELSEWHERE = range(6)
RELATION_NAMES = {CALLED_HERE: "called-here", IN_SCOPE: "in-scope", SAME_FILE: "same-file", IMPORTED: "imported", OTHER_SCOPE: "same-file"}


class Near:
    """The asker's context: a repository-relative file (it need not be in the graph: a new file still has a
    directory) and optionally a line of it. `relation(sym)` is a sort key, lower is closer."""

    def __init__(self, snap: Snapshot, path: str, line: int | None = None):
        self.snap = snap
        self.path = path
        self.line = line
        self.known = path in snap.files
        self.dirs = path.split("/")[:-1]
        self._hops: dict[str, int] | None = None
        self._memo: dict[str, tuple[int, int]] = {}
        self._shared: dict[str, int] = {}
        # The definitions of this file whose lines enclose `line`, innermost first: what is in scope there.
        self.scope: dict[str, int] = {}
        self.called: dict[str, float] = {}  # callee id -> minus the edge's confidence
        self._classes: list[tuple[str, int]] = []  # the classes enclosing `line`, with their scope rank
        self._bases: dict[str, int] | None = None
        if line is not None and self.known:
            enclosing: list[Sym] = []
            modules: list[str] = []
            for sid in snap.by_file.get(path, ()):
                s = snap.by_id.get(sid)
                if s is None:
                    continue
                if s.kind == "module":
                    modules.append(sid)
                elif s.start <= line <= max(s.end, s.start):
                    enclosing.append(s)
            enclosing.sort(key=lambda s: (s.end - s.start, -s.start))
            self.scope = {s.id: k for k, s in enumerate(enclosing)}
            self._classes = [(s.id, k) for k, s in enumerate(enclosing) if s.kind not in _SCOPES]
            # What the graph's calls at that very line are bound to (held by the innermost definition, or the
            # file's module for a top-level call): the resolver has already read the receiver there.
            for holder in (*self.scope, *modules):
                for edge in snap.calls_out.get(holder, ()):
                    if edge.line == line:
                        self.called.setdefault(edge.other, -edge.confidence)

    @property
    def bases(self) -> dict[str, int]:
        """The bases of the classes enclosing the line (transitively), with the enclosing class's scope rank:
        their members are reached as `self.m()` / `super().m()` there, right after the class's own members."""
        if self._bases is None:
            self._bases = {}
            for cls, rank in self._classes:
                self._add_bases(cls, rank)
        return self._bases

    def _add_bases(self, cls: str, rank: int) -> None:
        """The graph holds no inheritance edges, so the bases are read from the class's signature (`class
        A(B, m.C)`, `class A<T> extends B<T>`) and each name is looked up as a class: in the class's file,
        else in the files it imports (fewest hops first), else the only class of that name."""
        bases = self._bases
        assert bases is not None
        frontier = [cls]
        for _ in range(MAX_BASE_DEPTH):
            found = []
            for c in frontier:
                sym = self.snap.by_id.get(c)
                if sym is None:
                    continue
                for name in base_names(sym.signature):
                    base = self._class_named(name, sym.path)
                    if base is not None and base.id not in bases and base.id not in self.scope:
                        bases[base.id] = rank
                        found.append(base.id)
            frontier = found
            if not frontier:
                return

    def _class_named(self, name: str, path: str) -> Sym | None:
        cands = [s for s in self.snap.live(self.snap.name_exact.get(name, ())) if s.kind in _CLASSES]
        if not cands:
            return None
        here = [s for s in cands if s.path == path]
        if here:
            return here[0]
        hops = self.import_hops() if path == self.path else _import_hops(self.snap, path, MAX_BASE_IMPORT_HOPS)
        near = sorted((hops[s.path], s.path, s.start) for s in cands if s.path in hops)
        if near:
            return next(s for s in cands if (s.path, s.start) == near[0][1:])
        return cands[0] if len(cands) == 1 else None

    def relation(self, sym: Sym) -> tuple[int, int]:
        found = self._memo.get(sym.id)
        if found is None:
            found = self._memo[sym.id] = self._relation(sym)
        return found

    def _relation(self, sym: Sym) -> tuple[int, int]:
        if sym.kind == "module":  # a file, not a definition in one: related as the file is, never in scope
            hops = self.import_hops().get(sym.path) if sym.path != self.path else None
            return (IMPORTED, hops) if hops is not None else (ELSEWHERE, -self.shared_dirs(sym.path))
        parent = self.snap.by_id.get(sym.parent) if sym.parent else None
        if sym.id in self.called:
            return (CALLED_HERE, round(self.called[sym.id] * 1000))
        if self.line is not None:
            if sym.id in self.scope:
                # the definition the line is in: the asker has it open, so after what else is in scope there
                return (IN_SCOPE, 2 * len(self.scope) + 1)
            if parent is not None and parent.id in self.bases:
                return (IN_SCOPE, 2 * self.bases[parent.id] + 1)
        if sym.path == self.path:
            if self.line is None:
                return (SAME_FILE, 0)
            if parent is None or parent.kind == "module":
                return (IN_SCOPE, 2 * len(self.scope))  # the file's top level is in scope everywhere in it
            if parent.id in self.scope:
                return (IN_SCOPE, 2 * self.scope[parent.id])
            if parent.kind in _SCOPES:
                return (OTHER_SCOPE, 0)  # local to a function that does not enclose the line
            return self.relation(parent)  # a class's member is reached through its class
        if not _local(self.snap, sym):
            hops = self.import_hops().get(sym.path)
            if hops is not None:
                return (IMPORTED, hops)
        return (ELSEWHERE, -self.shared_dirs(sym.path))

    def import_hops(self) -> dict[str, int]:
        """File -> the fewest IMPORTS edges from the near file to it (breadth first, bounded). An agent asks
        from the file it edits again and again: the walk is kept per snapshot and graph version."""
        if self._hops is None:
            self._hops = _cached_hops(self.snap, self.path)
        return self._hops

    def shared_dirs(self, path: str) -> int:
        found = self._shared.get(path)
        if found is None:
            found = self._shared[path] = self._shared_dirs(path)
        return found

    def _shared_dirs(self, path: str) -> int:
        n = 0
        for a, b in zip(self.dirs, path.split("/")[:-1], strict=False):
            if a != b:
                break
            n += 1
        return n

    def describe(self, sym: Sym) -> dict[str, Any]:
        """How a result relates to the near file, for the answer row (nothing when it does not)."""
        kind, sub = self.relation(sym)
        if kind == IN_SCOPE and sym.id in self.scope:
            return {"relation": "enclosing"}
        if kind == IN_SCOPE and sym.parent in self.bases:
            return {"relation": "inherited"}
        if kind in RELATION_NAMES:
            out: dict[str, Any] = {"relation": RELATION_NAMES[kind]}
            if kind == IMPORTED:
                out["importHops"] = sub
            return out
        if -sub == len(self.dirs) and len(sym.path.split("/")) - 1 == len(self.dirs):
            return {"relation": "same-directory"}
        return {}

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "inGraph": self.known}
        if self.line is not None:
            out["line"] = self.line
        return out


_HOPS: weakref.WeakKeyDictionary[Snapshot, dict[tuple[int, str], dict[str, int]]] = weakref.WeakKeyDictionary()
HOPS_KEPT = 16  # near files whose import walk a snapshot keeps


def _cached_hops(snap: Snapshot, path: str) -> dict[str, int]:
    try:
        kept = _HOPS.setdefault(snap, {})
    except TypeError:  # a snapshot type that takes no weak reference: walk every time
        return _import_hops(snap, path, None)
    key = (snap.version, path)
    hops = kept.get(key)
    if hops is None:
        hops = _import_hops(snap, path, None)
        if len(kept) >= HOPS_KEPT:
            kept.clear()
        kept[key] = hops
    return hops


def _import_hops(snap: Snapshot, path: str, max_hops: int | None) -> dict[str, int]:
    hops = {path: 0}
    frontier = [path]
    depth = 0
    while frontier and len(hops) < MAX_IMPORT_FILES and (max_hops is None or depth < max_hops):
        depth += 1
        nxt = []
        for f in frontier:
            for imp in snap.imports_out.get(f, ()):
                if imp.other not in hops:
                    hops[imp.other] = depth
                    nxt.append(imp.other)
        frontier = nxt
    del hops[path]
    return hops


_CLASSES = frozenset({"class", "interface", "struct", "trait"})


def base_names(signature: str) -> list[str]:
    """The bare names of the bases a class signature lists: `class A(B, m.C, metaclass=M)` -> [B, C];
    `export class A<T> extends B<T> implements I` -> [B, I]."""
    head = signature.split("{", 1)[0]
    if "<" in head:  # type parameters and arguments hold `extends` and commas of their own
        kept, depth = [], 0
        for ch in head:
            depth += ch == "<"
            if depth == 0:
                kept.append(ch)
            depth -= ch == ">" and depth > 0
        head = "".join(kept)
    parts: list[str] = []
    if " extends " in head or " implements " in head:
        for word in (" extends ", " implements "):
            if word in head:
                tail = head.split(word, 1)[1]
                tail = tail.split(" implements ", 1)[0] if word == " extends " else tail
                parts += _split_top(tail)
    elif "(" in head:
        inner = head.split("(", 1)[1].rsplit(")", 1)[0]
        parts = [p for p in _split_top(inner) if "=" not in p and not p.startswith("*")]
    out = []
    for part in parts:
        name = part.split("<", 1)[0].split("[", 1)[0].split("(", 1)[0].strip().rsplit(".", 1)[-1]
        if name.isidentifier():
            out.append(name)
    return out


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "([<{":
            depth += 1
        elif ch in ")]>}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


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


PROBE_RATIO = 16  # a posting list this many times longer than the slots left is probed, not read whole


def _all_words(snap: Snapshot, index: dict[str, Any], words: list[str]) -> list[Sym]:
    """The symbols whose entry in `index` holds every word. Each posting list is in ascending slot order (slots
    only grow, and a list is appended to in slot order or filtered), so the slots the shortest list leaves are
    looked up in a much longer one by bisection instead of reading all of it: a name that is nowhere yet, such as
    `scale_bench_fn_3`, met the kernel's lists for `fn`, `c` and `3` (up to ~1.8 million slots; ~0.1 s each time, estimated
    from the standard library's 4.1 ms on lists ~24x shorter, with the interpreter held)."""
    lists = [index.get(w) for w in dict.fromkeys(words)]
    if not lists or any(lst is None or not len(lst) for lst in lists):
        return []
    lists.sort(key=len)  # type: ignore[arg-type]
    common = set(lists[0])  # type: ignore[arg-type]
    for lst in lists[1:]:
        if len(lst) > PROBE_RATIO * len(common):  # type: ignore[arg-type]
            common = {slot for slot in common if _holds(lst, slot)}
        else:
            common.intersection_update(lst)  # type: ignore[arg-type]
        if not common:
            return []
    return list(snap.live(sorted(common)))


def _holds(ascending: Any, slot: int) -> bool:
    at = bisect.bisect_left(ascending, slot)
    return at < len(ascending) and ascending[at] == slot


def result_row(snap: Snapshot, tier: str, sym: Sym, near: Near | None = None) -> dict[str, Any]:
    row = sym.ref()
    row["qualifiedName"] = sym.qname
    if sym.signature:
        row["signature"] = sym.signature
    row["match"] = tier
    if snap.is_test(sym.path):
        row["test"] = True
    if near is not None:
        row.update(near.describe(sym))
    return row
