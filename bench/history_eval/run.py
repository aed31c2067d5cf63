"""The history retrieval benchmark: hand-written questions over real public repositories' git histories.

questions.json holds the repositories (each pinned to a HEAD sha) and the questions, each with every
acceptable answer written down beside it before any ranking was looked at: a commit (sha prefix) or a
document span (path + first and last line). A third of the questions are worded close to the commit's own
words, a third paraphrased as a developer would ask, a third answered by a doc section.

Scoring is judge-free: a result answers a question when it is a commit or change of a listed sha (or of the
merge commit that brought that sha into the first-parent line, for repositories that merge pull requests),
or a doc section of a listed path whose lines overlap the listed span. Per question: the rank of the first
answering result among what `query` returns with its default limit and budget (what a user gets); R@1, R@5,
MRR@10, tokens (the packed results' token estimate), overall, per question style and per repository.

Two rows: `default` (a first `history.sync` with the defaults: every commit's message, diffs for the latest
5,000 non-merge commits, `NEXUS_HISTORY_PATCHES`; 200 before 2026-12-05) and `whole` (every commit with its diff: `limit` and `patches` 100000). Each row runs
in a fresh daemon. (Before the patch window existed, the default read the latest 200 commits, merges
included, with diffs, and nothing older: the `history_eval_baseline*.json` rows.)

Repositories are cloned once into a cache dir (`--cache`, default ~/.cache/nexus-bench/history_eval) from
`--mirror DIR` (DIR/<owner>+<name>/repo, a bare git dir) when given, else from GitHub, then detached at the
pinned sha.

`questions_heldout.json` (36 questions over the same three repositories, drawn at random by a fixed rule) was
held out once; its failures have since been read and ranking changes measured on it, so it is a tuning set now,
like questions.json. `questions_heldout2.json` is the held-out set: 60 questions over three other repositories
(ripgrep, starlette, pluggy), drawn by `draw.py`'s rule, written and committed before NEXUS ingested them:
`--questions questions_heldout2.json`. Its results have since been read, so it is a tuning set too.
`questions_heldout3.json`: 60 questions over express (linear commits, ~6,000), typer (squash merges) and
marshmallow (PR merges + changelog), drawn by the same rule and committed before NEXUS ingested them; its failures
have since been read, so it is a tuning set too. `questions_heldout4.json`: 60 questions
over black (squash merges), commander.js (PR merges + changelog) and attrs (linear commits), drawn by the same
rule and committed before NEXUS ingested them; its failures have since been read, so it is a tuning set too.
`questions_heldout5.json`: 60 questions over uvicorn (squash merges), werkzeug (PR merges + changelog) and structlog
(mostly linear commits), drawn by the same rule and committed before NEXUS ingested them; its paraphrases have
since been read, so it is a tuning set too. `questions_heldout6.json` is the held-out set now: 60 questions over
jinja (PR and maintenance-branch merges + changelog), sqlmodel (squash merges + release notes) and loguru (linear
commits), drawn by the same rule, each repository's questions and answers written by a pass that read only git,
committed before NEXUS ingested them: `--questions questions_heldout6.json`.

Run: `python bench/history_eval/run.py` (`--rows default,whole`, `--only flask`, `--mirror DIR`, `--questions`).
Writes bench/results/history_eval.json (`--out NAME`: bench/results/NAME.json).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO))

from bench.harness import BenchDaemon, write_result  # noqa: E402

HERE = Path(__file__).resolve().parent
WHOLE_LIMIT = 100_000


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def checkout(name: str, spec: dict[str, str], cache: Path, mirror: Path | None) -> Path:
    dest = cache / name
    if not (dest / ".git").exists():
        owner, repo = spec["github"].split("/")
        src = mirror / f"{owner}+{repo}" / "repo" if mirror else None
        url = str(src) if src and src.exists() else f"https://github.com/{spec['github']}.git"
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--no-checkout", url, str(dest)], check=True)
    git(dest, "checkout", "-q", "--detach", spec["head"])
    git(dest, "clean", "-qfdx")
    return dest


def merge_of(root: Path, sha: str, first_parent: list[str], pos: dict[str, int]) -> str | None:
    """The first-parent commit that brought `sha` into the mainline, when that is a merge (else None)."""
    full = git(root, "rev-parse", sha).strip()
    if full in pos:
        return None
    if subprocess.run(["git", "merge-base", "--is-ancestor", full, "HEAD"], cwd=root).returncode != 0:
        return None  # on another branch (a squashed pull request's own commit): HEAD's history cannot hold it
    # first_parent is newest first: the oldest mainline commit that contains `full` (binary search).
    lo, hi = 0, len(first_parent) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        contains = (
            subprocess.run(
                ["git", "merge-base", "--is-ancestor", full, first_parent[mid]], cwd=root
            ).returncode
            == 0
        )
        if contains:
            lo = mid
        else:
            hi = mid - 1
    return first_parent[lo]


def expand_answers(root: Path, questions: list[dict[str, Any]]) -> None:
    """Resolve each sha answer to its full sha and add the merge that brought it in (if any)."""
    first_parent = git(root, "rev-list", "--first-parent", "HEAD").split()
    pos = {s: i for i, s in enumerate(first_parent)}
    for q in questions:
        shas: set[str] = set()
        for a in q["answers"]:
            if "sha" in a:
                found = subprocess.run(["git", "rev-parse", "--verify", "-q", a["sha"] + "^{commit}"], cwd=root,
                                       capture_output=True, text=True)  # fmt: skip
                if found.returncode != 0:
                    continue  # not in the clone (a pull request's ref): no result can be that commit
                full = found.stdout.strip()
                shas.add(full)
                m = merge_of(root, full, first_parent, pos)
                if m:
                    shas.add(m)
        q["_shas"] = shas


def answers(item: dict[str, Any], q: dict[str, Any]) -> bool:
    if item["kind"] in ("commit", "change"):
        return item.get("sha") in q["_shas"]
    if item["kind"] == "doc":
        start = int(item.get("line") or 0)
        end = start + item.get("text", "").count("\n")
        if item.get("lineEnd"):
            end = int(item["lineEnd"])
        for a in q["answers"]:
            if a.get("doc") == item.get("path") and start <= a["lines"][1] and end >= a["lines"][0]:
                return True
    return False


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    if not n:
        return {}
    ranks = [r["rank"] for r in rows]
    return {
        "n": n,
        "R@1": round(sum(1 for k in ranks if k == 1) / n, 3),
        "R@5": round(sum(1 for k in ranks if k and k <= 5) / n, 3),
        "MRR@10": round(sum(1.0 / k for k in ranks if k and k <= 10) / n, 3),
        "tokens": round(sum(r["tokens"] for r in rows) / n),
    }


def run_row(
    row: str, specs: dict[str, Any], roots: dict[str, Path], questions: list[dict[str, Any]], home: str = "",
    ingest_only: bool = False,
) -> dict[str, Any]:
    import shutil

    from nexus_client import connect

    from nexusd.history.ingest import patch_limit

    per_q: list[dict[str, Any]] = []
    ingest: dict[str, Any] = {}
    latencies: list[float] = []
    daemon = BenchDaemon()
    marker = None
    if home:  # reuse an ingested NEXUS_HOME across runs (ranking work: restart the daemon, skip the ingest)
        from nexusd import paths

        shutil.rmtree(daemon.home, ignore_errors=True)
        daemon.home = Path(home) / row
        daemon.home.mkdir(parents=True, exist_ok=True)
        daemon.env["NEXUS_HOME"] = str(daemon.home)
        daemon.dirs = paths.dirs({"NEXUS_HOME": str(daemon.home)})
        marker = daemon.home / "ingested.json"
    daemon.start()
    try:
        client_cm = connect(daemon.dirs)
        client = client_cm.__enter__()
        roots_to_ingest = roots
        if marker is not None and marker.exists():
            ingest = json.loads(marker.read_text())
            roots_to_ingest = {}
        for name, root in roots_to_ingest.items():
            client.request("index", {"repo": str(root)}, timeout=1800)
            args: dict[str, Any] = {"repo": str(root)}
            if row == "whole":  # every commit with its diff
                args["limit"] = WHOLE_LIMIT
                args["patches"] = WHOLE_LIMIT
            t0 = time.perf_counter()
            synced = client.request("history.sync", args, timeout=1800)
            seconds = time.perf_counter() - t0
            t1 = time.perf_counter()  # what git itself takes to print the same commits
            logs = [["log", "-p", "--unified=0", "-M", "--no-color", "HEAD"]] if row == "whole" else [
                ["log", "--no-color", "HEAD"],
                ["log", "-p", "--unified=0", "-M", "--no-color", "--no-merges", f"--max-count={patch_limit()}", "HEAD"]]  # fmt: skip
            for log_args in logs:  # bytes: old patches need not be UTF-8
                subprocess.run(["git", *log_args], cwd=root, check=True, capture_output=True)
            git_s = time.perf_counter() - t1
            ingest[name] = {"seconds": round(seconds, 2), "gitLogSeconds": round(git_s, 2),
                            "ratio": round(seconds / max(git_s, 1e-6), 1), "counts": synced["counts"],
                            "git": {k: v for k, v in synced.get("git", {}).items() if isinstance(v, (int, str, bool))}}  # fmt: skip
        if marker is not None and roots_to_ingest:
            marker.write_text(json.dumps(ingest))
        for q in [] if ingest_only else questions:
            t0 = time.perf_counter()
            r = client.request("query", {"repo": str(roots[q["repo"]]), "text": q["q"]})
            latencies.append(time.perf_counter() - t0)
            results = r["results"]
            rank = next((i for i, item in enumerate(results, 1) if answers(item, q)), None)
            per_q.append({
                "id": q["id"], "repo": q["repo"], "style": q["style"], "q": q["q"], "rank": rank,
                "tokens": int(r["cut"].get("tokensUsed", sum(x.get("tokens", 0) for x in results))),
                "top": [_label(x) for x in results[:5]],
            })  # fmt: skip
        client_cm.__exit__(None, None, None)
    finally:
        daemon.stop()
        if marker is None:
            shutil.rmtree(daemon.home, ignore_errors=True)
    out: dict[str, Any] = {"all": summarise(per_q), "ingest": ingest}
    out["byStyle"] = {
        s: summarise([p for p in per_q if p["style"] == s]) for s in ("close", "paraphrase", "doc")
    }
    out["byRepo"] = {n: summarise([p for p in per_q if p["repo"] == n]) for n in roots}
    lat = sorted(latencies)
    out["queryP50Ms"] = round(lat[len(lat) // 2] * 1000, 1) if lat else None
    out["questions"] = per_q
    return out


def _label(item: dict[str, Any]) -> str:
    if item["kind"] in ("commit", "change"):
        first = item.get("text", "").split("\n", 1)[0]
        return f"{item['kind']} {str(item.get('sha'))[:8]} {first[:70]}"
    if item["kind"] == "doc":
        return f"doc {item.get('path')}:{item.get('line')} {str(item.get('headingPath'))[:60]}"
    return f"{item['kind']} {item.get('text', '')[:60]}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="default,whole")
    parser.add_argument("--only", default="", help="comma-separated repository names")
    parser.add_argument("--mirror", default=os.environ.get("NEXUS_BENCH_MIRROR", ""))
    parser.add_argument("--cache", default=os.path.expanduser("~/.cache/nexus-bench/history_eval"))
    parser.add_argument("--out", default="history_eval")
    parser.add_argument("--home", default="", help="keep and reuse the ingested daemon homes under this dir")
    parser.add_argument("--questions", default="questions.json",
                        help="the question set under bench/history_eval/ (questions_heldout.json: the held-out set)")
    parser.add_argument("--ingest-only", action="store_true",
                        help="with --home: ingest into the homes and ask no question (nothing is scored)")
    opts = parser.parse_args()
    if opts.ingest_only and not opts.home:
        parser.error("--ingest-only needs --home")
    spec = json.loads((HERE / opts.questions).read_text())
    names = [n for n in spec["repositories"] if not opts.only or n in opts.only.split(",")]
    mirror = Path(opts.mirror) if opts.mirror else None
    roots = {n: checkout(n, spec["repositories"][n], Path(opts.cache), mirror) for n in names}
    questions = [q for q in spec["questions"] if q["repo"] in roots]
    for name, root in roots.items():
        expand_answers(root, [q for q in questions if q["repo"] == name])
    result: dict[str, Any] = {
        "repositories": {n: spec["repositories"][n] for n in names},
        "questions": len(questions),
        "questionSet": opts.questions,
    }
    for row in opts.rows.split(","):
        result[row] = run_row(row, spec["repositories"], roots, questions, opts.home, opts.ingest_only)
        s = result[row]
        if opts.ingest_only:
            print(f"{row}: ingested {json.dumps({k: v['seconds'] for k, v in s['ingest'].items()})}")
            continue
        print(f"{row}: {json.dumps(s['all'])}")
        for style, v in s["byStyle"].items():
            print(f"   {style}: {json.dumps(v)}")
        for repo, v in s["byRepo"].items():
            print(f"   {repo}: {json.dumps(v)}")
        print(
            f"   ingest: {json.dumps({k: v['seconds'] for k, v in s['ingest'].items()})}  query p50 {s['queryP50Ms']} ms"
        )
    if opts.ingest_only:
        return
    path = write_result(opts.out, result)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
