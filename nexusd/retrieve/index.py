"""The in-daemon inverted index over history (HistoryText rows): BM25 per (repository, kind) shard.

One shard per kind (commit, change, doc, shell, turn) so each kind keeps its own statistics and its own
candidate pool: a "how do I" doc section is ranked among doc sections, never behind 500 diffs.

Kept in step with the graph without any hook into the store's transactions: every writer of HistoryText calls
`touch(conn, repo_id)` (ingest.insert_history, delete_nodes, delete_repo_history), which marks the repository
dirty and remembers the writing connection. A reader that finds its repository dirty re-syncs by difference
(the stored ids against the indexed ones; only new rows are read and analysed), and clears the mark only when
no write was noted meanwhile and the noted writers' transactions have ended, so a write still uncommitted
when the reader looked is picked up by a later query. The graph is the truth; this index is rebuilt from it at
start (the startup task) and holds nothing the graph does not.
"""

from __future__ import annotations

import heapq
import math
import re
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from nexusd.history import changelog
from nexusd.retrieve.analysis import clear_caches, term_counts

if TYPE_CHECKING:
    from nexusd.store import Conn

K1 = 1.2
B = 0.75
SYNC_CHUNK = 1000
COMMON_SHARE = 0.1
COMMON_MIN = 500


@dataclass(slots=True)
class Doc:
    id: str
    kind: str
    user: str
    parent: str
    signal: float
    at: float
    shown: str
    meta: str
    terms: tuple[str, ...]  # its distinct terms (the counts are in the shard's postings)
    length: int
    boost: float = 1.0  # test files, lock files and huge patches count for less (see `boost_of`)


class Indexed(Protocol):
    """What a shard needs of a document: its id, distinct terms, length and boost."""

    id: str
    terms: tuple[str, ...]
    length: int
    boost: float


D = TypeVar("D", bound=Indexed)


@dataclass
class Shard(Generic[D]):
    """A BM25 inverted index over documents of one statistics domain; history (`Doc`) and memory
    (`nexusd.memory.index.Doc`) both keep their shards in it. A term's count in a document is kept once, in
    the postings; the document keeps only the tuple of its distinct terms (to leave the postings when it goes),
    which a dict of counts per document would have doubled (22 MB of 113 for three repositories' whole history
    with every diff)."""

    docs: dict[str, D] = field(default_factory=dict)
    postings: dict[str, dict[str, int]] = field(default_factory=dict)
    total_length: int = 0
    # Per-term BM25 weights (boost included, idf not), computed on first use, dropped when a document with
    # the term comes or goes, and all of them when the average length drifts by more than 5%.
    weights: dict[str, dict[str, float]] = field(default_factory=dict)
    avg_snapshot: float = 0.0

    def add(self, doc: D, tf: dict[str, int]) -> None:
        """Index `doc`, whose term counts are `tf` (its `terms` are their keys)."""
        self.docs[doc.id] = doc
        self.total_length += doc.length
        for term, n in tf.items():
            self.postings.setdefault(term, {})[doc.id] = n
            self.weights.pop(term, None)

    def held(self, doc_id: str, query: Iterable[str]) -> set[str]:
        """The query terms the document holds."""
        postings = self.postings
        return {t for t in query if doc_id in postings.get(t, ())}

    def count(self, doc_id: str, term: str) -> int:
        return self.postings.get(term, {}).get(doc_id, 0)

    def remove(self, node_id: str) -> D | None:
        doc = self.docs.pop(node_id, None)
        if doc is None:
            return None
        self.total_length -= doc.length
        for term in doc.terms:
            self.weights.pop(term, None)
            posting = self.postings.get(term)
            if posting is not None:
                posting.pop(node_id, None)
                if not posting:
                    del self.postings[term]
        return doc

    def idf(self, term: str) -> float:
        n = len(self.postings.get(term, ()))
        return math.log(1 + (len(self.docs) - n + 0.5) / (n + 0.5))

    def term_weights(self, term: str) -> dict[str, float] | None:
        cached = self.weights.get(term)
        if cached is not None:
            return cached
        posting = self.postings.get(term)
        if not posting:
            return None
        docs, avg = self.docs, self.avg_snapshot or 1.0
        cached = {
            d: docs[d].boost * tf * (K1 + 1) / (tf + K1 * (1 - B + B * docs[d].length / avg))
            for d, tf in posting.items()
        }
        self.weights[term] = cached
        return cached

    def scores(
        self, query: Iterable[str], qweights: dict[str, float] | None = None, exact: bool = False
    ) -> dict[str, float]:
        """BM25 score of every document holding a query term. Unless `exact`, a term held by more than
        COMMON_SHARE of the shard only adds to documents the rarer terms found (a document matching nothing
        but common terms cannot reach the top anyway), so a query of common words costs a walk of the rare
        postings, not of a third of the shard per term."""
        if not self.docs:
            return {}
        avg = self.total_length / len(self.docs) or 1.0
        if not self.avg_snapshot or abs(avg - self.avg_snapshot) > 0.05 * self.avg_snapshot:
            self.weights.clear()
            self.avg_snapshot = avg
        scores: dict[str, float] = {}
        common = math.inf if exact else max(COMMON_MIN, COMMON_SHARE * len(self.docs))
        for term in sorted(dict.fromkeys(query), key=lambda t: len(self.postings.get(t, ()))):
            weights = self.term_weights(term)
            if not weights:
                continue
            idf = self.idf(term) * (qweights.get(term, 1.0) if qweights else 1.0)
            if not scores:
                scores = {d: idf * w for d, w in weights.items()}
            elif len(weights) > common and len(scores) < len(weights):
                get = weights.get
                for d in scores:
                    w = get(d)
                    if w is not None:
                        scores[d] += idf * w
            else:
                sget = scores.get
                for d, w in weights.items():
                    scores[d] = sget(d, 0.0) + idf * w
        return scores

    def search(
        self, query: Sequence[str], top: int, user: str | None = None, qweights: dict[str, float] | None = None
    ) -> list[tuple[D, float]]:
        """The `top` documents by BM25 (with their boost), optionally only those of `user` (or of no user);
        `qweights` scales a query term's contribution (expansion terms count for less than the query's own)."""
        scores = self.scores(query, qweights)
        docs = self.docs
        if user is not None:
            scores = {d: s for d, s in scores.items() if not getattr(docs[d], "user", "") or docs[d].user == user}  # type: ignore[attr-defined]
        best = heapq.nlargest(top, scores.items(), key=itemgetter(1))
        return [(docs[d], s) for d, s in best]


