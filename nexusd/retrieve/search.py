"""History retrieval for `query`: per-kind candidate pools, commits with their changes folded in, fusion by
rank weighted by query coverage, bounded priors, and what is shown (the window around the best lines).

    pools       one BM25 pool per kind from the in-daemon index (nexusd.retrieve.index): commit messages,
                changes, doc sections, shell commands, transcript turns (POOL each), plus memory (facts,
                procedures, handoffs) from the memory tables' indexes.
    folding     a change is evidence for its commit, never a result of its own: a commit's pool score is
                1/(K + rank of its message) + CHANGE_WEIGHT * w/(K + rank of its best change), and its result
                shows the message with that change's best-matching lines. A changelog bullet that cites an
                issue / PR number the commit's message cites (retrieve/index.py `links`) is a second account
                of the commit in the user's words: + NOTE_WEIGHT/(K + the bullet's rank among such bullets),
                its matched terms count towards the commit's coverage, and the commit shows its best lines
                (the bullet stays a doc result of its own too). w (diff_weight) is 1 for the latest
                RECENT_DIFFS (200) commits with diffs and falls towards 0.5 further back; the diff's terms
                count towards the commit's coverage at that weight too. Changes to test files (x0.5), lock
                files (x0.3) and huge patches (down to x0.5) count for less inside the change pool.
    fusion      every pool is one ranked list; a result's relevance is 1/(K + its rank in its pool) times
                coverage^2, where coverage is the idf share of the query's terms the result holds (message
                and best change together for a commit). Coverage is what makes a commit message that names
                every query word beat the fifth-best doc section, and vice versa.
    priors      commits: recency against the repository's newest commit, 0.5 ** (age / 1 year), mapped into
                [0.7, 1.0], times (0.85 + 0.15 * signal), times RELEASE_PRIOR for a release commit (its
                subject is a version and nothing else: the changelog section says what it released); shell commands: failed 1.0, succeeded 0.85; docs
                0.9 (a changelog bullet 0.75 times the commits' recency mapping of the time the bullet was committed,
                see history/changelog.py; a table of contents 0.5) times 1 + 0.15 * the idf share of the query
                held by the section's heading path; turns 0.9. Every prior lies in [0.35, 1.04]: old history
                and release bookkeeping rank lower but are never absent. A question whose form says what it
                wants (analysis.intent: "how do I ..." -> doc sections, "when did ..." / "which commit ..." ->
                commits and changelog bullets) multiplies that kind's scores by INTENT_PRIOR (x2), outside
                the priors' range, and a question about a change the other doc sections' by ASIDE_PRIOR (x0.5):
                a section that shares more of a paraphrase's words says how things are, not when they changed.
                Most questions say neither.
    shown       commits: the message (clipped) and the best change's best window; doc sections: the heading
                path and the window of the section around its best-matching lines, with the lines shown.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from nexusd.history import changelog
from nexusd.history.rank import Hit
from nexusd.retrieve.analysis import intent, query_terms, terms
from nexusd.retrieve.index import Doc, RepoState, Shard, index_for

if TYPE_CHECKING:
    from nexusd.store import Conn

POOL = 40
K = 10
CHANGE_WEIGHT = 0.5
NOTE_WEIGHT = 0.5  # a changelog bullet citing the commit's issue / PR number (retrieve/index.py `links`)
YEAR_S = 365 * 86400.0
COMMIT_MESSAGE_CHARS = 700
EVIDENCE_CHARS = 360
NOTE_CHARS = 240
DOC_WINDOW_CHARS = 1100
SHELL_CHARS = 600
TURN_CHARS = 900
DOC_PRIOR = 0.9
CHANGELOG_PRIOR = 0.75  # a changelog repeats what commits say; the commit (with its diff) is the answer
TOC_PRIOR = 0.5  # a table of contents names every heading and answers nothing
RELEASE_PRIOR = 0.6  # a release commit names a version and nothing else: what it released is the changelog's
# section for that version, which says what changed (the commit's own diff only dates that section)
_RELEASE = re.compile(
    r"(?i)^\W*(?:(?:release[ds]?|releasing|start(?:ing)?|prepar(?:e|ing)|bump(?:ed)?|version|to|v)\W+)*"
    r"v?\d+(?:\.\d+)+[\w.+-]*\W*(?:\(#\d+\)\W*)?$"
)
HEADING_WEIGHT = 0.15  # a section whose heading path holds the query's terms: up to x1.15
_TOC = re.compile(r"^\W*(table of )?contents\W*$|^toc$", re.IGNORECASE)
FEEDBACK_DOCS = 3  # pseudo-relevance feedback (NEXUS_QUERY_EXPAND): the first pass's best commits and docs
EXPAND_TERMS = 4  # terms added from them
EXPAND_WEIGHT = 0.3  # what an added term weighs beside one of the query's own
DIFF_FLOOR = 0.5  # an old diff's weight as evidence (diff_weight) is bounded below, like every prior
RECENT_DIFFS = 200  # the latest commits with diffs whose diffs count in full (diff_weight)
FINISH = 12  # results whose shown text is finished (evidence, windows): a default page shows at most 10
SUBJECT_WEIGHT = 0.3  # a commit whose subject line holds the query's terms: up to x1.3 (a doc's heading: x1.15)
INTENT_PRIOR = 2.0  # what the question's form asks for (analysis.intent): doc sections for "how do I ...",
# commits and changelog bullets for "when did ..."
ASIDE_PRIOR = 0.5  # and, for "when did ...", the doc sections it does not ask for (all but changelogs)


def _coverage(idf: dict[str, float], matched: set[str]) -> float:
    """The idf share of the query's terms that `matched` holds."""
    return sum(idf[t] for t in matched) / (sum(idf.values()) or 1.0)


