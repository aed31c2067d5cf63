"""Would a local static embedding model recover the paraphrased questions that keyword search misses?

A probe, not part of NEXUS: it needs `wordllama` (0.4.0.post1 on PyPI; its wheel ships a 256-dimension
static token-embedding model, so nothing downloads) in a separate environment, with one fix for that wheel:
it looks for its tokenizer in `wordllama/tokenizer/` but ships it in `wordllama/tokenizers/`.

    python3 -m venv /tmp/wl && /tmp/wl/bin/pip install wordllama==0.4.0.post1
    ln -s tokenizers /tmp/wl/lib/python3.11/site-packages/wordllama/tokenizer
    /tmp/wl/bin/python bench/history_eval/vector_probe.py --mirror /work/.mirror \\
        --questions questions_heldout2.json --nexus history_eval_heldout2.json

For every question answered by a commit (the close and paraphrased thirds), every commit message of the
repository at its pinned HEAD (subject and body) is embedded, ranked by cosine similarity to the question, and
the rank of the first answering commit kept. Printed and written to bench/results/vector_probe.json: R@1 and R@5
per style for NEXUS's default row (from the `--nexus` result file), for the embedding alone, and for the union
of the two top-5 lists (a ceiling for any fusion of the two that keeps to their top 5s)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE.parent / "results"


def commits(git_dir: Path, head: str) -> list[tuple[str, str]]:
    out = subprocess.run(["git", "--git-dir", str(git_dir), "log", "--format=%H%x00%s%n%b%x01", head],
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    items = []
    for record in out.split("\x01"):
        record = record.strip("\n")
        if record:
            sha, message = record.split("\x00", 1)
            items.append((sha, message.strip()[:2000]))
    return items


def main() -> None:
    import numpy as np
    from wordllama import WordLlama

    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", required=True, type=Path, help="DIR/<owner>+<name>/repo, bare git dirs")
    ap.add_argument("--questions", default="questions_heldout2.json")
    ap.add_argument("--nexus", default="history_eval_heldout2.json", help="a run.py result with a default row")
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--out", default="vector_probe")
    opts = ap.parse_args()
    spec = json.loads((HERE / opts.questions).read_text())
    nexus = {q["id"]: q.get("rank") for q in json.loads((RESULTS / opts.nexus).read_text())["default"]["questions"]}
    t0 = time.perf_counter()
    model = WordLlama.load(dim=opts.dim)
    load_s = time.perf_counter() - t0
    embedded: dict[str, tuple[list[tuple[str, str]], Any]] = {}
    embed_s = 0.0
    for name, repo in spec["repositories"].items():
        owner, repo_name = repo["github"].split("/")
        items = commits(opts.mirror / f"{owner}+{repo_name}" / "repo", repo["head"])
        t0 = time.perf_counter()
        embedded[name] = (items, model.embed([m for _, m in items], norm=True))
        embed_s += time.perf_counter() - t0
    rows = []
    for q in spec["questions"]:
        shas = [a["sha"] for a in q["answers"] if "sha" in a]
        if not shas:
            continue
        items, matrix = embedded[q["repo"]]
        order = np.argsort(-(matrix @ model.embed([q["q"]], norm=True)[0]))
        rank = next((r + 1 for r, i in enumerate(order[:1000]) if any(items[i][0].startswith(s) for s in shas)), None)
        rows.append({"id": q["id"], "style": q["style"], "nexus": nexus.get(q["id"]), "vector": rank})

    def at(rank: int | None, k: int) -> bool:
        return rank is not None and rank <= k

    by_style: dict[str, Any] = {}
    for style in sorted({r["style"] for r in rows}):
        sub = [r for r in rows if r["style"] == style]
        n = len(sub)
        by_style[style] = {
            "n": n,
            "nexus": {"R@1": round(sum(at(r["nexus"], 1) for r in sub) / n, 3),
                      "R@5": round(sum(at(r["nexus"], 5) for r in sub) / n, 3)},
            "vector": {"R@1": round(sum(at(r["vector"], 1) for r in sub) / n, 3),
                       "R@5": round(sum(at(r["vector"], 5) for r in sub) / n, 3)},
            "unionR@5": round(sum(at(r["nexus"], 5) or at(r["vector"], 5) for r in sub) / n, 3),
        }  # fmt: skip
    result = {"benchmark": "vector_probe", "model": f"wordllama l2_supercat {opts.dim}", "questions": opts.questions,
              "nexusRow": opts.nexus, "loadSeconds": round(load_s, 2), "embedSeconds": round(embed_s, 2),
              "commits": {k: len(v[0]) for k, v in embedded.items()}, "byStyle": by_style, "rows": rows}  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{opts.out}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(by_style, indent=1))
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
