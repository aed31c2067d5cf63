"""Recall latency over 10,000 memory nodes, through the client library.

    .venv/bin/python bench/memory_recall.py [--nodes 10000] [--queries 2000]

Target (issue: memory): p50 <= 5 ms through the client library. The nodes (70% facts, 20% procedures,
10% handoffs, prose mixed with camelCase identifiers) are loaded with `memory.import` into one user's memory
of one repository, with a second user's and a second repository's memory beside them so the owner filters
are exercised. Each recall also counts its items as used (the write is queued to the writer).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus_client import connect  # noqa: E402

from bench.harness import BenchDaemon, percentiles, write_result  # noqa: E402

PROSE = (
    "cache retry timeout parser config deploy queue tenant schema index token budget session flaky test "
    "release branch merge conflict migration rollback latency memory journal replay socket worker thread "
    "lock request reply encode decode stream batch commit checkpoint vacuum watcher settle sync import export"
).split()
PARTS = "normalize parse load save fetch build resolve render query update delete create read write".split()
NOUNS = "Params Config Index Token Session Cache Queue Schema User Repo Symbol File Graph Batch".split()


class Vocabulary:
    """`tiny`: 45 words, each in ~30% of nodes (the worst case: every query touches most of the corpus).
    `zipf`: 3,000 words with Zipf-distributed frequencies, like real notes; queries skip the 10 commonest."""

    def __init__(self, kind: str, rng: random.Random):
        self.rng = rng
        if kind == "tiny":
            self.words, self.weights, self.query_words = PROSE, None, PROSE
        else:
            letters = "abcdefghijklmnopqrstuvwxyz"
            extra = {"".join(rng.choices(letters, k=rng.randint(4, 9))) for _ in range(3000)}
            self.words = PROSE + sorted(extra - set(PROSE))
            self.weights = [1.0 / (rank + 1) for rank in range(len(self.words))]
            self.query_words = self.words[10:]

    def sample(self, k: int) -> list[str]:
        return self.rng.choices(self.words, weights=self.weights, k=k)

    def query(self, k: int) -> list[str]:
        if self.weights is None:
            return self.rng.choices(self.query_words, k=k)
        return self.rng.choices(self.query_words, weights=self.weights[10:], k=k)


def make_nodes(n: int, user: str, rng: random.Random, vocab: Vocabulary) -> list[dict[str, Any]]:
    now = time.time()
    idents = [p + q for p in PARTS for q in NOUNS]
    nodes: list[dict[str, Any]] = []
    for i in range(n):
        words = vocab.sample(rng.randint(8, 20)) + rng.choices(idents, k=rng.randint(1, 3))
        rng.shuffle(words)
        text = " ".join(words)
        ident = f"bench-{user}-{i}"
        base: dict[str, Any] = {"id": ident, "userId": user, "repoId": "x", "createdAt": now - rng.random() * 86400 * 60}
        kind = rng.random()
        if kind < 0.7:
            nodes.append({"type": "Fact", **base, "id": "fact_" + ident, "text": text, "usedCount": 0})
        elif kind < 0.9:
            steps = [" ".join(vocab.sample(5) + [rng.choice(idents)]) for _ in range(rng.randint(2, 5))]
            nodes.append({"type": "Procedure", **base, "id": "proc_" + ident, "title": text[:60], "steps": steps,
                          "files": [], "usedCount": 0})
        else:
            nodes.append({"type": "Handoff", **base, "id": "hand_" + ident, "done": text, "openItems": "",
                          "nextSteps": " ".join(vocab.sample(6)), "usedCount": 0})
    return nodes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=2_000)
    ap.add_argument("--corpus", choices=["zipf", "tiny"], nargs="*", default=["zipf", "tiny"])
    opts = ap.parse_args()
    results = {kind: run(opts, kind) for kind in opts.corpus}
    path = write_result("memory_recall", {"corpora": results, "targets": {"p50_ms": 5.0},
                                          "note": "recall through the client library (nexus_client.connect)"})
    for kind, result in results.items():
        rec, ar = result["recall"], result["recall_all_repos"]
        print(f"[{kind}] recall over {opts.nodes} nodes: p50 {rec['p50_ms']:.2f} ms  p99 {rec['p99_ms']:.2f} ms "
              f"(n={rec['n']}, {result['mean_items']} items/answer); --all-repos p50 {ar['p50_ms']:.2f} ms "
              f"p99 {ar['p99_ms']:.2f} ms; load {result['load_seconds']} s")
    print(f"wrote {path}")


def run(opts: argparse.Namespace, kind: str) -> dict[str, Any]:
    rng = random.Random(7)
    vocab = Vocabulary(kind, rng)
    with tempfile.TemporaryDirectory(prefix="nxb-repo-") as tmp, BenchDaemon() as d:
        repos = []
        for name in ("main", "other"):
            root = Path(tmp) / name
            root.mkdir()
            (root / "a.py").write_text("def f():\n    return 1\n")
            subprocess.run(["git", "init", "-q", str(root)], check=True)
            repos.append(str(root))
        with connect(d.dirs, timeout=600) as c:
            for repo in repos:
                c.request("index", {"repo": repo, "user": "bench"}, timeout=600)
            t0 = time.perf_counter()
            loads = [("bench", repos[0], opts.nodes), ("bench", repos[1], opts.nodes // 10)]
            for user, repo, n in loads:
                nodes = make_nodes(n, user, rng, vocab)
                for i in range(0, len(nodes), 1000):
                    c.request("memory.import", {"user": user, "repo": repo, "records": nodes[i : i + 1000]}, timeout=600)
            load_s = time.perf_counter() - t0
            idents = [p + q for p in PARTS for q in NOUNS]
            queries = [
                " ".join(vocab.query(rng.randint(1, 3)) + ([rng.choice(idents)] if rng.random() < 0.5 else []))
                for _ in range(opts.queries)
            ]
            scope = {"user": "bench", "repo": repos[0]}
            for q in queries[:200]:  # warm up
                c.request("recall", {**scope, "query": q})
            samples, items, toks = [], 0, 0
            for q in queries:
                t = time.perf_counter()
                r = c.request("recall", {**scope, "query": q})
                samples.append(time.perf_counter() - t)
                items += len(r["items"])
                toks += r["tokens"]
            all_samples = []
            for q in queries[: opts.queries // 4]:
                t = time.perf_counter()
                c.request("recall", {**scope, "query": q, "allRepos": True})
                all_samples.append(time.perf_counter() - t)
            rss = d.rss_mb()
    return {
        "nodes": opts.nodes,
        "otherRepoNodes": opts.nodes // 10,
        "load_seconds": round(load_s, 2),
        "recall": percentiles(samples),
        "recall_all_repos": percentiles(all_samples),
        "mean_items": round(items / len(queries), 2),
        "mean_tokens": round(toks / len(queries), 1),
        "default_budget_tokens": 2000,
        "daemon_rss_mb": round(rss, 1),
    }


if __name__ == "__main__":
    main()
