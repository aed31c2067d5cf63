"""Unified recall over history (commits, changes, shell commands, docs, transcripts) and memory (facts,
procedures, handoffs): hybrid retrieval, fusion, bounded priors, a per-parent cap, packing into a token budget.

    candidates  history from the in-daemon BM25 index (`nexusd.retrieve`); memory (facts, procedures,
                handoffs) from the in-daemon index recall searches (`nexusd.memory.index`), scored there and
                read here by id (`memory_candidates`). Every memory node filters on userId AND repoId.
                Only when an embedding endpoint is configured: the nearest HistoryVector rows by cosine.
    relevance   reciprocal-rank fusion of the lists: rel(d) = sum over lists L of 1 / (RRF_K + rank_L(d)).
    priors      z(d) = 0.5 * signal + 0.3 * recency + 0.2 * usage, each in [0, 1], and
                score(d) = rel(d) * MAX_PRIOR_FACTOR ** (z(d) - 0.5).
                The multiplier lies in [F^-0.5, F^0.5] with F = MAX_PRIOR_FACTOR = 1.5, so priors together can
                reorder two results only when their relevance differs by less than a factor of 1.5.
                signal: commits and their changes from the message (fix 1.0 ... chore 0.5, git.py); shell
                commands 1.0 when they failed, 0.5 when they succeeded, 0.3 when scraped (exit unknown); docs
                0.7; transcript turns 0.55; facts 0.8 (0.5 when stale/orphaned), procedures 0.85, handoffs 0.7.
                recency: 0.5 ** (age / 30 days). usage: 1 - 0.5 ** usedCount (memory only; history is 0).
    cap         at most MAX_PER_PARENT results from one parent (a commit with its changes, a document, a
                transcript session, one command line run many times); the rest are counted in `cut.parentCap`.
    budget      results are packed in rank order into `budget` tokens, estimated as ceil(characters / 4) of
                the text shown; a result that does not fit is cut (`cut.budget`, `cut.budgetTokens`), except
                the first, which is shortened to fit so an answer is never empty for want of room.

`--all-repos` ranks each of the user's repositories on its own and fuses the per-repository lists by RRF.
No Kuzu import: the caller passes a Conn (nexusd.store).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nexusd.retrieve import pack as pack_

if TYPE_CHECKING:
    from nexusd.history.vectors import Embedder
    from nexusd.store import Conn

RRF_K = 10
MAX_PRIOR_FACTOR = 1.5
MAX_PER_PARENT = 2
DEFAULT_BUDGET = 1500
DEFAULT_LIMIT = 10
PER_SOURCE_TOP = 40
RECENCY_HALF_LIFE_S = 30 * 86400.0
CHARS_PER_TOKEN = pack_.CHARS_PER_TOKEN
_SHOW_CHARS = {"commit": 1200, "change": 900, "doc": 1600, "turn": 1200, "shell": 600}

# kind, table, the columns a hit shows (`_hit` reads them in this order)
SOURCES: list[tuple[str, str, str]] = [
    ("commit", "Commit", "node.sha, node.message, node.author, node.time, node.signal, node.kind"),
    ("change", "Change", "node.sha, node.path, node.status, node.patch, node.time, node.signal, node.symbolIds"),
    ("shell", "ShellCommand", "node.text, node.cwd, node.exitCode, node.startedAt, node.durationMs, node.source"),
    ("doc", "DocSection", "node.path, node.headingPath, node.startLine, node.text, node.mtime"),
    ("turn", "ConversationTurn", "node.sessionId, node.ordinal, node.role, node.at, node.text"),
    ("fact", "Fact", "node.text, node.createdAt, node.usedCount, node.lastUsedAt, node.status, node.symbolName"),
    ("procedure", "Procedure", "node.title, node.steps, node.createdAt, node.usedCount, node.lastUsedAt"),
    ("handoff", "Handoff", "node.done, node.openItems, node.nextSteps, node.createdAt, node.usedCount, node.lastUsedAt"),
]
TABLE_KIND = {table: kind for kind, table, _ in SOURCES}
KIND_SOURCE = {kind: (table, projection) for kind, table, projection in SOURCES}


@dataclass
class Hit:
    kind: str
    id: str
    repo_id: str
    text: str  # what is shown (bounded)
    parent: str
    signal: float
    at: float
    used: int = 0
    bm25: float = 0.0
    vector: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)
    relevance: float = 0.0
    prior: float = 1.0
    score: float = 0.0

    def to_dict(self, tokens: int) -> dict[str, Any]:
        return {
            "kind": self.kind, "id": self.id, "repoId": self.repo_id, "score": round(self.score, 6),
            "relevance": round(self.relevance, 6), "prior": round(self.prior, 4), "bm25": round(self.bm25, 4),
            "signal": self.signal, "at": self.at, "tokens": tokens, "text": self.text, **self.data,
        }  # fmt: skip


def _clip(text: str, n: int) -> str:
    text = text or ""
    return text if len(text) <= n else text[: n - 3] + "..."


def _hit(kind: str, node_id: str, repo_id: str, row: list[Any]) -> Hit:
    """Build a Hit from a projection row (without the leading id/repoId/score columns)."""
    if kind == "commit":
        sha, message, author, at, signal, ckind = row
        return Hit(kind, node_id, repo_id, _clip(f"commit {sha[:10]} ({author}): {message}", _SHOW_CHARS[kind]),
                   f"commit:{sha}", float(signal or 0.6), float(at or 0),
                   data={"sha": sha, "author": author, "commitKind": ckind})  # fmt: skip
    if kind == "change":
        sha, path, status, patch, at, signal, symbol_ids = row
        return Hit(kind, node_id, repo_id, _clip(f"change {status} {path} in {sha[:10]}\n{patch or ''}", _SHOW_CHARS[kind]),
                   f"commit:{sha}", float(signal or 0.6), float(at or 0),
                   data={"sha": sha, "path": path})  # fmt: skip
    if kind == "shell":
        text, cwd, code, at, dur, source = row
        signal = 0.3 if code is None or source == "scraped" else (1.0 if code != 0 else 0.5)
        status = "exit ?" if code is None else f"exit {code}"
        return Hit(kind, node_id, repo_id, _clip(f"$ {text}   [{status}, {cwd or '?'}, {dur or 0} ms]", _SHOW_CHARS[kind]),
                   f"shell:{' '.join(text.split())}", signal, float(at or 0),
                   data={"command": text, "cwd": cwd, "exitCode": code, "durationMs": dur, "source": source})  # fmt: skip
    if kind == "doc":
        path, heading, line, text, mtime = row
        return Hit(kind, node_id, repo_id, _clip(f"{path}:{line} {heading}\n{text}", _SHOW_CHARS[kind]),
                   f"doc:{path}", 0.7, float(mtime or 0),
                   data={"path": path, "headingPath": heading, "line": line})  # fmt: skip
    if kind == "turn":
        session, ordinal, role, at, text = row
        return Hit(kind, node_id, repo_id, _clip(f"[{role} #{ordinal}] {text}", _SHOW_CHARS[kind]),
                   f"turn:{session}", 0.55, float(at or 0), data={"sessionId": session, "ordinal": ordinal})  # fmt: skip
    if kind == "fact":
        text, created, used, last, status, symbol = row
        signal = 0.5 if status in ("stale", "orphaned") else 0.8
        return Hit(kind, node_id, repo_id, text or "", f"fact:{node_id}", signal, float(last or created or 0),
                   int(used or 0), data={"status": status, "symbol": symbol})  # fmt: skip
    if kind == "procedure":
        title, steps, created, used, last = row
        body = title + "\n" + "\n".join(f"{i + 1}. {s}" for i, s in enumerate(steps or []))
        return Hit(kind, node_id, repo_id, body, f"procedure:{node_id}", 0.85, float(last or created or 0),
                   int(used or 0), data={"title": title})  # fmt: skip
    done, open_items, next_steps, created, used, last = row
    body = f"handoff: done: {done or ''}\nopen: {open_items or ''}\nnext: {next_steps or ''}"
    return Hit(kind, node_id, repo_id, body, f"handoff:{node_id}", 0.7, float(last or created or 0), int(used or 0))


def _columns(projection: str) -> list[str]:
    return [part.strip().removeprefix("node.") for part in projection.split(",")]


def search_document(kind: str, row: dict[str, Any]) -> dict[str, Any]:
    """The HistoryText row of a history node's row (as ingest writes it): what ranking and display need."""
    projection = KIND_SOURCE[kind][1]
    hit = _hit(kind, row["id"], row["repoId"], [row.get(col) for col in _columns(projection)])
    return {
        "id": row["id"], "kind": kind, "repoId": row["repoId"], "userId": row.get("userId") or "",
        "searchText": row["searchText"], "signal": hit.signal, "at": hit.at, "parent": hit.parent,
        "shown": hit.text, "meta": json.dumps(hit.data, separators=(",", ":")),
    }  # fmt: skip