class Terms(list[str]):
    """Query terms, with the weight of each expansion term (the query's own terms weigh 1)."""

    weights: dict[str, float]

    def __init__(self, items: Sequence[str], weights: dict[str, float] | None = None) -> None:
        super().__init__(items)
        self.weights = weights or {}


def _qw(q: Sequence[str]) -> dict[str, float] | None:
    return getattr(q, "weights", None) or None


def _idf(shard: Shard[Doc], q: Sequence[str]) -> dict[str, float]:
    w = _qw(q) or {}
    return {t: shard.idf(t) * w.get(t, 1.0) for t in q}


@lru_cache(maxsize=65_536)
def _line_terms(line: str) -> frozenset[str]:
    return frozenset(terms(line))


def window(text: str, q: Sequence[str], max_chars: int) -> tuple[int, str]:
    """The run of whole lines of `text` (at most max_chars) that holds the most query terms; returns
    (index of its first line, the lines). Text that fits is returned whole."""
    if len(text) <= max_chars:
        return 0, text
    lines = text.split("\n")
    wanted = set(q)
    hits = [len(wanted.intersection(_line_terms(line))) if line.strip() else 0 for line in lines]
    sizes = [len(line) + 1 for line in lines]
    best_start, best_end, best_score = 0, 0, -1
    start = size = score = 0
    for end in range(len(lines)):  # the window is lines[start : end + 1]
        size += sizes[end]
        score += hits[end]
        while size > max_chars and start < end:
            size -= sizes[start]
            score -= hits[start]
            start += 1
        if score > best_score:
            best_start, best_end, best_score = start, end, score
    return best_start, "\n".join(lines[best_start : best_end + 1])[:max_chars]


def is_changelog(path: str) -> bool:
    return changelog.is_changelog(path)


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _meta(doc: Doc) -> dict[str, Any]:
    try:
        return dict(json.loads(doc.meta)) if doc.meta else {}
    except ValueError:
        return {}


def is_release(shown: str) -> bool:
    """A commit whose subject is a version and nothing more ("release version 3.1.1", "0.70.0", "Version
    0.28.0. (#3419)", "bump version to v2.0.1")."""
    head = shown.split("\n", 1)[0]
    subject = head.split("): ", 1)[1] if "): " in head else head  # "commit <sha> (<author>): <subject>"
    return bool(_RELEASE.match(subject.strip()))


