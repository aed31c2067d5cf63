"""Token benchmark: the same three tasks with the NEXUS MCP tools and with only filesystem tools.

Both arms are driven by scripted stub models, so the numbers compare the work the *tools* require, not the
luck of a model:
- NEXUS arm: the agent's stub provider through `nexus mcp` (the real bridge, a real daemon):
  task 1 locate -> impact (depth 1), task 2 locate -> context (depth 1, budget 4000) and, for what context
  had to leave out, impact (depth 1) for the remaining callers and neighbors (calls, out) for the remaining
  callees, task 3 recall.
- Filesystem arm: `grep` (every matching line, like `grep -rn`) and `read` (a whole file), with reads capped at
  FILE_CAP = 25 files per task. Task 1: grep the name, read up to 25 matching files, report the function around
  each match. Task 2: grep the definition, read its file, then as task 1 for its callers. Task 3: grep the symbol
  and read up to 25 files looking for the earlier session's conclusion (a filesystem-only agent has no memory
  outside the files, so it cannot find it).

Measured per task and arm: tokens read = characters of tool output the model reads / 4 (stated, no tokenizer),
tool calls, and answer completeness against ground truth computed independently of the graph:
- task 1: the direct callers of the target, from a full `ast` walk of EVERY .py file (no cap): each function or
  method whose body (not its decorators or defaults) calls `NAME(...)` or `x.NAME(...)`; the target is the function defined exactly once in the
  corpus with the most distinct calling files (a function with many callers). Module-level calls are not callers.
  An answer covers a caller when a line of it names both the caller's file and its function name.
- task 2: the target's container class (if a method), the module-level corpus functions its body calls by bare
  name, and its direct callers.
- task 3: the exact text of the fact an earlier session stored about the target (1 if found, else 0).
Corpora: the .py files of this repository (without tests/fixtures) and of the Python standard library
(without site-packages), copied to a temp dir. Writes bench/results/token_bench.json and .svg.

    python bench/token_bench.py [--corpus repo|stdlib|all]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import sysconfig
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.harness import RESULTS, BenchDaemon  # noqa: E402

FILE_CAP = 25
SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules", "build", "site-packages", "fixtures", ".mypy_cache",
             ".ruff_cache"}
CORPORA = {"repo": HERE.parent, "stdlib": Path(sysconfig.get_paths()["stdlib"])}


# -- ground truth (ast, every file, no cap) ---------------------------------------------------------------


def py_files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        out += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py")]
    return out


class Truth:
    def __init__(self, root: Path):
        self.root = root
        self.defs: dict[str, list[tuple[str, str, str | None]]] = defaultdict(list)  # name -> (path, qual, class)
        self.callers: dict[str, set[tuple[str, str]]] = defaultdict(set)  # name -> {(path, function name)}
        self.callees: dict[tuple[str, str], set[str]] = defaultdict(set)  # (path, qual) -> called names
        for path in py_files(root):
            rel = path.relative_to(root).as_posix()
            try:
                tree = ast.parse(path.read_bytes())
            except (SyntaxError, ValueError):
                continue
            self._walk(tree, rel, [], None)

    def _walk(self, node: ast.AST, rel: str, scope: list[str], cls: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                self._walk(child, rel, [*scope, child.name], child.name)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = ".".join([*scope, child.name])
                self.defs[child.name].append((rel, qual, cls))
                # The body only: a decorator or a default value runs where the function is defined, not in it.
                body = [n for stmt in child.body for n in ast.walk(stmt)]
                for sub in body:
                    if isinstance(sub, ast.Call):
                        name = sub.func.id if isinstance(sub.func, ast.Name) else (
                            sub.func.attr if isinstance(sub.func, ast.Attribute) else None)
                        if name:
                            self.callers[name].add((rel, child.name))
                        if isinstance(sub.func, ast.Name):  # callees: bare calls only, no attribute guessing
                            self.callees[(rel, qual)].add(sub.func.id)
                self._walk(child, rel, [*scope, child.name], None)
            else:
                self._walk(child, rel, scope, cls)

    def pick_target(self) -> str:
        """The module-level function defined exactly once with the most distinct calling files (ties: name order).

        Only names no class in the corpus or builtin type defines as a method, so that `x.name(...)` calls are
        calls of this function and the name-based truth stays exact.
        """
        import builtins

        builtin = {m for t in (list, dict, set, str, bytes, int, float, tuple, object, type) for m in dir(t)}
        builtin |= set(dir(builtins))  # a local `def sorted` is not what `sorted(...)` calls elsewhere
        best = max(
            (n for n, d in self.defs.items()
             if len(d) == 1 and d[0][2] is None and "." not in d[0][1] and not n.startswith("__")
             and n not in builtin and len(n) >= 5),
            key=lambda n: (len({p for p, _ in self.callers.get(n, ())}), len(self.callers.get(n, ())), n),
        )
        return best

    def neighbourhood(self, name: str) -> set[str]:
        path, qual, cls = self.defs[name][0]
        items = {f"caller:{p}:{f}" for p, f in self.callers[name] if f != name or p != path}
        items |= {f"callee:{c}" for c in self.callees[(path, qual)]
                  if c != name and any(d[2] is None and "." not in d[1] for d in self.defs.get(c, ()))}
        if cls:
            items.add(f"container:{cls}")
        return items


def covers(answer: str, path: str, func: str) -> bool:
    return any(path in line and re.search(rf"\b{re.escape(func)}\b", line) for line in answer.splitlines())


def covered_items(answer: str, items: set[str]) -> int:
    n = 0
    for item in items:
        kind, _, rest = item.partition(":")
        if kind == "caller":
            path, _, func = rest.rpartition(":")
            n += covers(answer, path, func)
        else:
            n += bool(re.search(rf"\b{re.escape(rest)}\b", answer))
    return n


# -- the filesystem arm -----------------------------------------------------------------------------------


class Fs:
    """grep and read over the corpus, counting what the model would read."""

    def __init__(self, root: Path):
        self.root = root
        self.files = [p.relative_to(root).as_posix() for p in py_files(root)]
        self.chars = 0
        self.calls = 0
        self.read_files: dict[str, str] = {}

    def grep(self, pattern: str) -> list[tuple[str, int, str]]:
        self.calls += 1
        rx = re.compile(pattern)
        hits = []
        for rel in self.files:
            try:
                text = (self.root / rel).read_text(errors="replace")
            except OSError:
                continue
            for i, line in enumerate(text.splitlines(), 1):
                if rx.search(line):
                    hits.append((rel, i, line))
        self.chars += sum(len(f"{p}:{i}:{line}\n") for p, i, line in hits)
        return hits

    def read(self, rel: str) -> str:
        if rel in self.read_files:
            return self.read_files[rel]
        if len(self.read_files) >= FILE_CAP:
            raise RuntimeError("file cap reached")
        self.calls += 1
        text = (self.root / rel).read_text(errors="replace")
        self.chars += len(text)
        self.read_files[rel] = text
        return text

    @staticmethod
    def enclosing(text: str, line: int) -> str | None:
        lines = text.splitlines()
        indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
        for j in range(line - 2, -1, -1):
            m = re.match(r"(\s*)(?:async\s+)?def\s+(\w+)", lines[j])
            if m and len(m.group(1)) < indent:
                return m.group(2)
        return None

    def callers(self, name: str) -> list[str]:
        """grep `name(`, read the matching files (most matches first, at most the cap), name each enclosing def."""
        hits = self.grep(rf"\b{re.escape(name)}\s*\(")
        per_file: dict[str, list[int]] = defaultdict(list)
        for rel, i, line in hits:
            if not re.match(rf"\s*(async\s+)?def\s+{re.escape(name)}\b", line):
                per_file[rel].append(i)
        answer = []
        for rel in sorted(per_file, key=lambda r: (-len(per_file[r]), r)):
            if len(self.read_files) >= FILE_CAP:
                answer.append(f"(not read: {rel}, file cap {FILE_CAP})")
                continue
            text = self.read(rel)
            for i in per_file[rel]:
                func = self.enclosing(text, i)
                if func:
                    answer.append(f"{rel}:{i} {func}")
        return answer


def fs_task(root: Path, task: int, name: str, fact: str) -> dict[str, Any]:
    fs = Fs(root)
    lines: list[str] = []
    if task == 1:
        lines = fs.callers(name)
    elif task == 2:
        hits = fs.grep(rf"^\s*(async\s+)?def\s+{re.escape(name)}\b|^\s*class\s+\w+")
        defs = [(p, i) for p, i, line in hits if re.search(rf"def\s+{re.escape(name)}\b", line)]
        if defs:
            path, line = defs[0]
            text = fs.read(path)
            lines.append(f"defined at {path}:{line}")
            body = text.splitlines()[line - 1:]
            lines += [f"body: {b}" for b in body[:80]]  # the model sees the body: callees and the container
            indented = text.splitlines()[line - 1][:1].isspace()
            classes = [lx.strip() for p, i, lx in hits if p == path and i < line and lx.lstrip().startswith("class ")]
            if indented and classes:  # a method: the nearest class above it is its container
                lines.append(f"container: {classes[-1]}")
        lines += fs.callers(name)
    else:
        hits = fs.grep(rf"\b{re.escape(name)}\b")
        for rel in sorted({p for p, _, _ in hits})[:FILE_CAP]:
            if fact in fs.read(rel):
                lines.append(fact)
    return {"answer": "\n".join(lines), "tokens": fs.chars // 4, "toolCalls": fs.calls, "filesRead": len(fs.read_files)}


# -- the NEXUS arm ----------------------------------------------------------------------------------------


def nexus_task(root: Path, env: dict[str, str], task: int, name: str) -> dict[str, Any]:
    import anyio
    from nexus_client.agent.loop import run_with_mcp
    from nexus_client.agent.providers import StubProvider

    plan = {1: "impact_only", 2: "neighbourhood", 3: "recall"}[task]
    provider = StubProvider(name, plan=plan, depth=1)

    async def main() -> Any:
        return await run_with_mcp(provider, f"task {task}: {name}", str(root), {}, env=env, errlog=open(os.devnull, "w"))

    result = anyio.run(main)
    texts = [r["text"] for e in result.transcript if e["role"] == "tool" for r in e["results"]]
    return {
        "answer": "\n".join(texts),
        "tokens": sum(t["chars"] for t in result.trace) // 4,
        "toolCalls": len(result.trace),
        "calls": [t["name"] for t in result.trace],
        "errors": [t["name"] for t in result.trace if t["isError"]],
    }


# -- running ----------------------------------------------------------------------------------------------


def python_copy(source: Path) -> Path:
    """The corpus's .py files (outside SKIP_DIRS), copied to a temp dir: both arms and the truth see exactly
    these files, and a half-built parser for another language in the source tree cannot skew the numbers."""
    import shutil
    import tempfile

    dest = Path(tempfile.mkdtemp(prefix="nx-tokbench-")) / source.name
    for path in py_files(source):
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return dest


def bench_corpus(label: str, source: Path) -> dict[str, Any]:
    import shutil

    root = python_copy(source)
    try:
        out = _bench(root)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    out["source"] = str(source)
    return out


def _bench(root: Path) -> dict[str, Any]:
    t0 = time.monotonic()
    truth = Truth(root)
    target = truth.pick_target()
    true_callers = truth.callers[target]
    items = truth.neighbourhood(target)
    fact = f"Earlier session: changing {target} needs every caller reviewed; it has {len(true_callers)} direct callers."
    out: dict[str, Any] = {
        "files": len(py_files(root)),
        "target": target,
        "definedAt": truth.defs[target][0][:2],
        "trueCallers": len(true_callers),
        "trueCallerFiles": len({p for p, _ in true_callers}),
        "neighbourhoodItems": len(items),
        "truthSeconds": round(time.monotonic() - t0, 2),
    }
    with BenchDaemon() as daemon:
        from nexus_client.connection import connect

        client = connect(daemon.dirs, timeout=600)
        t1 = time.monotonic()
        client.request("index", {"repo": str(root)}, timeout=600)
        out["indexSeconds"] = round(time.monotonic() - t1, 2)
        catalogue = {e["name"] for e in client.catalogue}
        if "remember" in catalogue:  # the earlier session whose conclusion task 3 recalls
            client.request("remember", {"repo": str(root), "text": fact, "about": target})
        client.close()
        env = {"NEXUS_HOME": str(daemon.home)}
        tasks = {}
        for task in (1, 2, 3):
            needed = {1: ("locate", "impact"), 2: ("locate", "context"), 3: ("recall",)}[task]
            nexus: dict[str, Any] = (nexus_task(root, env, task, target) if all(n in catalogue for n in needed)
                                     else {"unavailable": f"daemon lacks {[n for n in needed if n not in catalogue]}"})
            fs = fs_task(root, task, target, fact)
            for arm in (nexus, fs):
                if "answer" not in arm:
                    continue
                answer = arm.pop("answer")
                if task == 1:
                    arm["completeness"] = round(sum(covers(answer, p, f) for p, f in true_callers) / max(1, len(true_callers)), 3)
                elif task == 2:
                    arm["completeness"] = round(covered_items(answer, items) / max(1, len(items)), 3)
                else:
                    arm["completeness"] = 1.0 if fact in answer else 0.0
            entry: dict[str, Any] = {"nexus": nexus, "filesystem": fs}
            if "tokens" in nexus and nexus["tokens"]:
                entry["tokenRatio"] = round(fs["tokens"] / nexus["tokens"], 1)
            tasks[str(task)] = entry
        out["tasks"] = tasks
    return out


def svg_chart(results: dict[str, Any]) -> str:
    """Grouped bars (log scale) of tokens read per task, NEXUS vs filesystem, per corpus; completeness labelled."""
    import math

    bars = []
    for corpus, r in results["corpora"].items():
        for task, t in r["tasks"].items():
            for arm in ("nexus", "filesystem"):
                a = t[arm]
                if "tokens" in a:
                    bars.append((f"{corpus} t{task}", arm, a["tokens"], a.get("completeness")))
    width, height, left, bottom = 120 + 70 * len(bars), 360, 70, 300
    top = max((b[2] for b in bars), default=1)
    scale = lambda v: (bottom - 30) * math.log10(max(v, 1)) / max(1.0, math.log10(max(top, 10)))  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="16" font-size="13">Tokens read (chars/4, log scale); label = completeness. '
           f'Filesystem arm reads at most {FILE_CAP} files.</text>',
           f'<line x1="{left}" y1="{bottom}" x2="{width - 20}" y2="{bottom}" stroke="black"/>']
    for i, (label, arm, tokens, comp) in enumerate(bars):
        x = left + 10 + i * 70
        h = scale(tokens)
        color = "#2b6cb0" if arm == "nexus" else "#c05621"
        out.append(f'<rect x="{x}" y="{bottom - h:.1f}" width="40" height="{h:.1f}" fill="{color}"/>')
        out.append(f'<text x="{x}" y="{bottom - h - 16:.1f}">{tokens}</text>')
        out.append(f'<text x="{x}" y="{bottom - h - 4:.1f}">c={comp}</text>')
        out.append(f'<text x="{x}" y="{bottom + 14}">{label}</text>')
        out.append(f'<text x="{x}" y="{bottom + 28}">{"nexus" if arm == "nexus" else "fs"}</text>')
    out.append(f'<rect x="{width - 170}" y="30" width="12" height="12" fill="#2b6cb0"/><text x="{width - 152}" y="40">NEXUS MCP tools</text>')
    out.append(f'<rect x="{width - 170}" y="48" width="12" height="12" fill="#c05621"/><text x="{width - 152}" y="58">grep + read</text>')
    out.append("</svg>")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", choices=["repo", "stdlib", "all"], default="all")
    ns = parser.parse_args()
    names = list(CORPORA) if ns.corpus == "all" else [ns.corpus]
    results: dict[str, Any] = {
        "method": {
            "tokens": "characters of tool output the model reads / 4",
            "fileCap": FILE_CAP,
            "model": "scripted stub in both arms",
            "truth": "ast walk of every .py file, no cap; see the module docstring",
        },
        "corpora": {},
    }
    previous = RESULTS / "token_bench.json"
    if ns.corpus != "all" and previous.exists():  # keep the other corpus's last numbers
        results["corpora"] = json.loads(previous.read_text()).get("corpora", {})
    for name in names:
        results["corpora"][name] = bench_corpus(name, CORPORA[name])
        print(json.dumps({name: results["corpora"][name]}, indent=1))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "token_bench.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "token_bench.svg").write_text(svg_chart(results) + "\n")


if __name__ == "__main__":
    main()