def _from_document(row: list[Any], repo_id: str) -> Hit:
    node_id, kind, score, signal, at, parent, shown, meta = row
    hit = Hit(kind, node_id, repo_id, shown or "", parent or node_id, float(signal or 0.5), float(at or 0),
              data=json.loads(meta) if meta else {})  # fmt: skip
    hit.bm25 = float(score)
    return hit


_DOC_RETURN = "node.id, node.kind, score, node.signal, node.at, node.parent, node.shown, node.meta"


def memory_candidates(conn: Conn, scored: Sequence[tuple[str, str, float]], repo_id: str) -> list[Hit]:
    """Hits for memory nodes already scored by the memory index ((kind, id, score), best first), their display
    columns read by id: one statement per kind."""
    by_kind: dict[str, list[str]] = {}
    for kind, node_id, _score in scored:
        by_kind.setdefault(kind, []).append(node_id)
    rows: dict[str, list[Any]] = {}
    for kind, ids in by_kind.items():
        table, projection = KIND_SOURCE[kind]
        for row in conn.rows(f"MATCH (node:{table}) WHERE node.id IN $ids RETURN node.id, {projection}", {"ids": ids}):
            rows[row[0]] = row[1:]
    hits = []
    for kind, node_id, score in scored:
        found = rows.get(node_id)
        if found is None:
            continue  # forgotten since the index answered
        hit = _hit(kind, node_id, repo_id, found)
        hit.bm25 = score
        hits.append(hit)
    return hits