def _subject(shown: str) -> str:
    head = shown.split("\n", 1)[0]
    return head.split("): ", 1)[1] if "): " in head else head  # "commit <sha> (<author>): <subject>"


def _commit_prior(st: RepoState, doc: Doc) -> float:
    age = max(0.0, (st.newest or doc.at) - doc.at) if doc.at else YEAR_S * 10
    recency = 0.5 ** (age / YEAR_S)
    prior = (0.7 + 0.3 * recency) * (0.85 + 0.15 * min(1.0, max(0.0, doc.signal)))
    return prior * RELEASE_PRIOR if is_release(doc.shown) else prior


_DIFF_ORDER: dict[int, tuple[tuple[int, int, float, int], dict[str, int]]] = {}


def diff_order(st: RepoState) -> dict[str, int]:
    """Each commit with a stored diff -> its place among them, newest first (0 = the newest), cached per index
    state. Commits without a diff (merges, history beyond the patch window) have no place."""
    changes = st.shards.get("change")
    msgs = st.shards.get("commit")
    if changes is None or msgs is None:
        return {}
    window = _patch_window()
    stamp = (len(changes.docs), len(msgs.docs), st.newest, window)
    got = _DIFF_ORDER.get(id(st))
    if got is not None and got[0] == stamp:
        return got[1]
    times: dict[str, float] = {}
    for doc in changes.docs.values():
        if doc.parent not in times:
            cid = st.commit_of.get(doc.parent)
            commit = msgs.docs.get(cid) if cid else None
            times[doc.parent] = commit.at if commit is not None else doc.at
    order = {parent: i for i, parent in enumerate(sorted(times, key=lambda p: (-times[p], p)))}
    if len(_DIFF_ORDER) > 64:
        _DIFF_ORDER.clear()
    _DIFF_ORDER[id(st)] = (stamp, order)
    return order


def _patch_window() -> int:
    """The latest commits with diffs whose diffs count in full (diff_weight): RECENT_DIFFS, or fewer when fewer
    are read with diffs (NEXUS_HISTORY_PATCHES)."""
    from nexusd.history import ingest

    return max(1, min(RECENT_DIFFS, ingest.patch_limit()))


def diff_weight(place: int | None, window: int) -> float:
    """How much a commit's diff speaks for it, in [DIFF_FLOOR, 1]: 1 inside the recent window (the latest
    `window` commits with diffs, RECENT_DIFFS), then the part above the floor halves every `window`
    commits further back. The message keeps its full weight. Without this, ingesting the whole history let
    every old commit's diff compete at full weight with the recent ones the default window describes, and
    answers got worse as history grew (ARCHITECTURE.md, "Diff weight")."""
    if place is None or place < window:
        return 1.0
    return DIFF_FLOOR + (1.0 - DIFF_FLOOR) * 0.5 ** ((place - window) / window)


