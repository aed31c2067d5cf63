"""Bare-Kuzu probe (no daemon): what moving one file's call edges costs on a graph the kernel's size, by the
shape of the statement. -> bench/results/kuzu_moves.json.

    python bench/kuzu_moves.py [--symbols 1800000] [--repeats 7] [--out kuzu_moves]

A fresh database gets `--symbols` symbols in files of 23 (File -CONTAINS-> Symbol), ~1.45 call edges per symbol
with random ends (bulk-loaded), and one file whose 23 symbols make 600 calls to random symbols. Each variant
adds 1 to the line of those edges (or of the file's symbols) in its own transaction, `--repeats` times,
alternating; min and median milliseconds. The small-batch write (`graphwrite.write_diff`) moves a file's calls
with the statement that names the callers only (`_file_moves`): naming the callees too, as a list to match,
makes Kuzu 0.11.3 join against the whole Symbol table.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import kuzu

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import write_result  # noqa: E402

PATH = "MATCH (f:File {id: $f})-[:CONTAINS*1..30]->(a:Symbol)-[e:POSSIBLY_CALLS]->"


def load(work: str, symbols: int) -> tuple[kuzu.Database, kuzu.Connection]:
    files = symbols // 23
    rnd = random.Random(1)
    db = kuzu.Database(os.path.join(work, "g.kuzu"), buffer_pool_size=384 << 20)
    c = kuzu.Connection(db)
    c.execute("CREATE NODE TABLE File(id STRING PRIMARY KEY, path STRING)")
    c.execute("CREATE NODE TABLE Symbol(id STRING PRIMARY KEY, path STRING, name STRING, startLine INT64, endLine INT64)")
    c.execute("CREATE REL TABLE CONTAINS(FROM File TO Symbol, FROM Symbol TO Symbol, ordinal INT64)")
    c.execute("CREATE REL TABLE POSSIBLY_CALLS(FROM Symbol TO Symbol, line INT64, resolution STRING, confidence DOUBLE)")
    tables: dict[str, Any] = {
        "File": ((f"f{i}", f"dir/f{i}.c") for i in range(files)),
        "Symbol": ((f"s{i}", f"dir/f{i % files}.c", f"fn_{i}", i % 1000, i % 1000 + 5) for i in range(symbols)),
        "CONTAINS": ((f"f{i % files}", f"s{i}", i) for i in range(symbols)),
        "POSSIBLY_CALLS": ((f"s{rnd.randrange(symbols)}", f"s{rnd.randrange(symbols)}", rnd.randrange(5000), "direct", 0.9)
                           for _ in range(int(symbols * 1.45))),
    }  # fmt: skip
    for table, rows in tables.items():
        path = os.path.join(work, f"{table}.csv")
        with open(path, "w", newline="") as fh:
            csv.writer(fh).writerows(rows)
        extra = " (from='File', to='Symbol')" if table == "CONTAINS" else ""
        c.execute(f"COPY {table} FROM '{path}'{extra}")
    c.execute("CHECKPOINT")
    return db, c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--symbols", type=int, default=1_800_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default="kuzu_moves")
    opts = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kuzu-moves-")
    try:
        t0 = time.perf_counter()
        db, c = load(work, opts.symbols)
        loaded = time.perf_counter() - t0
        files = opts.symbols // 23
        rnd = random.Random(2)
        mine = [f"s{7 + k * files}" for k in range(23)]  # file f7's symbols
        edges = list(dict.fromkeys((rnd.choice(mine), f"s{rnd.randrange(opts.symbols)}") for _ in range(600)))
        for a, b in edges:
            c.execute("MATCH (a:Symbol {id: $a}), (b:Symbol {id: $b}) "
                      "CREATE (a)-[:POSSIBLY_CALLS {line: 1, resolution: 'direct', confidence: 0.9}]->(b)", {"a": a, "b": b})  # fmt: skip
        c.execute("CHECKPOINT")
        srcs, dsts = sorted({a for a, _ in edges}), sorted({b for _, b in edges})
        one = [(a, b) for a, b in edges if a == srcs[0]]
        variants: dict[str, list[tuple[str, dict[str, Any]]]] = {
            "file's callers and callees named": [(f"{PATH}(b:Symbol) WHERE a.id IN $srcs AND b.id IN $dsts "
                                                  "SET e.line = e.line + 1", {"f": "f7", "srcs": srcs, "dsts": dsts})],
            "file's callers named (the write's)": [(f"{PATH}() WHERE a.id IN $srcs SET e.line = e.line + 1",
                                                    {"f": "f7", "srcs": srcs})],
            "one caller, its callees named": [("MATCH (a:Symbol {id: $a})-[e:POSSIBLY_CALLS]->(b:Symbol) WHERE b.id IN "
                                               "$dsts SET e.line = e.line + 1", {"a": srcs[0], "dsts": [b for _, b in one]})],
            "one caller, an edge per statement": [("MATCH (a:Symbol {id: $a})-[e:POSSIBLY_CALLS]->(b:Symbol {id: $b}) "
                                                   "SET e.line = e.line + 1", {"a": a, "b": b}) for a, b in one],
            "file's symbols named": [("MATCH (f:File {id: $f})-[:CONTAINS*1..30]->(s:Symbol) WHERE s.id IN $ids "
                                      "SET s.startLine = s.startLine + 1", {"f": "f7", "ids": mine})],
        }  # fmt: skip
        ms: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(opts.repeats):
            for name, statements in variants.items():
                c.execute("BEGIN TRANSACTION")
                t0 = time.perf_counter()
                for query, params in statements:
                    c.execute(query, params)
                ms[name].append((time.perf_counter() - t0) * 1000)
                c.execute("COMMIT")
            c.execute("CHECKPOINT")
        rows = []
        for name, values in ms.items():
            rows.append({"variant": name, "statements": len(variants[name]), "minMs": round(min(values), 1),
                         "medianMs": round(statistics.median(values), 1)})  # fmt: skip
            print(f"{name:38} min {min(values):8.1f} ms  median {statistics.median(values):8.1f} ms", flush=True)
        c.close()
        db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = {"symbols": opts.symbols, "callers": len(srcs), "callees": len(dsts), "edges": len(edges),
           "oneCallerEdges": len(one), "loadedS": round(loaded, 1), "kuzu": kuzu.__version__, "rows": rows}  # fmt: skip
    print(write_result(opts.out, out))


if __name__ == "__main__":
    main()
