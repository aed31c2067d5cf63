"""The in-daemon inverted index that recall searches: BM25 over facts, procedures and handoffs, per
(user, repository) shard, with bounded priors for usage and recency. The shard itself (postings, cached term
weights, scoring) is the one history retrieval uses (`nexusd.retrieve.index.Shard`).

Why not Kuzu FTS (measured, 2 cores, 10k facts, one table): QUERY_FTS_INDEX with `top := 200` and a WHERE on
userId/repoId took p50 4-5 ms, p99 5-7 ms per table, so three tables plus the usage write missed the 5 ms
target; a top-k taken before the owner filter can also miss a small user's hits among a big user's; and the
default stopwords (get, name, value...) cannot be changed without crashing later writes. This index is
rebuilt from the graph at start (10k nodes in well under a second) and kept in step by the writer after
each commit, so it never holds what the graph does not.
"""

from __future__ import annotations

import heapq
import math
import threading
import time
from collections import Counter
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from nexusd.retrieve.index import Shard

from .text import tokens

# Priors multiply relevance by at most 1 + USAGE_WEIGHT + RECENCY_WEIGHT (1.5x): they order near-equals,
# they never outvote a clearly better text match.
USAGE_WEIGHT = 0.3
RECENCY_WEIGHT = 0.2
RECENCY_HALF_LIFE_DAYS = 30.0
MAX_PRIOR = 1.0 + USAGE_WEIGHT + RECENCY_WEIGHT


@dataclass
class Doc:
    id: str
    label: str
    user: str
    repo: str
    terms: tuple[str, ...]  # its distinct terms (the counts are in the shard's postings)
    length: int
    created: float
    used: int
    last_used: float | None
    item: dict[str, Any]  # what recall shows (text, title, symbol...), without usage
    boost: float = 1.0  # the shared BM25 shard's per-document weight (memory gives none)


@dataclass
class Hit:
    doc: Doc
    score: float


class MemoryIndex:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shards: dict[tuple[str, str], Shard] = {}
        self._where: dict[str, tuple[str, str]] = {}
        self.dirty: set[str] = set()  # ids whose usage changed since the last flush to the graph

    def __len__(self) -> int:
        return len(self._where)

    # -- maintenance (writer thread, after commit) --------------------------------------------------------

    def put(self, label: str, props: dict[str, Any], text: str, item: dict[str, Any]) -> None:
        tf = Counter(tokens(text))
        key = (props["userId"], props["repoId"])
        with self._lock:
            self._remove(props["id"])
            shard = self._shards.setdefault(key, Shard[Doc]())
            doc = Doc(
                id=props["id"],
                label=label,
                user=key[0],
                repo=key[1],
                terms=tuple(tf),
                length=sum(tf.values()),
                created=props.get("createdAt") or 0.0,
                used=props.get("usedCount") or 0,
                last_used=props.get("lastUsedAt"),
                item=item,
            )
            shard.add(doc, dict(tf))
            self._where[doc.id] = key

    def remove(self, node_id: str) -> None:
        with self._lock:
            self._remove(node_id)

    def _remove(self, node_id: str) -> None:
        key = self._where.pop(node_id, None)
        if key is None:
            return
        self._shards[key].remove(node_id)
        self.dirty.discard(node_id)

    def update_item(self, node_id: str, **changes: Any) -> None:
        with self._lock:
            key = self._where.get(node_id)
            if key is not None:
                self._shards[key].docs[node_id].item.update(changes)

    def get(self, node_id: str) -> Doc | None:
        with self._lock:
            key = self._where.get(node_id)
            return self._shards[key].docs.get(node_id) if key else None

    def repos_of(self, user: str) -> list[str]:
        with self._lock:
            return sorted(repo for (u, repo), shard in self._shards.items() if u == user and shard.docs)

    # -- search -------------------------------------------------------------------------------------

    def search(self, user: str, repo: str, query: str, limit: int, now: float | None = None) -> list[Hit]:
        terms = set(tokens(query))
        now = time.time() if now is None else now
        with self._lock:
            shard = self._shards.get((user, repo))
            if shard is None or not terms or not shard.docs:
                return []
            scores = shard.scores(terms, exact=True)
            if not scores:
                return []
            # Priors multiply by at most MAX_PRIOR, so only documents whose raw score times MAX_PRIOR reaches
            # the limit-th final score among the raw top `limit` can make the list: score just those.
            docs = shard.docs
            top = heapq.nlargest(limit, scores.items(), key=itemgetter(1))
            floor = min(raw * prior(docs[d], now) for d, raw in top) / MAX_PRIOR if len(top) >= limit else 0.0
            hits = [Hit(docs[d], raw * prior(docs[d], now)) for d, raw in scores.items() if raw >= floor]
        hits.sort(key=lambda h: (-h.score, -h.doc.created, h.doc.id))
        return hits[:limit]

    def bump(self, docs: list[Doc], at: float) -> list[tuple[int, float]]:
        """Count one use of each doc; returns the counts as they stand now (under the lock: no lost update)."""
        out = []
        with self._lock:
            for doc in docs:
                doc.used += 1
                doc.last_used = at
                self.dirty.add(doc.id)
                out.append((doc.used, at))
        return out

    def take_dirty(self) -> list[tuple[str, str, int, float | None]]:
        with self._lock:
            items = []
            for node_id in self.dirty:
                key = self._where.get(node_id)
                if key is None:
                    continue
                doc = self._shards[key].docs[node_id]
                items.append((doc.label, doc.id, doc.used, doc.last_used))
            self.dirty.clear()
            return items


def prior(doc: Doc, now: float) -> float:
    usage = min(1.0, math.log1p(doc.used) / math.log1p(20))
    age_days = max(0.0, now - (doc.last_used or doc.created)) / 86400.0
    recency = 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
    return 1.0 + USAGE_WEIGHT * usage + RECENCY_WEIGHT * recency