def vector_candidates(
    conn: Conn, embedder: Embedder, text: str, repo_id: str, user_id: str, top: int = PER_SOURCE_TOP
) -> list[Hit]:
    """Nearest stored history vectors of the repository by cosine (brute force in Kuzu; fine at 10^5)."""
    if not conn.has_table("HistoryVector"):
        return []  # (no vector was stored yet)
    query_vec = embedder.embed([text])[0]
    dim = len(query_vec)  # one model, one dimension: stored lists are cast to the fixed-size array it needs
    rows = conn.rows(
        "MATCH (v:HistoryVector), (node:HistoryText) WHERE v.repoId = $r AND v.model = $m AND node.id = v.id "
        f"AND (v.userId = '' OR v.userId = $u) AND size(v.vec) = {dim} "
        f"WITH node, array_cosine_similarity(CAST(v.vec AS DOUBLE[{dim}]), CAST($q AS DOUBLE[{dim}])) AS score "
        "ORDER BY score DESC LIMIT $k "
        f"RETURN {_DOC_RETURN}",
        {"r": repo_id, "m": embedder.model, "u": user_id, "q": query_vec, "k": top},
    )
    hits = []
    for row in rows:
        hit = _from_document(row, repo_id)
        hit.vector, hit.bm25 = hit.bm25, 0.0
        hits.append(hit)
    return hits


def _ranks(ranked: Sequence[Hit], key: str) -> list[int]:
    """Competition ranks (1, 2, 2, 4): equal scores share a rank, so the priors, not the id order, break ties."""
    out: list[int] = []
    previous: float | None = None
    for position, hit in enumerate(ranked, start=1):
        value = round(getattr(hit, key), 9)
        out.append(out[-1] if previous is not None and value == previous else position)
        previous = value
    return out


def fuse(lists: Sequence[Sequence[Hit]], keys: Sequence[str] | None = None) -> list[Hit]:
    """Reciprocal-rank fusion: each list is already ranked by its key; a node's contributions add up."""
    merged: dict[str, Hit] = {}
    for index, ranked in enumerate(lists):
        key = keys[index] if keys else "bm25"
        for rank, hit in zip(_ranks(ranked, key), ranked, strict=True):
            kept = merged.setdefault(hit.id, hit)
            if kept is not hit:
                kept.bm25 = max(kept.bm25, hit.bm25)
                kept.vector = max(kept.vector, hit.vector)
            kept.relevance += 1.0 / (RRF_K + rank)
    return list(merged.values())


def apply_priors(hits: list[Hit], now: float | None = None) -> None:
    now = time.time() if now is None else now
    for hit in hits:
        recency = 0.5 ** (max(0.0, now - hit.at) / RECENCY_HALF_LIFE_S) if hit.at > 0 else 0.0
        usage = 1.0 - 0.5 ** max(0, hit.used)
        z = 0.5 * min(1.0, max(0.0, hit.signal)) + 0.3 * recency + 0.2 * usage
        hit.prior = MAX_PRIOR_FACTOR ** (z - 0.5)
        hit.score = hit.relevance * hit.prior


def fuse_repos(per_repo: Sequence[list[Hit]]) -> list[Hit]:
    """`--all-repos`: each repository ranked on its own, fused by RRF (score kept as the tie-breaker)."""
    rrf: dict[str, float] = {}
    by_id: dict[str, Hit] = {}
    for ranked in per_repo:
        for rank, hit in enumerate(ranked, start=1):
            rrf[hit.id] = rrf.get(hit.id, 0.0) + 1.0 / (RRF_K + rank)
            by_id.setdefault(hit.id, hit)
    return sorted(by_id.values(), key=lambda h: (-rrf[h.id], -h.score, h.id))


def tokens_of(text: str) -> int:
    return pack_.estimate(text)


def pack(hits: list[Hit], budget: int, limit: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Cap per parent, then pack into the token budget (nexusd.retrieve.pack); returns (results, cut)."""

    def shorten(hit: Hit, room: int) -> Hit:
        hit.text = pack_.shorten_text(hit.text, room)
        return hit

    packed = pack_.pack(hits, budget, cost=lambda h: tokens_of(h.text), limit=limit, parent=lambda h: h.parent,
                        per_parent=MAX_PER_PARENT, shorten=shorten)  # fmt: skip
    results = [hit.to_dict(tokens) for hit, tokens in zip(packed.items, packed.tokens, strict=True)]
    cut: dict[str, Any] = {**packed.cut, "tokensUsed": packed.used}
    return results, cut
