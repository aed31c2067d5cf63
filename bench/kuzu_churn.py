"""Bare-Kuzu churn probe (no daemon): does Kuzu itself keep anonymous memory per forget + index cycle, and in
which part? -> bench/results/kuzu_churn.json.

    python bench/kuzu_churn.py [--cycles 1500] [--warmup 200] [--files 6] [--repos 4]
                               [--parts code,history,memory] [--no-fts] [--no-idle-checkpoint] [--no-tx]
                               [--copy unwind|csv|create] [--reopen-every 0] [--reconnect-every 0]
                               [--buffer-pool-mb 384] [--matrix] [--out kuzu_churn.json]

One process opens a database with the daemon's schema (nexusd/schema.py: every table, and the full-text indexes
earlier schemas had, `OLD_FTS_INDEXES`, unless --no-fts), fills `--repos` repositories, then repeats the daemon's `repo.forget` +
`index` of one repository after another (round robin), the way the daemon's statements do it:

- checkpoint before the deleting transaction (`Store.checkpoint_before_delete`), then in one transaction DETACH
  DELETE of the repository's Symbol and File nodes (`graphwrite.delete_repo_code`) and of its history nodes and
  HistoryText search documents (`ingest.delete_repo_history`);
- in one transaction the cold build's COPY of File, Symbol, HAS_FILE, CONTAINS, IMPORTS, POSSIBLY_CALLS
  (`graphwrite.write_cold`; `COPY ... FROM (UNWIND $rows ...)` below 2,000 rows as the daemon, or --copy csv
  for the CSV path, or --copy create for plain CREATE statements), then the history ingest (Commit, Change and
  their HistoryText documents, which the HistoryText full-text index takes in);
- memory: a few `MERGE` Fact / Handoff writes (full-text indexed tables) and a `memory.forget` of some;
- CHECKPOINT at the end of the cycle (the daemon's idle checkpoint).

After every cycle it calls glibc `malloc_trim(0)` and reads `Anonymous` from /proc/self/smaps_rollup, so what is
left is memory something still holds (not freed heap glibc kept). It reports anonymous KB at the warm-up and at
the end and the least-squares slope (KB per cycle) after the warm-up; `--parts`, `--no-fts`, `--no-idle-checkpoint`, `--buffer-pool-mb`,
`--copy`, `--reopen-every` (close and reopen the Database every N cycles, as a compaction's swap does) switch
parts off or change them. `--matrix` runs a set of variants, each in its own child process, one after another.
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import write_result  # noqa: E402
from nexusd import schema  # noqa: E402

_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def anon_kb() -> tuple[int, int]:
    """(Anonymous, Rss) of this process in KB after handing glibc's free pages back (malloc_trim(0))."""
    _LIBC.malloc_trim(0)
    out = {}
    with open("/proc/self/smaps_rollup") as fh:
        for line in fh:
            parts = line.split()
            if parts and parts[0] in ("Anonymous:", "Rss:"):
                out[parts[0][:-1]] = int(parts[1])
    return out["Anonymous"], out["Rss"]


def slope(points: list[tuple[int, int]]) -> float | None:
    """Least-squares KB per cycle."""
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    return sum((p[0] - mx) * (p[1] - my) for p in points) / sxx if sxx else None


# The full-text indexes the daemon's schema had until `query` and recall searched in-daemon indexes only
# (nexusd/schema.py): the runs recorded with this bench made them, and --no-fts measured their cost.
OLD_FTS_INDEXES = {
    "Fact": ("fact_fts", ["searchText"]),
    "Procedure": ("procedure_fts", ["searchText"]),
    "Handoff": ("handoff_fts", ["searchText"]),
    "HistoryText": ("history_fts", ["searchText"]),
}

