"""Function history against git's own line log: is `nexus history SYMBOL` the list of commits that touched it?

The reference is `git log -L START,END:PATH` (git follows the function's lines back through every diff and the
file's renames), over functions of real repositories' histories, pinned by sha (bench/history_eval's flask and
httpx, and pallets/jinja).

The sample (`reference.json`, written by `--select` before NEXUS was run on it, and kept so the run repeats):
- every `def` of the repository's tracked `.py` files at the pinned HEAD that Python's own `ast` finds at module
  level or in a (nested) class body, named `Class.method` as the code graph names it; a name defined twice in
  one file is left out (which of the two would be ambiguous);
- its lines: from the `def` line to its last line, as `ast` reports them (decorators are not part of it, as in
  the code graph);
- the candidates of each repository shuffled with `random.Random(14)`, then taken in that order: each is kept
  when `git log -L` lists at least 3 commits for it, until 20 per repository are kept.

A second sample (`reference_heldout.json`, `--select-heldout`): the same rule with seed 15 over the functions not
in the first, written from `git log -L` before NEXUS ran on it. The lineage rules were designed looking at the
first sample's misses ("tuning"); the second ("held-out") was not looked at before the rules were fixed, and is
reported apart.

NEXUS side: a fresh daemon per run, `index`, then `history.sync` with every commit's diff (`limit` and `patches`
100000; `--row default` uses the defaults, the latest 200 non-merge commits with diffs), then `history` with the
target spelled as the code graph's key (`py:method:path:Class.m`) for even-numbered functions and as
`path:QualifiedName` for odd ones, `limit` 200. Per function: precision and recall of its commit set (`changes`: the
function's history in its own file, as `git log -L` follows it) against git's; overall micro (all commits pooled)
and macro (mean per function) figures, per sample. `withMovedFrom` also counts the commits of where the function
lived before it moved in from another file (`movedFrom`, linked by body similarity), which no line log lists.

Run: `python bench/function_history/run.py --mirror /work/.mirror [--row whole|default] [--select]`.
Writes bench/results/function_history[_default].json.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO))

from bench.harness import BenchDaemon, write_result  # noqa: E402
from bench.history_eval.run import checkout  # noqa: E402

HERE = Path(__file__).resolve().parent
SEED = 14
PER_REPO = 20
MIN_COMMITS = 3
REPOSITORIES = {
    "flask": {"github": "pallets/flask", "head": "2ac89889f4cc330eabd50f295dcef02828522c69"},
    "httpx": {"github": "encode/httpx", "head": "ae1b9f66238f75ced3ced5e4485408435de10768"},
    "jinja": {"github": "pallets/jinja", "head": "5ef70112a1ff19c05324ff889dd30405b1002044"},
}
WHOLE = 100_000
HELDOUT_SEED = 15


def git(cwd: Path, *args: str, timeout: float = 300) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, errors="replace", timeout=timeout
    ).stdout


def functions(root: Path) -> list[dict[str, Any]]:
    """Every module-level function and class method of the tracked .py files, by Python's ast."""
    out: list[dict[str, Any]] = []
    for path in sorted(git(root, "ls-files", "*.py").split()):
        try:
            tree = ast.parse((root / path).read_bytes())
        except (SyntaxError, ValueError, OSError):
            continue
        found: list[tuple[str, bool, ast.AST]] = []

        def walk(body: list[ast.stmt], prefix: str, in_class: bool, found: list[tuple[str, bool, ast.AST]]) -> None:
            for node in body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    found.append((prefix + node.name, in_class, node))
                elif isinstance(node, ast.ClassDef):
                    walk(node.body, f"{prefix}{node.name}.", True, found)

        walk(tree.body, "", False, found)
        names = [q for q, _, _ in found]
        for qname, in_class, node in found:
            if names.count(qname) > 1:
                continue
            out.append({"path": path, "qualifiedName": qname, "kind": "method" if in_class else "function",
                        "start": node.lineno, "end": node.end_lineno})  # type: ignore[attr-defined]  # fmt: skip
    return out