@dataclass
class RepoState:
    shards: dict[str, Shard[Doc]] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)  # id -> kind
    dirty: bool = True
    gen: int = 0
    writers: list[weakref.ref[Any]] = field(default_factory=list)
    newest: float = 0.0  # the newest commit time: "now" for the recency of old history
    commit_of: dict[str, str] = field(default_factory=dict)  # parent ("commit:<sha>") -> the commit's doc id
    sections: dict[str, tuple[str, int, str, str]] = field(default_factory=dict)  # id -> text, line, path, heading
    # Changelog bullets and the commits that cite the same issue or pull-request number (`links`).
    ref_commits: dict[str, list[str]] = field(default_factory=dict)  # "4879" -> parents of commits citing it
    section_refs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # section id -> (number, bullet)
    built: bool = False  # the first full build is done
    lock: threading.RLock = field(default_factory=threading.RLock)  # readers and in-place syncs take turns


class HistoryIndex:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sync_lock = threading.Lock()
        self.repos: dict[str, RepoState] = {}

    def state(self, repo_id: str) -> RepoState:
        with self.lock:
            st = self.repos.get(repo_id)
            if st is None:
                st = self.repos[repo_id] = RepoState()
            return st

    def touch(self, conn: Any, repo_id: str | None) -> None:
        with self.lock:
            targets = [self.repos.setdefault(repo_id, RepoState())] if repo_id else list(self.repos.values())
            for st in targets:
                st.dirty = True
                st.gen += 1
                if not any(w() is conn for w in st.writers):
                    st.writers.append(weakref.ref(conn))

    def drop(self, repo_id: str) -> None:
        """The repository was forgotten: its shards go (a later reader of the same id builds anew from the
        graph). `touch` during the forget's deletes made an entry even when no reader had built one."""
        with self.lock:
            self.repos.pop(repo_id, None)

    def ready(self, conn: Conn, repo_id: str) -> RepoState:
        """The repository's state, synced with the graph if a write was noted since the last sync."""
        st = self.state(repo_id)
        if not st.dirty:
            return st
        # While another thread does the first (long) build, answer from what there is (st.built stays False
        # and the caller says so) instead of waiting past the client's timeout; later syncs are short: wait.
        if not self.sync_lock.acquire(blocking=st.built):
            return st
        try:
            with self.lock:
                if not st.dirty:
                    return st
                gen = st.gen
                writers_done = not any(getattr(w(), "in_transaction", False) for w in st.writers)
            if st.built:
                with st.lock:
                    self._apply(conn, repo_id, st)
            else:  # built aside and swapped in, so readers never see a half-built shard
                fresh = RepoState()
                self._apply(conn, repo_id, fresh)
                clear_caches()
                with st.lock:
                    st.shards, st.ids, st.commit_of = fresh.shards, fresh.ids, fresh.commit_of
                    st.sections, st.newest, st.built = fresh.sections, fresh.newest, True
                    st.ref_commits, st.section_refs = fresh.ref_commits, fresh.section_refs
            with self.lock:
                if writers_done and gen == st.gen:
                    st.dirty = False
                    st.writers.clear()
        finally:
            self.sync_lock.release()
        return st

    def _apply(self, conn: Conn, repo_id: str, st: RepoState) -> None:
        stored = {
            r[0] for r in conn.rows("MATCH (n:HistoryText) WHERE n.repoId = $r RETURN n.id", {"r": repo_id})
        }
        gone = [i for i in st.ids if i not in stored]
        new = [i for i in stored if i not in st.ids]
        for node_id in gone:
            kind = st.ids.pop(node_id)
            doc = st.shards[kind].docs.get(node_id)
            if kind == "commit" and doc is not None and st.commit_of.get(doc.parent) == node_id:
                del st.commit_of[doc.parent]
            st.shards[kind].remove(node_id)
            st.sections.pop(node_id, None)
        new_docs = False
        cols = "n.id, n.kind, n.userId, n.searchText, n.signal, n.at, n.parent, n.shown, n.meta"
        if len(new) > SYNC_CHUNK:  # one scan of the repository beats many `id IN [...]` lookups (no index)
            wanted = set(new)
            batches = [[r for r in conn.rows(f"MATCH (n:HistoryText) WHERE n.repoId = $r RETURN {cols}",
                                             {"r": repo_id}) if r[0] in wanted]]  # fmt: skip
        else:
            batches = (
                [conn.rows(f"MATCH (n:HistoryText) WHERE n.id IN $ids RETURN {cols}", {"ids": new})]
                if new
                else []
            )
        # One string object per distinct kind, user and parent (a commit and each of its changes name the same
        # parent): the store returns a new object per row.
        same: dict[str, str] = {}
        one = same.setdefault
        for rows in batches:
            for node_id, kind, user, text, signal, at, parent, shown, meta in rows:
                tf = term_counts(text or "")
                kind, user, parent = one(kind, kind), one(user or "", user or ""), one(parent or node_id, parent or node_id)
                doc = Doc(node_id, kind, user, parent, float(signal or 0.5), float(at or 0), shown or "", meta or "",
                          tuple(tf), sum(tf.values()))  # fmt: skip
                doc.boost = boost_of(doc)
                st.shards.setdefault(kind, Shard[Doc]()).add(doc, tf)
                st.ids[node_id] = kind
                if kind == "commit":
                    st.commit_of[doc.parent] = node_id
                new_docs = new_docs or kind == "doc"
        if new_docs:  # the sections' own text, for the window shown around the best lines
            for node_id, text, line, path, heading in conn.rows(
                "MATCH (d:DocSection) WHERE d.repoId = $r RETURN d.id, d.text, d.startLine, d.path, d.headingPath",
                {"r": repo_id},
            ):
                if node_id in st.ids:
                    st.sections[node_id] = (text or "", int(line or 1), path or "", heading or "")
        commits = st.shards.get("commit")
        st.newest = max((d.at for d in commits.docs.values()), default=0.0) if commits else 0.0
        if gone or new:
            st.ref_commits, st.section_refs = links(st)

    def warm(self, conn: Conn) -> int:
        repos = [r[0] for r in conn.rows("MATCH (n:Repository) RETURN n.id")]
        total = 0
        for rid in repos:
            total += len(self.ready(conn, rid).ids)
        return total


