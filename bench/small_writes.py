"""What a small graph write costs in Kuzu 0.11.3, and where the op-sequence fuzz's time goes.

    .venv/bin/python bench/small_writes.py [--iterations 24]  -> bench/results/small_writes.json

A store with the daemon's schema on a temporary directory (its results file was measured when the schema still
had full-text indexes), four repositories of
6 files / 60 symbols / 60 calls each. Each iteration replaces one repository's code the way a cold write does
(delete its symbols and files, then files, symbols, HAS_FILE, CONTAINS and POSSIBLY_CALLS rows), one table at
a time, each followed by a CHECKPOINT, so each step's own cost and the checkpoint it leaves are apart:
- `copy`: each step as the `COPY ... FROM (UNWIND ...)` the graph writer uses (a COPY into a non-empty table
  checkpoints first, inside the statement);
- `create`: the same rows as `UNWIND ... CREATE` statements (no checkpoint until asked).
Then `fact`: one Fact inserted (FTS-indexed then), then CHECKPOINT (what every remember/handoff/procedure leaves for
the next checkpoint). Milliseconds per step: (statement, checkpoint after it), medians over the iterations.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import write_result  # noqa: E402
from nexusd.store import Conn, Store  # noqa: E402
from nexusd.sync.graphwrite import FILE_COLS, SYMBOL_COLS  # noqa: E402


def _rows(r: int, v: int) -> tuple[list[tuple[Any, ...]], ...]:
    files = [(f"r{r}:f{i}", f"r{r}", f"pkg/m{i}.py", "h", "python", "src", 30, 900, 1, "") for i in range(6)]
    syms = [(f"r{r}:s{i}", f"r{r}", f"pkg/m{i % 6}.py", "k", f"func_{i}", f"m.func_{i}", "function", "def f(a, b)",
             1, 5, "doc", "func f", "ch", True, "", 0) for i in range(60)]  # fmt: skip
    top = [(f"r{r}:f{i % 6}", f"r{r}:s{i}", i) for i in range(60)]
    calls = [(f"r{r}:s{i}", f"r{r}:s{(i * 7 + v) % 60}", 3, "direct", 0.9) for i in range(60)]
    has = [(f"r{r}", f[0]) for f in files]
    return files, syms, top, calls, has


def _create(c: Conn, table: str, cols: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    names = [f"c{i}" for i in range(len(cols))]
    props = ", ".join(f"{col}: r.{n}" for col, n in zip(cols, names, strict=True))
    c.execute(f"UNWIND $rows AS r CREATE (:{table} {{{props}}})", {"rows": [dict(zip(names, x, strict=True)) for x in rows]})


def _create_rel(c: Conn, table: str, a: str, b: str, rows: list[tuple[Any, ...]], props: tuple[str, ...] = ()) -> None:
    names = [f"c{i}" for i in range(len(rows[0]))]
    p = ", ".join(f"{col}: r.{n}" for col, n in zip(props, names[2:], strict=True))
    c.execute(f"UNWIND $rows AS r MATCH (a:{a} {{id: r.c0}}), (b:{b} {{id: r.c1}}) CREATE (a)-[:{table} {{{p}}}]->(b)",
              {"rows": [dict(zip(names, x, strict=True)) for x in rows]})  # fmt: skip


def run(mode: str, iterations: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="nx-small-") as tmp:
        store = Store(Path(tmp) / "g.kuzu", buffer_pool_mb=64)
        store.ensure_schema()
        c = store.connect()
        for r in range(4):
            c.execute("CREATE (:Repository {id: $r})", {"r": f"r{r}"})
        c.execute("CHECKPOINT")
        times: dict[str, list[tuple[float, float]]] = {}

        def step(name: str, fn: Callable[..., Any], *args: Any) -> None:
            t0 = time.perf_counter()
            fn(*args)
            t1 = time.perf_counter()
            c.execute("CHECKPOINT")
            times.setdefault(name, []).append(((t1 - t0) * 1000, (time.perf_counter() - t1) * 1000))

        for it in range(iterations):
            r = it % 4
            files, syms, top, calls, has = _rows(r, it)
            if mode == "fact":
                step("fact", c.execute, "CREATE (:Fact {id: $id, searchText: $t})",
                     {"id": f"f{it}", "t": f"fact {it % 50} about things"})  # fmt: skip
                continue
            step("delete symbols", c.execute, "MATCH (s:Symbol) WHERE s.repoId = $r DETACH DELETE s", {"r": f"r{r}"})
            step("delete files", c.execute, "MATCH (f:File) WHERE f.repoId = $r DETACH DELETE f", {"r": f"r{r}"})
            if mode == "copy":
                step("File", c.copy_nodes, "File", FILE_COLS, files)
                step("Symbol", c.copy_nodes, "Symbol", SYMBOL_COLS, syms)
                step("HAS_FILE", c.copy_rels, "HAS_FILE", "Repository", "File", has)
                step("CONTAINS", c.copy_rels, "CONTAINS", "File", "Symbol", top)
                step("POSSIBLY_CALLS", c.copy_rels, "POSSIBLY_CALLS", "Symbol", "Symbol", calls)
            else:
                step("File", _create, c, "File", FILE_COLS, files)
                step("Symbol", _create, c, "Symbol", SYMBOL_COLS, syms)
                step("HAS_FILE", _create_rel, c, "HAS_FILE", "Repository", "File", has)
                step("CONTAINS", _create_rel, c, "CONTAINS", "File", "Symbol", top, ("ordinal",))
                step("POSSIBLY_CALLS", _create_rel, c, "POSSIBLY_CALLS", "Symbol", "Symbol", calls,
                     ("line", "resolution", "confidence"))  # fmt: skip
        store.close()
    out = {name: {"statement_ms": round(statistics.median(t[0] for t in v), 1),
                  "checkpoint_ms": round(statistics.median(t[1] for t in v), 1)} for name, v in times.items()}  # fmt: skip
    total = sum(v["statement_ms"] + v["checkpoint_ms"] for v in out.values())
    return {"steps": out, "total_ms": round(total, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=24)
    opts = ap.parse_args()
    result = {mode: run(mode, opts.iterations) for mode in ("copy", "create", "fact")}
    for mode, r in result.items():
        print(mode, r)
    print(f"wrote {write_result('small_writes', {'iterations': opts.iterations, **result})}")


if __name__ == "__main__":
    main()