def line_log(root: Path, fn: dict[str, Any]) -> list[str]:
    text = git(root, "log", "-L", f"{fn['start']},{fn['end']}:{fn['path']}", "--format=%x00%H", "--no-patch",
               "HEAD", timeout=120)  # fmt: skip
    return [part.split()[0] for part in text.split("\0")[1:] if part.strip()]


def select(roots: dict[str, Path], seed: int = SEED, exclude: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    sample: list[dict[str, Any]] = []
    looked: dict[str, int] = {}
    taken = {(f["repo"], f["path"], f["qualifiedName"]) for f in exclude or ()}
    for name, root in roots.items():
        candidates = [f for f in functions(root) if (name, f["path"], f["qualifiedName"]) not in taken]
        random.Random(seed).shuffle(candidates)
        kept = 0
        looked[name] = 0
        for fn in candidates:
            if kept >= PER_REPO:
                break
            looked[name] += 1
            try:
                shas = line_log(root, fn)
            except subprocess.SubprocessError:
                continue
            if len(shas) >= MIN_COMMITS:
                sample.append({"repo": name, **fn, "commits": shas})
                kept += 1
        print(f"{name}: {kept} kept of {looked[name]} looked at ({len(candidates)} candidates)", flush=True)
    return {"seed": seed, "perRepo": PER_REPO, "minCommits": MIN_COMMITS, "repositories": REPOSITORIES,
            "looked": looked, "functions": sample}  # fmt: skip


def target_of(i: int, fn: dict[str, Any]) -> str:
    if i % 2 == 0:
        return f"py:{fn['kind']}:{fn['path']}:{fn['qualifiedName']}"
    return f"{fn['path']}:{fn['qualifiedName']}"


def run(roots: dict[str, Path], ref: dict[str, Any], row: str) -> dict[str, Any]:
    from nexus_client import connect

    per_fn: list[dict[str, Any]] = []
    ingest: dict[str, Any] = {}
    with BenchDaemon() as daemon, connect(daemon.dirs) as client:
        for name, root in roots.items():
            t0 = time.perf_counter()
            client.request("index", {"repo": str(root)}, timeout=1800)
            args: dict[str, Any] = {"repo": str(root), "docs": False, "shell": False}
            if row == "whole":
                args.update(limit=WHOLE, patches=WHOLE)
            t1 = time.perf_counter()
            synced = client.request("history.sync", args, timeout=3600)
            ingest[name] = {"indexSeconds": round(t1 - t0, 1), "syncSeconds": round(time.perf_counter() - t1, 1),
                            "counts": synced.get("counts")}  # fmt: skip
            print(f"{name}: ingested {ingest[name]}", flush=True)
        latencies = []
        for i, fn in enumerate(ref["functions"]):
            target = target_of(i, fn)
            t0 = time.perf_counter()
            try:
                out = client.request("history", {"repo": str(roots[fn["repo"]]), "target": target, "limit": 200,
                                                 "patch": False})  # fmt: skip
                error = None
            except Exception as exc:  # a target that does not resolve counts as an empty answer, with its reason
                out, error = {"symbols": []}, str(exc)[:200]
            latencies.append(time.perf_counter() - t0)
            symbols = out.get("symbols") or []
            got = [ch["sha"] for ch in symbols[0]["changes"]] if len(symbols) == 1 else []
            moved = (
                {ch["sha"] for m in symbols[0].get("movedFrom") or () for ch in m["changes"]} - set(got)
                if len(symbols) == 1
                else set()
            )
            if len(symbols) > 1:
                error = f"{len(symbols)} symbols matched"
            want = set(fn["commits"])
            hit = want & set(got)
            per_fn.append({
                "repo": fn["repo"], "target": target, "want": len(want), "got": len(set(got)), "hit": len(hit),
                "precision": round(len(hit) / len(set(got)), 3) if got else (1.0 if not want else 0.0),
                "recall": round(len(hit) / len(want), 3) if want else 1.0,
                "missed": sorted(want - set(got)), "extra": sorted(set(got) - want), "error": error,
                "set": fn.get("set", "tuning"),
                "movedFrom": [f"{m['path']}:{m['name']} ({m['how']})" for m in symbols[0].get("movedFrom") or ()]
                if len(symbols) == 1 else [],
                "movedCommits": len(moved), "movedHit": len(moved & want),
            })  # fmt: skip
    want_n = sum(p["want"] for p in per_fn)
    got_n = sum(p["got"] for p in per_fn)
    hit_n = sum(p["hit"] for p in per_fn)
    n = len(per_fn)
    summary = {
        "functions": n,
        "microPrecision": round(hit_n / got_n, 4) if got_n else 0.0,
        "microRecall": round(hit_n / want_n, 4) if want_n else 0.0,
        "macroPrecision": round(sum(p["precision"] for p in per_fn) / n, 4) if n else 0.0,
        "macroRecall": round(sum(p["recall"] for p in per_fn) / n, 4) if n else 0.0,
        "exact": sum(1 for p in per_fn if not p["missed"] and not p["extra"]),
        "referenceCommits": want_n, "nexusCommits": got_n, "errors": sum(1 for p in per_fn if p["error"]),
        "historyP50Ms": round(sorted(latencies)[len(latencies) // 2] * 1000, 1) if latencies else None,
    }  # fmt: skip
    for half in ("tuning", "held-out"):
        rows = [p for p in per_fn if p["set"] == half]
        w, g, h = (sum(p[k] for p in rows) for k in ("want", "got", "hit"))
        summary[half] = {"functions": len(rows), "microPrecision": round(h / g, 4) if g else 0.0,
                         "microRecall": round(h / w, 4) if w else 0.0}  # fmt: skip
    mg = sum(p["movedCommits"] for p in per_fn)
    mh = sum(p["movedHit"] for p in per_fn)
    summary["withMovedFrom"] = {
        "movedCommits": mg, "movedCommitsGitLists": mh,
        "microPrecision": round((hit_n + mh) / (got_n + mg), 4) if got_n + mg else 0.0,
        "microRecall": round((hit_n + mh) / want_n, 4) if want_n else 0.0,
    }  # fmt: skip
    by_repo = {}
    for name in roots:
        rows = [p for p in per_fn if p["repo"] == name]
        w, g, h = (sum(p[k] for p in rows) for k in ("want", "got", "hit"))
        by_repo[name] = {"functions": len(rows), "precision": round(h / g, 4) if g else 0.0,
                         "recall": round(h / w, 4) if w else 0.0}  # fmt: skip
    return {"row": row, "summary": summary, "byRepo": by_repo, "ingest": ingest, "functions": per_fn}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--mirror", type=Path, help="DIR/<owner>+<name>/repo bare git dirs (else clone from GitHub)")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "nexus-bench" / "function_history")
    ap.add_argument("--select", action="store_true", help="only rebuild reference.json from git (the sample rule), run nothing else")
    ap.add_argument("--select-heldout", action="store_true",
                    help=f"only write reference_heldout.json: seed {HELDOUT_SEED}, none of reference.json's functions")
    ap.add_argument("--row", choices=["whole", "default"], default="whole")
    ap.add_argument("--only", help="comma-separated repository names")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(REPOSITORIES)
    roots = {n: checkout(n, REPOSITORIES[n], args.cache, args.mirror) for n in names}
    ref_path = HERE / "reference.json"
    if args.select:
        ref_path.write_text(json.dumps(select(roots), indent=1) + "\n")
        return
    if args.select_heldout:
        held = select(roots, HELDOUT_SEED, json.loads(ref_path.read_text())["functions"])
        (HERE / "reference_heldout.json").write_text(json.dumps(held, indent=1) + "\n")
        return
    ref = json.loads(ref_path.read_text())
    for f in ref["functions"]:
        f["set"] = "tuning"
    held_path = HERE / "reference_heldout.json"
    if held_path.exists():
        ref["functions"] += [{**f, "set": "held-out"} for f in json.loads(held_path.read_text())["functions"]]
    ref["functions"] = [f for f in ref["functions"] if f["repo"] in roots]
    result = run(roots, ref, args.row)
    print(json.dumps({"summary": result["summary"], "byRepo": result["byRepo"]}, indent=2))
    write_result("function_history" if args.row == "whole" else "function_history_default", result)


if __name__ == "__main__":
    main()