def _commits(st: RepoState, q: Sequence[str], evidence: dict[str, Doc], bullets: dict[str, str]) -> list[Hit]:
    msgs = st.shards.get("commit")
    changes = st.shards.get("change")
    if msgs is None:
        return []
    order = diff_order(st)
    patch_window = _patch_window()
    entries: dict[str, dict[str, Any]] = {}
    idf = _idf(msgs, q)
    for rank, (doc, _score) in enumerate(msgs.search(q, POOL, qweights=_qw(q)), 1):
        entries.setdefault(doc.parent, {"msg": doc, "score": 0.0})["score"] += 1.0 / (K + rank)
    if changes is not None:
        seen: set[str] = set()
        rank = 0
        for doc, _score in changes.search(q, POOL * 3, qweights=_qw(q)):
            if doc.parent in seen:
                continue  # a commit's best change only
            seen.add(doc.parent)
            rank += 1
            if rank > POOL:
                break
            entry = entries.setdefault(doc.parent, {"score": 0.0})
            entry["change"] = doc
            entry["diffWeight"] = weight = diff_weight(order.get(doc.parent), patch_window)
            entry["score"] += CHANGE_WEIGHT * weight / (K + rank)
    docs = st.shards.get("doc")
    if docs is not None and st.section_refs:
        linked: set[str] = set()
        rank = 0
        for doc, _score in docs.search(q, POOL, qweights=_qw(q)):
            cites = st.section_refs.get(doc.id)
            if not cites:
                continue
            rank += 1
            for number, bullet in cites:
                for parent in st.ref_commits.get(number, ()):
                    if parent in linked:
                        continue  # a commit's best bullet only
                    linked.add(parent)
                    entry = entries.setdefault(parent, {"score": 0.0})
                    entry["note"] = (doc, bullet)
                    entry["score"] += NOTE_WEIGHT / (K + rank)
    ranked: list[Hit] = []
    for parent, entry in entries.items():
        msg: Doc | None = entry.get("msg")
        if msg is None:
            cid = st.commit_of.get(parent)
            msg = msgs.docs.get(cid) if cid else None
        if msg is None:
            continue  # a change whose commit is not stored (cannot happen through ingest)
        matched = msgs.held(msg.id, q)
        note: tuple[Doc, str] | None = entry.get("note")
        if note is not None:  # the bullet's own lines, not the rest of its section
            matched |= set(q).intersection(terms(note[1]))
        cov = _coverage(idf, matched)
        change: Doc | None = entry.get("change")
        if change is not None and changes is not None and not is_changelog(str(_meta(change).get("path") or "")):
            # a changelog's diff repeats its bullets, which are docs of their own; a diff's own terms count at
            # the diff's weight (diff_weight)
            cov += entry.get("diffWeight", 1.0) * _coverage(idf, changes.held(change.id, q) - matched)
        meta = _meta(msg)
        text = _clip(msg.shown, COMMIT_MESSAGE_CHARS)
        data: dict[str, Any] = {**meta}
        hit = Hit("commit", msg.id, "", text, parent, msg.signal, msg.at, data=data)
        if change is not None:
            evidence[msg.id] = change
        if note is not None:
            data["noteId"] = note[0].id
            bullets[msg.id] = note[1]
        hit.bm25 = entry["score"]
        hit.relevance = cov
        hit.prior = _commit_prior(st, msg)
        hit.prior *= 1.0 + SUBJECT_WEIGHT * _coverage(idf, set(q).intersection(_line_terms(_subject(msg.shown))))
        ranked.append(hit)
    ranked.sort(key=lambda h: (-h.bm25, h.id))
    return ranked


def _pool(st: RepoState, kind: str, q: Sequence[str], user: str) -> list[Hit]:
    shard = st.shards.get(kind)
    if shard is None:
        return []
    out: list[Hit] = []
    idf = _idf(shard, q)
    for doc, score in shard.search(q, POOL, user=user if kind in ("shell", "turn") else None, qweights=_qw(q)):
        cov = _coverage(idf, shard.held(doc.id, q))
        row = st.sections.get(doc.id) if kind == "doc" else None
        if row is not None and len(row[0]) > DOC_WINDOW_CHARS:  # what is shown is what answers
            _, shown = window(row[0], q, DOC_WINDOW_CHARS)
            cov = _coverage(idf, set(q).intersection(terms(f"{row[3]}\n{row[2]}\n{shown}")))
        meta = _meta(doc)
        prior = 1.0
        if kind == "shell":
            code = meta.get("exitCode")
            prior = 1.0 if code not in (0, None) else 0.85
            text = _clip(doc.shown, SHELL_CHARS)
        elif kind == "turn":
            prior = 0.9
            text = _clip(doc.shown, TURN_CHARS)
        else:
            text = doc.shown
            heading = str(meta.get("headingPath") or "")
            if is_changelog(str(meta.get("path") or "")):  # a bullet, dated by the commit that added it
                age = max(0.0, (st.newest or doc.at) - doc.at) if doc.at else YEAR_S * 10
                prior = CHANGELOG_PRIOR * (0.7 + 0.3 * 0.5 ** (age / YEAR_S))
            else:
                prior = DOC_PRIOR
            if _TOC.search(heading.rsplit(" > ", 1)[-1]):
                prior = TOC_PRIOR
            prior *= 1.0 + HEADING_WEIGHT * _coverage(idf, set(q).intersection(_line_terms(heading)))
        hit = Hit(kind, doc.id, "", text, doc.parent, doc.signal, doc.at, data=meta)
        hit.bm25 = score
        hit.relevance = cov
        hit.prior = prior
        out.append(hit)
    return out