_COMMIT_REF = re.compile(r"(?<![\w&])#(\d{1,7})\b")  # "(#3116)", "closes #4879", "Merge pull request #57"
_NOTE_REF = re.compile(r"(?<![\w&])#(\d{1,7})\b|:(?:issue|pr):`(\d{1,7})`|/(?:pull|issues)/(\d{1,7})\b")
_BULLET_START = re.compile(r"^\s*[-*+]\s")
MAX_REF_COMMITS = 3  # a number cited by more commits than this says nothing about which one a bullet means


def links(st: RepoState) -> tuple[dict[str, list[str]], dict[str, list[tuple[str, str]]]]:
    """Changelog bullets linked to commits by the issue / pull-request numbers both cite: a bullet saying
    "fixed `chpwd` hook functions being called twice by ALT-C (#4879)" describes the commit "fix(zsh): avoid
    double call for 'chpwd' in alt-c ... closes #4879" in the user's words. Returns (number -> the parents of
    the commits citing it, at most MAX_REF_COMMITS of them; changelog section id -> (number, the bullet that
    cites it: from the nearest bullet start above the citing line down to that line), for the numbers some
    commit cites)."""
    cited: dict[str, list[str]] = {}
    commits = st.shards.get("commit")
    for doc in commits.docs.values() if commits else ():
        for number in dict.fromkeys(_COMMIT_REF.findall(doc.shown)):
            cited.setdefault(number, []).append(doc.parent)
    ref_commits = {n: parents for n, parents in cited.items() if len(parents) <= MAX_REF_COMMITS}
    section_refs: dict[str, list[tuple[str, str]]] = {}
    for node_id, (text, _line, path, _heading) in st.sections.items():
        if not changelog.is_changelog(path):
            continue
        found: list[tuple[str, str]] = []
        lines = text.split("\n")
        start = 0
        for i, line in enumerate(lines):
            if _BULLET_START.match(line):
                start = i
            for m in _NOTE_REF.finditer(line):
                number = next(n for n in m.groups() if n)
                if number in ref_commits:
                    found.append((number, "\n".join(lines[start : i + 1])))
        if found:
            section_refs[node_id] = found
    return ref_commits, section_refs


