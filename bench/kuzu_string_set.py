"""Bare-Kuzu probe (no daemon): what one `SET` of a string costs the checkpoints after it, against a fixed-width
UUID column. -> bench/results/kuzu_string_set.json.

    python bench/kuzu_string_set.py [--files 50000] [--symbols 1500000] [--cycles 20] [--out kuzu_string_set]

For each column type (STRING, then UUID) a fresh database gets a File table of `--files` rows with a 128-bit
`hash` (32 hex digits as STRING, or a UUID: the daemon's schema before and since code schema 5) beside a Symbol
table of `--symbols` rows, bulk-loaded and checkpointed. Then `--cycles` times: one file's hash is SET to a new
value in its own transaction, then CHECKPOINT. It prints and records each checkpoint's milliseconds and the
file's size after it. Kuzu 0.11.3 writes a string column's node-group chunk again at the checkpoint after a
SET, with every value the chunk ever held, so the STRING row's checkpoints grow with every cycle; the UUID
column is updated in place. The last rows do the same to a table of five rows, `--small-cycles` times, and record
its chunk's pages (`storage_info`): the dead values are kept there too, so even a tiny table's checkpoint grows
with its history of SETs. Three shapes: `Repository.lastBuild` (a 500-character summary, which every build
set), the memory journal's position as the Meta string `seq:offset` every memory write set, and that position as
the two integers of a `Position` row (`--small-only`: these rows alone).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
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


def _digest(i: int) -> str:
    return hashlib.blake2b(str(i).encode(), digest_size=16).hexdigest()


def run(kind: str, files: int, symbols: int, cycles: int, work: Path) -> dict[str, Any]:
    db_dir = work / kind
    db_dir.mkdir()
    path = db_dir / "graph.kuzu"
    db = kuzu.Database(str(path))
    conn = kuzu.Connection(db)
    conn.execute(f"CREATE NODE TABLE File(id STRING PRIMARY KEY, path STRING, hash {kind}, size INT64)")
    conn.execute(
        "CREATE NODE TABLE Symbol(id STRING PRIMARY KEY, path STRING, name STRING, qualifiedName STRING, "
        "signature STRING, startLine INT64, endLine INT64)"
    )
    with open(work / "f.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        for i in range(files):
            w.writerow([f"f{i}", f"dir/f{i}.c", _digest(i), 1000])
    with open(work / "s.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        for i in range(symbols):
            f = i % files
            w.writerow([f"s{i}", f"dir/f{f}.c", f"name_{i}", f"dir.f{f}.name_{i}", f"int name_{i}(int a)", i, i + 5])
    conn.execute(f"COPY File FROM '{work / 'f.csv'}' (header=false)")
    conn.execute(f"COPY Symbol FROM '{work / 's.csv'}' (header=false)")
    conn.execute("CHECKPOINT")
    start_mb = path.stat().st_size / 2**20
    ms, sizes = [], []
    set_hash = "MATCH (f:File {id: 'f7'}) SET f.hash = " + ("UUID($h)" if kind == "UUID" else "$h")
    for k in range(cycles):
        conn.execute(set_hash, {"h": _digest(files + k)})
        t0 = time.perf_counter()
        conn.execute("CHECKPOINT")
        ms.append(round((time.perf_counter() - t0) * 1000, 1))
        sizes.append(round(path.stat().st_size / 2**20, 1))
    conn.close()
    db.close()
    shutil.rmtree(db_dir, ignore_errors=True)
    return {"column": kind, "startMB": round(start_mb, 1), "checkpointMs": ms, "fileMB": sizes,
            "firstFiveMedianMs": statistics.median(ms[:5]), "lastFiveMedianMs": statistics.median(ms[-5:]),
            "grewMB": round(sizes[-1] - start_mb, 1)}  # fmt: skip


SMALL_SHAPES = {
    # Repository.lastBuild: a 500-character summary in a table of five rows
    "summary": ("lastBuild STRING", "SET r.lastBuild = $v", lambda k: {"v": f"{k:08d}" + "y" * 492}),
    # the memory journal's position as a Meta string ("seq:offset"), as it was until schema `Position`
    "position string": ("value STRING", "SET r.value = $v", lambda k: {"v": f"{k}:{k * 300}"}),
    # ... and as the two integers of a `Position` row
    "position integers": ("seq INT64, byteOffset INT64", "SET r.seq = $s, r.byteOffset = $o",
                          lambda k: {"s": k, "o": k * 300}),
}  # fmt: skip


def run_small(shape: str, cycles: int, work: Path) -> dict[str, Any]:
    """Five rows, one of them SET to a new value (`SMALL_SHAPES[shape]`) before each CHECKPOINT."""
    columns, set_clause, values = SMALL_SHAPES[shape]
    db_dir = work / "small"
    db_dir.mkdir()
    db = kuzu.Database(str(db_dir / "graph.kuzu"))
    conn = kuzu.Connection(db)
    conn.execute(f"CREATE NODE TABLE R(id STRING PRIMARY KEY, {columns})")
    for i in range(5):
        conn.execute(f"CREATE (r:R {{id: $i}}) {set_clause}", {"i": str(i), **values(0)})
    conn.execute("CHECKPOINT")
    samples = []
    for k in range(cycles):
        conn.execute(f"MATCH (r:R {{id: '1'}}) {set_clause}", values(k + 1))
        t0 = time.perf_counter()
        conn.execute("CHECKPOINT")
        ms = round((time.perf_counter() - t0) * 1000, 1)
        if k % (cycles // 10 or 1) == 0 or k == cycles - 1:
            pages = int(conn.execute("CALL storage_info('R') RETURN sum(num_pages)").get_all()[0][0])
            samples.append({"cycle": k, "checkpointMs": ms, "pages": pages})
    conn.close()
    db.close()
    shutil.rmtree(db_dir, ignore_errors=True)
    return {"column": f"{shape}, five rows", "samples": samples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--symbols", type=int, default=1_500_000)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--small-cycles", type=int, default=2000)
    ap.add_argument("--out", default="kuzu_string_set")
    ap.add_argument("--small-only", action="store_true", help="only the five-row tables")
    opts = ap.parse_args()
    rows = []
    smalls = []
    with tempfile.TemporaryDirectory(prefix="kuzu-string-set-") as tmp:
        for kind in () if opts.small_only else ("STRING", "UUID"):
            row = run(kind, opts.files, opts.symbols, opts.cycles, Path(tmp))
            print(f"{kind:6} checkpoint ms first five {row['firstFiveMedianMs']}, last five {row['lastFiveMedianMs']}; "
                  f"file +{row['grewMB']} MB  {row['checkpointMs']}", flush=True)  # fmt: skip
            rows.append(row)
        for shape in SMALL_SHAPES:
            smalls.append(run_small(shape, opts.small_cycles, Path(tmp)))
            print(f"five rows, {shape}: {smalls[-1]['samples']}", flush=True)
    out = {"files": opts.files, "symbols": opts.symbols, "cycles": opts.cycles, "kuzu": kuzu.__version__,
           "cpus": os.cpu_count(), "rows": rows, "small": smalls}  # fmt: skip
    print(write_result(opts.out, out))


if __name__ == "__main__":
    main()