def _add_evidence(hit: Hit, change: Doc, q: Sequence[str]) -> None:
    """A commit's best change, as the lines of its patch that match the query best."""
    cmeta = _meta(change)
    body = change.shown.split("\n", 1)[1] if "\n" in change.shown else ""
    _, ev = window(body, q, EVIDENCE_CHARS)
    hit.text += f"\n  evidence: {cmeta.get('path', '?')}\n{ev}"
    hit.data["evidencePath"] = cmeta.get("path")
    hit.data["evidenceId"] = change.id


def _doc_windows(st: RepoState, hits: list[Hit], q: Sequence[str]) -> None:
    """Show each doc section's best window (the stored section can be longer than what is shown)."""
    for hit in hits:
        row = st.sections.get(hit.id)
        if row is None:
            continue
        text, start, path, heading = row
        offset, shown = window(text, q, DOC_WINDOW_CHARS)
        first = start + offset
        hit.text = f"{path}:{first} {heading}\n{shown}"
        hit.data["line"] = first
        hit.data["lineEnd"] = first + shown.count("\n")


def search(
    conn: Conn, text: str, repo_id: str, user_id: str, *, kinds: Sequence[str] | None = None,
    memory: list[Hit] | None = None,
) -> tuple[list[Hit], dict[str, Any]]:  # fmt: skip
    """Ranked hits of one repository's history (and the memory hits passed in), and notes on how."""
    t0 = time.perf_counter()
    q = query_terms(text)
    notes: dict[str, Any] = {"terms": q, "index": "in-daemon BM25 per kind"}
    if not q:
        notes["empty"] = "no searchable words in the query"
        return [], notes
    st = index_for(conn).ready(conn, repo_id)
    if not st.built:
        notes["index"] = "building: history answers are incomplete until the index is built"
    with st.lock:
        return _search(conn, st, text, q, repo_id, user_id, kinds, memory, notes, t0)


def _asked(hit: Hit, asks: str) -> bool:
    """Whether `hit` is the kind of answer the question's form asks for (analysis.intent)."""
    if asks == "history":
        return hit.kind == "commit" or (hit.kind == "doc" and is_changelog(str(hit.data.get("path") or "")))
    if asks == "doc":
        return hit.kind == "doc" and not is_changelog(str(hit.data.get("path") or ""))
    return False


def _rank(
    st: RepoState, q: Sequence[str], want: set[str], user_id: str, repo_id: str, memory: list[Hit] | None,
    asks: str = "",
) -> tuple[list[Hit], list[str], list[list[Hit]], dict[str, Doc], dict[str, str]]:
    """Every pool for the terms, fused: (hits best first, pool names, pools, commit id -> its best change,
    commit id -> the changelog bullet citing it)."""
    lists: list[list[Hit]] = []
    names: list[str] = []
    evidence: dict[str, Doc] = {}
    bullets: dict[str, str] = {}  # commit id -> the changelog bullet citing its number
    if "commit" in want:
        lists.append(_commits(st, q, evidence, bullets))
        names.append("commit")
    elif "change" in want:  # changes asked for on their own: the change pool, unfolded
        lists.append(_pool(st, "change", q, user_id))
        names.append("change")
    for kind in ("doc", "shell", "turn"):
        if kind in want:
            lists.append(_pool(st, kind, q, user_id))
            names.append(kind)
    if memory:
        for hit in memory:
            own = [t for t in q if t not in (_qw(q) or {})]  # the query's own terms, not the expansion
            matched = set(own).intersection(terms(hit.text))
            hit.relevance = len(matched) / len(own)
            hit.prior = 1.0
        lists.append(memory)
        names.append("memory")
    hits: list[Hit] = []
    for ranked in lists:
        for rank, hit in enumerate(ranked, 1):
            hit.repo_id = repo_id
            hit.score = hit.relevance**2 / (K + rank) * hit.prior
            if asks and _asked(hit, asks):
                hit.score *= INTENT_PRIOR
            elif asks == "history" and hit.kind == "doc":
                hit.score *= ASIDE_PRIOR  # (a section says how things are now, not when they changed)
            hit.relevance = round(hit.relevance, 4)
            hits.append(hit)
    hits.sort(key=lambda h: (-h.score, h.id))
    return hits, names, lists, evidence, bullets