class Probe:
    def __init__(self, args: argparse.Namespace, path: Path):
        self.a = args
        self.path = path
        self.tmp = path.parent / "tmp"
        self.tmp.mkdir(exist_ok=True)
        self.parts = set(args.parts.split(","))
        self.db: Any = None
        self.conn: Any = None
        self.prepared: dict[str, Any] = {}
        self.serial = 0

    # -- connection ---------------------------------------------------------------------------------

    def open(self) -> None:
        import kuzu

        self.db = kuzu.Database(str(self.path), buffer_pool_size=self.a.buffer_pool_mb * 1024 * 1024,
                                max_num_threads=2, auto_checkpoint=False)  # fmt: skip  (as Store opens it)
        self.connect()
        if not self.a.no_fts:
            self.run("LOAD EXTENSION fts")

    def connect(self) -> None:
        import kuzu

        self.conn = kuzu.Connection(self.db)
        self.prepared = {}

    def close(self) -> None:
        self.prepared = {}
        if self.conn is not None:
            self.conn.close()
        if self.db is not None:
            self.db.close()
        self.conn = self.db = None

    def run(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        if params:  # one prepared statement per query text, as Conn.execute (Kuzu 0.11.3 leaks per text+params)
            stmt = self.prepared.get(query)
            if stmt is None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    stmt = self.prepared[query] = self.conn.prepare(query)
            result = self.conn.execute(stmt, params)
        else:
            result = self.conn.execute(query)
        rows = result.get_all() if result.has_next() else []
        result.close()
        return rows

    def schema(self) -> None:
        for ddl in schema.all_table_ddl():
            self.run(ddl)
        if not self.a.no_fts:
            for table, (index, props) in OLD_FTS_INDEXES.items():
                cols = ", ".join(f"'{p}'" for p in props)
                self.run(f"CALL CREATE_FTS_INDEX('{table}', '{index}', [{cols}], stemmer := 'porter')")
        self.run("CHECKPOINT")

    # -- rows (shaped like the op fuzz's repositories: `--files` modules of ~8 symbols) -------------

    def code_rows(self, r: int, version: int) -> dict[str, list[tuple[Any, ...]]]:
        rid = f"repo{r}"
        files, syms, has, top, nested, imports, calls = [], [], [], [], [], [], []
        for n in range(self.a.files):
            fid = f"{rid}:f:pkg/m{n:04d}.py"
            files.append((fid, rid, f"pkg/m{n:04d}.py", f"h{version}{n}", "python", "source", 40, 900, 0, ""))
            has.append((rid, fid))
            names = [f"func_{n}_{f}" for f in range(4 + version % 3)] + [f"Thing{n}V{version % 2}"]
            for i, name in enumerate(names):
                sid = f"{fid}:s:{name}"
                syms.append((sid, rid, f"pkg/m{n:04d}.py", f"{name}#0", name, f"pkg.m{n:04d}.{name}", "function",
                             f"def {name}(x, y=None)", i * 4 + 1, i * 4 + 3, f"v{version} doc of {name}",
                             f"{name} func {n}", f"c{version}", True, "", 0))  # fmt: skip
                top.append((fid, sid, i))
                calls.append((sid, f"{rid}:f:pkg/m{(n + 1) % self.a.files:04d}.py:s:func_{(n + 1) % self.a.files}_0",
                              i * 4 + 2, "import", 0.9))  # fmt: skip
            cls = f"{fid}:s:Thing{n}V{version % 2}"
            for j, meth in enumerate(("run", "stop")):
                mid = f"{cls}.{meth}"
                syms.append((mid, rid, f"pkg/m{n:04d}.py", f"Thing.{meth}#0", meth, f"Thing.{meth}", "method",
                             f"def {meth}(self)", 30 + j, 31 + j, "", meth, f"c{version}", True, "", 0))  # fmt: skip
                nested.append((cls, mid, j))
            for k in range(2):
                imports.append((fid, f"{rid}:f:pkg/m{(n + k + 1) % self.a.files:04d}.py", f"pkg.m{k}", 3 + k,
                                "module", 1.0))  # fmt: skip
        return {"File": files, "Symbol": syms, "HAS_FILE": has, "CONTAINS_top": top, "CONTAINS_nested": nested,
                "IMPORTS": imports, "POSSIBLY_CALLS": calls}  # fmt: skip

    def history_rows(self, r: int, version: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        rid = f"repo{r}"
        commits = [{"id": f"{rid}:c:{version}", "repoId": rid, "sha": f"{version:040d}", "message": f"initial {version}",
                    "author": "a", "time": 1.0e9 + version, "signal": 0.5, "isMerge": False,
                    "searchText": f"initial commit {version}", "kind": "other", "isRevert": False,
                    "isBreaking": False, "parents": [], "fileCount": self.a.files}]  # fmt: skip
        changes = [{"id": f"{rid}:ch:{version}:{n}", "repoId": rid, "sha": f"{version:040d}", "path": f"pkg/m{n:04d}.py",
                    "oldPath": "", "status": "A", "additions": 30, "deletions": 0,
                    "patch": f"+def func_{n}_0(x):\n+    return {version}\n" * 8, "time": 1.0e9, "symbolIds": [],
                    "hunks": "[]", "skipped": "", "truncated": False, "signal": 0.5,
                    "searchText": f"func_{n}_0 return {version} module {n}", "symbolNames": [f"func_{n}_0"],
                    "symbolRenames": []} for n in range(self.a.files)]  # fmt: skip
        docs = [{"id": row["id"], "kind": "commit" if i == 0 else "change", "repoId": rid, "userId": "",
                 "searchText": row["searchText"], "signal": 0.5, "at": 1.0e9, "parent": row["id"],
                 "shown": row["searchText"], "meta": "{}"} for i, row in enumerate(commits + changes)]  # fmt: skip
        return commits, changes, docs

    # -- statements ---------------------------------------------------------------------------------

    def copy(self, table: str, rows: list[tuple[Any, ...]] | list[dict[str, Any]], rel: tuple[str, str] | None = None,
             cols: list[str] | None = None) -> None:  # fmt: skip
        if not rows:
            return
        opts = f"(from='{rel[0]}', to='{rel[1]}')" if rel else ""
        if self.a.copy == "csv":
            fd, name = tempfile.mkstemp(suffix=".csv", dir=self.tmp)
            with os.fdopen(fd, "w", newline="") as fh:
                w = csv.writer(fh)
                for row in rows:
                    w.writerow(list(row.values()) if isinstance(row, dict) else row)
            extra = f", from='{rel[0]}', to='{rel[1]}'" if rel else ""
            self.run(f"COPY {table} FROM '{name}' (header=false, parallel=false, auto_detect=false, escape='\"'{extra})")
            os.unlink(name)
            return
        if isinstance(rows[0], dict):
            keys = list(rows[0])
            dicts = [dict(r) for r in rows]  # type: ignore[arg-type]
        else:
            keys = [f"c{i}" for i in range(len(rows[0]))]
            dicts = [dict(zip(keys, r, strict=True)) for r in rows]  # type: ignore[arg-type]
        if self.a.copy == "create" and rel is None:
            names = cols or keys
            sets = ", ".join(f"{c}: r.{k}" for c, k in zip(names, keys, strict=True))
            self.run(f"UNWIND $rows AS r CREATE (:{table} {{{sets}}})", {"rows": dicts})
            return
        if self.a.copy == "create":
            props = keys[2:]
            sets = ", ".join(f"{p}: r.{p}" for p in props)
            self.run(f"UNWIND $rows AS r MATCH (a:{rel[0]} {{id: r.c0}}), (b:{rel[1]} {{id: r.c1}}) "
                     f"CREATE (a)-[:{table} {{{sets}}}]->(b)", {"rows": dicts})  # fmt: skip
            return
        ret = ", ".join(f"r.{k}" for k in keys)
        self.run(f"COPY {table} FROM (UNWIND $rows AS r RETURN {ret}) {opts}", {"rows": dicts})

    def begin(self) -> None:
        if not self.a.no_tx:
            self.run("BEGIN TRANSACTION")

    def commit(self) -> None:
        if not self.a.no_tx:
            self.run("COMMIT")

    def checkpoint(self, idle: bool = False) -> None:
        """`idle`: the end-of-cycle checkpoint (--no-idle-checkpoint skips it); the one before a deleting
        transaction always runs (without it Kuzu 0.11.3 segfaults on this sequence: ARCHITECTURE.md, "Invariants")."""
        if not (idle and self.a.no_idle_checkpoint):
            self.run("CHECKPOINT")

    def forget(self, r: int) -> None:
        rid = f"repo{r}"
        self.checkpoint()  # (checkpoint_before_delete)
        self.begin()
        if "code" in self.parts:
            self.run("MATCH (s:Symbol) WHERE s.repoId = $r DETACH DELETE s", {"r": rid})
            self.run("MATCH (f:File) WHERE f.repoId = $r DETACH DELETE f", {"r": rid})
        if "history" in self.parts:
            for table in ("Commit", "Change", "ShellCommand", "DocSection", "ConversationTurn", "HistoryText",
                          "HistoryVector"):  # fmt: skip
                self.run(f"MATCH (n:{table}) WHERE n.repoId = $r DETACH DELETE n", {"r": rid})
        self.commit()

    def index(self, r: int, version: int) -> None:
        if "code" in self.parts:
            rows = self.code_rows(r, version)
            self.begin()
            self.copy("File", rows["File"])
            self.copy("Symbol", rows["Symbol"])
            self.copy("HAS_FILE", rows["HAS_FILE"], ("Repository", "File"))
            self.copy("CONTAINS", rows["CONTAINS_top"], ("File", "Symbol"))
            self.copy("CONTAINS", rows["CONTAINS_nested"], ("Symbol", "Symbol"))
            self.copy("IMPORTS", rows["IMPORTS"], ("File", "File"))
            self.copy("POSSIBLY_CALLS", [c for c in rows["POSSIBLY_CALLS"] if c[1] in {s[0] for s in rows["Symbol"]}],
                      ("Symbol", "Symbol"))  # fmt: skip
            self.commit()
        if "history" in self.parts:
            commits, changes, docs = self.history_rows(r, version)
            self.begin()
            self.copy("Commit", commits)
            self.copy("Change", changes)
            self.copy("HistoryText", docs)
            self.commit()

    def memory(self, r: int, cycle: int) -> None:
        if "memory" not in self.parts:
            return
        rid = f"repo{r}"
        for k in range(3):
            self.serial += 1
            self.run("MERGE (n:Fact {id: $id}) ON CREATE SET n.userId = 'u', n.repoId = $r, n.text = $t, "
                     "n.searchText = $t, n.createdAt = 1.0, n.usedCount = 0, n.status = 'active'",
                     {"id": f"fact{self.serial}", "r": rid, "t": f"fact {cycle % 50} about things {k}"})  # fmt: skip
        self.run("MERGE (n:Handoff {id: $id}) ON CREATE SET n.userId = 'u', n.repoId = $r, n.done = $t, "
                 "n.searchText = $t, n.createdAt = 1.0, n.usedCount = 0",
                 {"id": f"handoff{self.serial}", "r": rid, "t": f"did {cycle % 20} more"})  # fmt: skip
        self.run("CALL QUERY_FTS_INDEX('Fact', 'fact_fts', $q, top := 10) RETURN node.id", {"q": "fact things"}) \
            if not self.a.no_fts else None  # fmt: skip
        if cycle % 3 == 0:  # memory.forget --all of the repository now and then
            self.checkpoint()
            self.begin()
            self.run("MATCH (n:Fact) WHERE n.repoId = $r DETACH DELETE n", {"r": rid})
            self.run("MATCH (n:Handoff) WHERE n.repoId = $r DETACH DELETE n", {"r": rid})
            self.commit()

    # -- the run ------------------------------------------------------------------------------------

    def micro(self, cycle: int) -> None:
        """One statement pattern alone (--micro), on the daemon's schema or on one table (--one-table)."""
        kind = self.a.micro
        nid = f"m{cycle}"
        if "create" in kind:
            self.run("CREATE (:Fact {id: $id, repoId: 'r', text: 't', searchText: $t})", {"id": nid, "t": f"fact {cycle}"})
        if "delete" in kind:
            self.run("MATCH (n:Fact {id: $id}) DELETE n", {"id": nid})
        if "read" in kind:
            self.run("MATCH (n:Fact) RETURN count(*)")
        if "checkpoint" in kind:
            self.run("CHECKPOINT")

    def main(self) -> dict[str, Any]:
        self.open()
        if self.a.one_table:
            self.run("CREATE NODE TABLE Fact(id STRING PRIMARY KEY, repoId STRING, text STRING, searchText STRING)")
            self.run("CHECKPOINT")
            return self.loop(self.micro)
        self.schema()
        if self.a.micro:
            return self.loop(self.micro)
        for r in range(self.a.repos):
            self.run("CREATE (:Repository {id: $id, root: $id, name: $id})", {"id": f"repo{r}"})
            self.index(r, 0)
        self.checkpoint()
        return self.loop(self.cycle)

    def cycle(self, cycle: int) -> None:
        r = cycle % self.a.repos
        self.forget(r)
        self.index(r, cycle)
        self.memory(r, cycle)
        self.checkpoint(idle=True)

    def loop(self, step: Any) -> dict[str, Any]:
        series: list[tuple[int, int, int]] = []  # (cycle, anonymous KB, rss KB)
        reopen_ms: list[float] = []  # what each close + open of the Database took
        t0 = time.monotonic()
        for cycle in range(1, self.a.cycles + 1):
            step(cycle)
            if self.a.reopen_every and cycle % self.a.reopen_every == 0:
                t1 = time.monotonic()
                self.close()
                self.open()
                reopen_ms.append(round((time.monotonic() - t1) * 1000, 1))
            elif self.a.reconnect_every and cycle % self.a.reconnect_every == 0:
                self.conn.close()
                self.connect()
            if cycle % self.a.every == 0 or cycle == 1:
                anon, rss = anon_kb()
                series.append((cycle, anon, rss))
        seconds = time.monotonic() - t0
        db_bytes = os.path.getsize(self.path) if self.path.exists() else 0
        self.close()
        after = [(c, a) for c, a, _ in series if c >= self.a.warmup]
        warm, end = (after[0][1], after[-1][1]) if after else (None, None)
        s = slope(after)
        return {
            "variant": self.a.name, "cycles": self.a.cycles, "warmup": self.a.warmup, "parts": sorted(self.parts),
            "fts": not self.a.no_fts, "idle_checkpoint": not self.a.no_idle_checkpoint, "transactions": not self.a.no_tx,
            "copy": self.a.copy, "micro": self.a.micro, "one_table": self.a.one_table, "reopen_every": self.a.reopen_every, "reconnect_every": self.a.reconnect_every,
            "files": self.a.files, "repos": self.a.repos, "buffer_pool_mb": self.a.buffer_pool_mb,
            "seconds": round(seconds, 1), "cycles_per_s": round(self.a.cycles / seconds, 1),
            "db_file_mb_end": round(db_bytes / 2**20, 1),
            "anon_kb_first": series[0][1], "anon_kb_warm": warm, "anon_kb_end": end,
            "growth_kb_after_warmup": (end - warm) if warm is not None and end is not None else None,
            "slope_kb_per_cycle": round(s, 2) if s is not None else None,
            "kb_per_1000_cycles": round(s * 1000) if s is not None else None,
            "reopen_ms": reopen_ms,
            "series": series,
        }  # fmt: skip


MATRIX: list[tuple[str, list[str]]] = [
    ("all", []),
    ("no-fts", ["--no-fts"]),
    ("code-only", ["--parts", "code"]),
    ("history-only", ["--parts", "history"]),
    ("memory-only", ["--parts", "memory"]),
    ("no-idle-checkpoint", ["--no-idle-checkpoint"]),
    ("buffer-pool-64", ["--buffer-pool-mb", "64"]),
    ("copy-create", ["--copy", "create"]),
    ("copy-csv", ["--copy", "csv"]),
    ("reopen-every-50", ["--reopen-every", "50"]),
    ("reconnect-every-50", ["--reconnect-every", "50"]),
    ("micro-checkpoint", ["--micro", "checkpoint"]),
    ("micro-create", ["--micro", "create"]),
    ("micro-create-checkpoint", ["--micro", "create-checkpoint"]),
    ("micro-read-checkpoint", ["--micro", "read-checkpoint"]),
    ("micro-create-checkpoint-one-table", ["--micro", "create-checkpoint", "--one-table"]),
    ("micro-checkpoint-one-table", ["--micro", "checkpoint", "--one-table"]),
    ("micro-checkpoint-one-table-reopen-100", ["--micro", "checkpoint", "--one-table", "--reopen-every", "100"]),
]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cycles", type=int, default=1500)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--every", type=int, default=25, help="sample anonymous memory every N cycles")
    p.add_argument("--files", type=int, default=6, help="modules per repository (the op fuzz has 6)")
    p.add_argument("--repos", type=int, default=4)
    p.add_argument("--parts", default="code,history,memory")
    p.add_argument("--no-fts", action="store_true")
    p.add_argument("--no-idle-checkpoint", action="store_true", help="skip the end-of-cycle CHECKPOINT")
    p.add_argument("--no-tx", action="store_true")
    p.add_argument("--copy", choices=["unwind", "csv", "create"], default="unwind")
    p.add_argument("--reopen-every", type=int, default=0)
    p.add_argument("--reconnect-every", type=int, default=0)
    p.add_argument("--buffer-pool-mb", type=int, default=384)
    p.add_argument("--micro", default="", help="instead of the cycle, one pattern: any of create, delete, read, "
                   "checkpoint joined by '-' (e.g. create-checkpoint)")
    p.add_argument("--one-table", action="store_true", help="with --micro: a database of one node table")
    p.add_argument("--name", default="custom")
    p.add_argument("--matrix", action="store_true", help="run the variants of MATRIX, each in a child process")
    p.add_argument("--only", default="", help="with --matrix: only these variants (comma-separated)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", default="kuzu_churn.json")
    return p


def _name(out: str) -> str:
    return out[: -len(".json")] if out.endswith(".json") else out


def one(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="nx-kuzu-churn-"))
    try:
        return Probe(args, work / "db.kz").main()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def show(res: dict[str, Any]) -> None:
    print(f"{res['variant']:<20} {res['cycles']:>6} cycles {res['cycles_per_s']:>6}/s  anon KB first {res['anon_kb_first']:>7}"
          f"  warm {res['anon_kb_warm']:>7}  end {res['anon_kb_end']:>7}  slope {res['slope_kb_per_cycle']:>7} KB/cycle"
          f"  ({res['kb_per_1000_cycles']} KB / 1000)  file {res['db_file_mb_end']} MB", flush=True)  # fmt: skip


def main() -> None:
    args = parser().parse_args()
    if args.child:
        print(json.dumps(one(args)))
        return
    if not args.matrix:
        res = one(args)
        show(res)
        write_result(_name(args.out), {"runs": [res]})
        return
    base = [a for a in sys.argv[1:] if a not in ("--matrix",)]
    if "--only" in base:
        i = base.index("--only")
        del base[i : i + 2]
    if "--out" in base:
        i = base.index("--out")
        del base[i : i + 2]
    wanted = set(args.only.split(",")) if args.only else None
    runs = []
    for name, extra in MATRIX:
        if wanted is not None and name not in wanted:
            continue
        proc = subprocess.run([sys.executable, __file__, "--child", "--name", name, *base, *extra],
                              capture_output=True, text=True)  # fmt: skip
        if proc.returncode != 0:
            print(f"{name}: failed: {proc.stderr.strip().splitlines()[-3:]}", flush=True)
            runs.append({"variant": name, "error": proc.stderr.strip()[-2000:]})
            continue
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        show(res)
        runs.append(res)
    write_result(_name(args.out), {"runs": runs, "argv": sys.argv[1:]})


if __name__ == "__main__":
    main()
