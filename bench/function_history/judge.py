"""Who is right where NEXUS and `git log -L` disagree: every disagreement of a function-history run, judged by
the commit's own diff under a rule fixed before counting.

`git log -L START,END:PATH` carries a line range back through the diffs, not a function: where a diff replaces
or grows the lines around the range, the range follows them (onto a neighbouring function, a whole class body,
or the lines a new function was copied from), and a function moved inside its file by a delete + add is lost.
So the judge is sometimes wrong itself. The rule:

For a function F and a commit C on which the two disagree (missed: -L lists C, NEXUS does not; extra: NEXUS
lists C, -L does not), read C's diff against its first parent, `git diff -U0 -M C^1 C`, on the file F lived in
at C (the a/ and b/ paths -L prints for C; for an extra, every path of F's file-rename chain, by
`git log --follow`, that C changed). C *touched* F when a changed line lies inside F's span: a new-side hunk line
inside F in C's blob, or an old-side hunk line inside F in the parent's blob. F's span in a version is the def
with F's qualified name, or, when no def has that name in either version, a def with F's short name (the last
dotted component: a class renamed, a method moved out of a class). Earlier names that NEXUS's lineage follows
are *not* used (that would judge NEXUS by itself); such extras are reported as `byLineage`, to be read by hand.

- missed, F absent in both versions      -> `beforeBirth`: -L's range is on lines F was later made from
- missed, F present, not touched          -> `drift`: -L's range had grown or moved onto other lines
- missed, touched                         -> NEXUS wrong (`nexusMissed`; merges counted apart, `merge`)
- extra, touched                          -> NEXUS right (`judgeMissed`: the diff changed F's lines)
- extra, F present, not touched           -> NEXUS wrong (`nexusExtra`)
- extra, F absent in both versions        -> `byLineage`: NEXUS follows an earlier name here

Figures per sample: `strict` (against -L as it is); `setAside` (the beforeBirth and drift misses removed from
-L's list); `judged` (also the judgeMissed extras counted as right). Only `strict` compares with the issue's bar
as written; the other two say how much of the gap is the judge's.

Run: `python bench/function_history/judge.py [--result bench/results/function_history.json]` after run.py
(it needs the checkouts run.py made under --cache). Writes bench/results/function_history_judged.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(REPO))

from bench.harness import write_result  # noqa: E402
from nexusd.history import symbols_at  # noqa: E402

HERE = Path(__file__).resolve().parent
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_HUNK = re.compile(r"^@@ -(\d+),?(\d*) \+(\d+),?(\d*) @@", re.M)
_PATHS = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.M)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, errors="replace").stdout


def blob(root: Path, spec: str) -> bytes:
    r = subprocess.run(["git", "cat-file", "-p", spec], cwd=root, capture_output=True)
    return r.stdout if r.returncode == 0 else b""


def spans(defs: list[tuple[int, int, str]], qname: str) -> list[tuple[int, int]]:
    exact = [(s, e) for s, e, q in defs if q == qname]
    if exact:
        return exact
    short = qname.rsplit(".", 1)[-1]
    return [(s, e) for s, e, q in defs if q.rsplit(".", 1)[-1] == short]


def judge(root: Path, sha: str, paths: list[tuple[str, str]], qname: str) -> tuple[bool, bool, bool]:
    """(merge, F present in either version, C touched F) for commit `sha` over `paths` (old, new)."""
    parents = git(root, "rev-list", "--parents", "-n1", sha).split()[1:]
    parent = parents[0] if parents else None
    present = touched = False
    for old_path, new_path in paths:
        diff = git(root, "diff", "--unified=0", "-M", parent or EMPTY_TREE, sha, "--", old_path, new_path)
        if not diff.strip():
            continue
        m = _PATHS.search(diff)
        a, b = m.groups() if m else (old_path, new_path)
        new = spans(symbols_at.definitions(b, blob(root, f"{sha}:{b}")), qname)
        old = spans(symbols_at.definitions(a, blob(root, f"{parent}:{a}")), qname) if parent else []
        present = present or bool(new or old)
        for hunk in _HUNK.finditer(diff):
            os_, ol, ns, nl = (int(x) if x != "" else 1 for x in hunk.groups())
            if nl and any(s <= ns + nl - 1 and ns <= e for s, e in new):
                touched = True
            if ol and any(s <= os_ + ol - 1 and os_ <= e for s, e in old):
                touched = True
    return len(parents) > 1, present, touched


def line_log_paths(root: Path, fn: dict[str, Any]) -> dict[str, tuple[str, str]]:
    text = git(root, "log", "-L", f"{fn['start']},{fn['end']}:{fn['path']}", "--format=@@@%H", "HEAD")
    out: dict[str, tuple[str, str]] = {}
    for part in text.split("@@@")[1:]:
        sha = part.split("\n", 1)[0].strip()
        m = _PATHS.search(part)
        if m:
            out[sha] = (m.group(1), m.group(2))
    return out


def chain_paths(root: Path, sha: str, chain: set[str]) -> list[tuple[str, str]]:
    out = []
    for line in git(root, "show", "--name-status", "-M", "--format=", "--first-parent", sha).splitlines():
        bits = line.split("\t")
        if len(bits) == 3 and (bits[1] in chain or bits[2] in chain):
            out.append((bits[1], bits[2]))
        elif len(bits) == 2 and bits[1] in chain:
            out.append((bits[1], bits[1]))
    return out


def reference_of(refs: dict[tuple[str, str, str], dict[str, Any]], row: dict[str, Any]) -> dict[str, Any]:
    target = row["target"]
    rest = target.split(":", 2)[2] if target.startswith("py:") else target
    path, qname = rest.rsplit(":", 1)
    return refs[(row["repo"], path, qname)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--result", default=str(REPO / "bench/results/function_history.json"))
    parser.add_argument("--cache", default=os.path.expanduser("~/.cache/nexus-bench/function_history"))
    parser.add_argument("--out", default="function_history_judged")
    opts = parser.parse_args()
    result = json.loads(Path(opts.result).read_text())
    refs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for name in ("reference.json", "reference_heldout.json"):
        for fn in json.loads((HERE / name).read_text())["functions"]:
            refs[(fn["repo"], fn["path"], fn["qualifiedName"])] = fn
    samples: dict[str, dict[str, Any]] = {}
    verdicts: list[dict[str, Any]] = []
    for row in result["functions"]:
        s = samples.setdefault(row["set"], {"want": 0, "got": 0, "hit": 0, "counts": {}})
        s["want"] += row["want"]
        s["got"] += row["got"]
        s["hit"] += row["hit"]
        if not (row["missed"] or row["extra"]):
            continue
        fn = reference_of(refs, row)
        root = Path(opts.cache) / fn["repo"]
        l_paths = line_log_paths(root, fn)
        chain = set(git(root, "log", "--follow", "--name-only", "--format=", "-M", "--", fn["path"]).split())
        chain.add(fn["path"])
        for side, shas in (("missed", row["missed"]), ("extra", row["extra"])):
            for sha in shas:
                paths = (
                    [l_paths[sha]] if side == "missed" and sha in l_paths else chain_paths(root, sha, chain)
                )
                merge, present, touched = judge(root, sha, paths, fn["qualifiedName"])
                if side == "missed":
                    verdict = (
                        ("merge" if merge else "nexusMissed")
                        if touched
                        else ("drift" if present else "beforeBirth")
                    )
                else:
                    verdict = "judgeMissed" if touched else ("nexusExtra" if present else "byLineage")
                s["counts"][verdict] = s["counts"].get(verdict, 0) + 1
                verdicts.append({"set": row["set"], "repo": fn["repo"], "function": f"{fn['path']}:{fn['qualifiedName']}",
                                 "sha": sha, "side": side, "verdict": verdict,
                                 "subject": git(root, "log", "-1", "--format=%s", sha).strip()})  # fmt: skip
    out: dict[str, Any] = {"rule": __doc__.split("The rule:", 1)[1].split("Run:", 1)[0].strip(),
                           "judged": opts.result, "samples": {}, "verdicts": verdicts}  # fmt: skip
    for name, s in samples.items():
        c = s["counts"]
        aside = c.get("drift", 0) + c.get("beforeBirth", 0)
        right = c.get("judgeMissed", 0)
        figures = {
            "strict": (s["hit"], s["got"], s["want"]),
            "setAside": (s["hit"], s["got"], s["want"] - aside),
            "judged": (s["hit"] + right, s["got"], s["want"] - aside + right),
        }
        out["samples"][name] = {"counts": c, **{k: {"precision": round(h / max(1, g), 4), "recall": round(h / max(1, w), 4)}
                                                for k, (h, g, w) in figures.items()}}  # fmt: skip
        print(name, json.dumps(out["samples"][name]))
    print("wrote", write_result(opts.out, out))


if __name__ == "__main__":
    main()