def expand_enabled() -> bool:
    from nexusd import config

    return bool(config.get("NEXUS_QUERY_EXPAND"))


def expansion(st: RepoState, q: Sequence[str], hits: Sequence[Hit]) -> list[str]:
    """Pseudo-relevance feedback: the terms that weigh most (tf share x idf) in the first pass's best commits
    and doc sections, not in the query, held by at least two documents of their pool."""
    asked = set(q)
    scores: dict[str, float] = {}
    used = 0
    for hit in hits:
        if used >= FEEDBACK_DOCS:
            break
        if hit.kind not in ("commit", "doc"):
            continue
        shard = st.shards.get(hit.kind)
        doc = shard.docs.get(hit.id) if shard is not None else None
        if shard is None or doc is None or not doc.length:
            continue
        used += 1
        for term in doc.terms:
            tf = shard.count(doc.id, term)
            if term in asked or len(term) < 3 or term.isdigit() or len(shard.postings.get(term, ())) < 2:
                continue
            scores[term] = scores.get(term, 0.0) + tf / doc.length * shard.idf(term)
    best = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:EXPAND_TERMS]
    return [term for term, _ in best]


def _search(
    conn: Conn, st: RepoState, text: str, q: list[str], repo_id: str, user_id: str, kinds: Sequence[str] | None,
    memory: list[Hit] | None, notes: dict[str, Any], t0: float,
) -> tuple[list[Hit], dict[str, Any]]:  # fmt: skip
    want = (
        set(kinds) if kinds else {"commit", "change", "doc", "shell", "turn", "fact", "procedure", "handoff"}
    )
    asks = intent(text)
    if asks:
        notes["asks"] = asks
    hits, names, lists, evidence, bullets = _rank(st, q, want, user_id, repo_id, memory, asks)
    if expand_enabled() and len(q) >= 2:
        extra = expansion(st, q, hits)
        if extra:
            notes["expanded"] = extra
            expanded = Terms([*q, *extra], dict.fromkeys(extra, EXPAND_WEIGHT))
            hits, names, lists, evidence, bullets = _rank(st, expanded, want, user_id, repo_id, memory, asks)
    hits.sort(key=lambda h: (-h.score, h.id))
    top = hits[:FINISH]
    for hit in top:
        change = evidence.get(hit.id) if hit.kind == "commit" else None
        if change is not None:
            _add_evidence(hit, change, q)
        bullet = bullets.get(hit.id) if hit.kind == "commit" else None
        row = st.sections.get(str(hit.data.get("noteId"))) if bullet else None
        if bullet and row is not None:  # the changelog bullet that cites the commit's number, as users read it
            text, start, path, _heading = row
            first = start + text[: text.find(bullet)].count("\n") if bullet in text else start
            hit.text += f"\n  changelog: {path}:{first}\n{_clip(bullet, NOTE_CHARS)}"
    _doc_windows(st, [h for h in top if h.kind == "doc"], q)
    notes["pools"] = {name: len(ranked) for name, ranked in zip(names, lists, strict=True)}
    notes["ms"] = round((time.perf_counter() - t0) * 1000, 2)
    return hits, notes