_LOCKFILES = ("go.sum", "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "uv.lock",
              "cargo.lock", "gemfile.lock", "composer.lock", "requirements.txt")  # fmt: skip
HUGE_PATCH_TERMS = 2000
CHANGELOG_BOOST = 0.3


def is_test_path(path: str) -> bool:
    low = path.lower()
    name = low.rsplit("/", 1)[-1]
    return (
        "/test/" in f"/{low}" or "/tests/" in f"/{low}" or "/__tests__/" in f"/{low}" or "/spec/" in f"/{low}"
        or name.startswith("test_") or "_test." in name or ".test." in name or ".spec." in name
    )  # fmt: skip


def boost_of(doc: Doc) -> float:
    """How much a document's term matches count: a change to a test file 0.5, to a lock file 0.3, to a
    changelog CHANGELOG_BOOST (its lines are indexed as the changelog's own bullets, and the commit that edits
    them is seldom the change they describe), a huge patch (more than HUGE_PATCH_TERMS terms) shrinks towards
    0.5; everything else 1."""
    if doc.kind != "change":
        return 1.0
    path = ""
    if doc.meta:
        import json

        try:
            path = str(json.loads(doc.meta).get("path") or "")
        except ValueError:
            path = ""
    boost = 1.0
    if path.lower().rsplit("/", 1)[-1] in _LOCKFILES:
        boost = 0.3
    elif changelog.is_changelog(path):
        boost = CHANGELOG_BOOST
    elif is_test_path(path):
        boost = 0.5
    if doc.length > HUGE_PATCH_TERMS:
        boost *= max(0.5, (HUGE_PATCH_TERMS / doc.length) ** 0.5)
    return boost


_INDEXES: weakref.WeakKeyDictionary[Any, HistoryIndex] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def index_for(conn: Any) -> HistoryIndex:
    """The index of the database this connection belongs to (one per Store)."""
    owner = getattr(conn, "store", conn)
    with _LOCK:
        idx = _INDEXES.get(owner)
        if idx is None:
            idx = _INDEXES[owner] = HistoryIndex()
        return idx


def touch(conn: Any, repo_id: str | None = None) -> None:
    """A writer changed HistoryText of `repo_id` (None: of any repository)."""
    index_for(conn).touch(conn, repo_id)


def drop(conn: Any, repo_id: str) -> None:
    """`repo_id` was forgotten (after the deletes committed): drop its state."""
    index_for(conn).drop(repo_id)


def touch_rows(conn: Any, rows: Iterable[dict[str, Any]]) -> None:
    for rid in {r.get("repoId") for r in rows}:
        touch(conn, rid or None)
