"""Bare-Kuzu probe (no daemon): does a checkpoint that folds in deletes damage a relationship table, and does a
rebuild inside the same file mend it? -> bench/results/kuzu_damage_probe.json.

    python bench/kuzu_damage_probe.py [--seeds 1,2,3] [--steps 3000] [--out kuzu_damage_probe.json]

One process per seed opens a fresh database with a cut-down code graph (Repository, File, Symbol; HAS_FILE,
CONTAINS File->Symbol, calls, imports) and the memory and history tables that link into it (Fact -ABOUT->
Symbol, Procedure -APPLIES_TO-> File, Change -CHANGED_FILE-> File), four repositories, and then runs random
steps shaped like the daemon's statements, with the daemon's rule that every deleting unit is preceded by a
CHECKPOINT when anything was written since the last one (`Store.checkpoint_before_delete`):

- a cold write: in one transaction DETACH DELETE of the repository's Symbol and File nodes, then COPY of File,
  Symbol, HAS_FILE, CONTAINS and calls; then memory's and history's links MERGEd again (`graphwrite.write_cold`,
  the relink listeners);
- a file deleted or added (`write_diff`), a fact, a procedure, a change, a `repo.forget`, a `memory.forget`;
- a CHECKPOINT now and then (the daemon's idle one).

After every step it checks the invariants the daemon's `graphwrite.verify_counts` checks (one HAS_FILE per File,
one CONTAINS parent per Symbol). At a mismatch it rebuilds that repository the daemon's way (checkpoint, delete,
COPY) and checks again. It reports mismatches, and how many of the rebuilds mended them. These are Kuzu's
answers to the daemon's own statement shapes; nothing in nexusd runs here.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCHEMA = [
    "CREATE NODE TABLE Repository(id STRING PRIMARY KEY)",
    "CREATE NODE TABLE File(id STRING PRIMARY KEY, repoId STRING, path STRING)",
    "CREATE NODE TABLE Symbol(id STRING PRIMARY KEY, repoId STRING, path STRING)",
    "CREATE NODE TABLE Procedure(id STRING PRIMARY KEY, repoId STRING)",
    "CREATE NODE TABLE Fact(id STRING PRIMARY KEY, repoId STRING, sym STRING)",
    "CREATE NODE TABLE Change(id STRING PRIMARY KEY, repoId STRING, path STRING)",
    "CREATE REL TABLE HAS_FILE(FROM Repository TO File)",
    "CREATE REL TABLE CONTAINS(FROM File TO Symbol, FROM Symbol TO Symbol, ordinal INT64)",
    "CREATE REL TABLE CALLS(FROM Symbol TO Symbol)",
    "CREATE REL TABLE IMPORTS(FROM File TO File)",
    "CREATE REL TABLE ABOUT(FROM Fact TO Symbol)",
    "CREATE REL TABLE CHANGED_FILE(FROM Change TO File)",
    "CREATE REL TABLE APPLIES_TO(FROM Procedure TO File)",
]
REPOS = [f"r{i}" for i in range(4)]


class Probe:
    def __init__(self, seed: int, path: str):
        import kuzu

        self.rng = random.Random(seed)
        self.db = kuzu.Database(path, buffer_pool_size=256 << 20)
        self.c = kuzu.Connection(self.db)
        for ddl in SCHEMA:
            self.c.execute(ddl)
        for r in REPOS:
            self.c.execute("CREATE (:Repository {id: $r})", {"r": r})
        self.files: dict[str, set[str]] = {r: set() for r in REPOS}
        self.dirty = False
        self.n = 0
        self.mismatches: list[dict[str, Any]] = []

    def ex(self, q: str, p: dict[str, Any] | None = None) -> Any:
        return self.c.execute(q, p) if p is not None else self.c.execute(q)

    def checkpoint(self) -> None:
        if self.dirty:
            self.ex("CHECKPOINT")
            self.dirty = False

    def counts(self, r: str) -> tuple[int, int, int, int]:
        def one(q: str) -> int:
            return int(self.ex(q, {"r": r}).get_next()[0])

        return (
            one("MATCH (:Repository {id: $r})-[e:HAS_FILE]->(:File) RETURN count(e)"),
            one("MATCH (f:File) WHERE f.repoId = $r RETURN count(f)"),
            one("MATCH ()-[e:CONTAINS]->(s:Symbol) WHERE s.repoId = $r RETURN count(e)"),
            one("MATCH (s:Symbol) WHERE s.repoId = $r RETURN count(s)"),
        )

    @staticmethod
    def sound(c: tuple[int, int, int, int]) -> bool:
        return c[0] == c[1] and c[2] == c[3]

    def check(self, r: str, step: int, where: str) -> None:
        got = self.counts(r)
        if self.sound(got):
            return
        self.cold(r)  # the daemon's rebuild of a damaged repository
        after = self.counts(r)
        self.mismatches.append({"step": step, "after": where, "repo": r, "hasFile_files_contains_symbols": got,
                                "after_rebuild": after, "mended": self.sound(after)})  # fmt: skip

    def cold(self, r: str) -> None:
        rng = self.rng
        paths = sorted({f"p{rng.randint(0, 11)}.py" for _ in range(rng.randint(3, 10))})
        files = [{"id": f"{r}:{p}", "p": p} for p in paths]
        syms = [{"id": f"{r}:{p}:s{k}", "p": p, "f": f"{r}:{p}"} for p in paths for k in range(rng.randint(1, 4))]
        calls = [{"a": a["id"], "b": b["id"]} for a in syms for b in syms if rng.random() < 0.1]
        self.checkpoint()
        self.ex("BEGIN TRANSACTION")
        self.ex("MATCH (s:Symbol) WHERE s.repoId = $r DETACH DELETE s", {"r": r})
        self.ex("MATCH (f:File) WHERE f.repoId = $r DETACH DELETE f", {"r": r})
        self.ex("COPY File FROM (UNWIND $rows AS x RETURN x.id, $r, x.p)", {"rows": files, "r": r})
        self.ex("COPY Symbol FROM (UNWIND $rows AS x RETURN x.id, $r, x.p)", {"rows": syms, "r": r})
        self.ex("COPY HAS_FILE FROM (UNWIND $rows AS x RETURN $r, x.id)", {"rows": files, "r": r})
        self.ex("COPY CONTAINS_File_Symbol FROM (UNWIND $rows AS x RETURN x.f, x.id, 1)", {"rows": syms})
        if calls:
            self.ex("COPY CALLS FROM (UNWIND $rows AS x RETURN x.a, x.b)", {"rows": calls})
        self.ex("COMMIT")
        self.files[r] = set(paths)
        self.ex("MATCH (fa:Fact), (s:Symbol) WHERE fa.repoId = $r AND s.id = fa.sym MERGE (fa)-[:ABOUT]->(s)", {"r": r})
        self.ex("MATCH (ch:Change), (f:File) WHERE ch.repoId = $r AND f.id = $r + ':' + ch.path "
                "MERGE (ch)-[:CHANGED_FILE]->(f)", {"r": r})  # fmt: skip
        self.ex("MATCH (p:Procedure), (f:File) WHERE p.repoId = $r AND f.repoId = $r AND f.path = 'p1.py' "
                "MERGE (p)-[:APPLIES_TO]->(f)", {"r": r})  # fmt: skip
        self.dirty = True

    def step(self, i: int) -> None:
        rng, r, op = self.rng, self.rng.choice(REPOS), self.rng.random()
        self.n += 1
        p = f"p{rng.randint(0, 11)}.py"
        if op < 0.25:
            self.cold(r)
            self.check(r, i, "cold write")
            return
        if op < 0.35 and self.files[r]:
            pid = f"pr{self.n}"
            self.ex("CREATE (:Procedure {id: $id, repoId: $r})", {"id": pid, "r": r})
            self.ex("MATCH (p:Procedure {id: $id}), (f:File) WHERE f.repoId = $r AND f.path IN $ps "
                    "MERGE (p)-[:APPLIES_TO]->(f)", {"id": pid, "r": r, "ps": rng.sample(sorted(self.files[r]), 1)})  # fmt: skip
        elif op < 0.45:
            fid, sym = f"fa{self.n}", f"{r}:{p}:s0"
            self.ex("CREATE (:Fact {id: $id, repoId: $r, sym: $s})", {"id": fid, "r": r, "s": sym})
            self.ex("MATCH (fa:Fact {id: $id}), (s:Symbol {id: $s}) MERGE (fa)-[:ABOUT]->(s)", {"id": fid, "s": sym})
        elif op < 0.52:
            cid = f"ch{self.n}"
            self.ex("CREATE (:Change {id: $id, repoId: $r, path: $p})", {"id": cid, "r": r, "p": p})
            self.ex("MATCH (ch:Change {id: $id}), (f:File {id: $f}) MERGE (ch)-[:CHANGED_FILE]->(f)", {"id": cid, "f": f"{r}:{p}"})
        elif op < 0.65 and self.files[r]:  # a file deleted
            gone = rng.choice(sorted(self.files[r]))
            self.checkpoint()
            self.ex("BEGIN TRANSACTION")
            self.ex("MATCH (s:Symbol) WHERE s.repoId = $r AND s.path = $p DETACH DELETE s", {"r": r, "p": gone})
            self.ex("MATCH (f:File {id: $id}) DETACH DELETE f", {"id": f"{r}:{gone}"})
            self.ex("COMMIT")
            self.files[r].discard(gone)
        elif op < 0.78:  # a file added
            if p in self.files[r]:
                return
            self.ex("BEGIN TRANSACTION")
            self.ex("MATCH (x:Repository {id: $r}) CREATE (x)-[:HAS_FILE]->(:File {id: $id, repoId: $r, path: $p})",
                    {"r": r, "id": f"{r}:{p}", "p": p})  # fmt: skip
            self.ex("MATCH (f:File {id: $f}) CREATE (f)-[:CONTAINS {ordinal: 0}]->(:Symbol {id: $id, repoId: $r, path: $p})",
                    {"f": f"{r}:{p}", "id": f"{r}:{p}:s0", "r": r, "p": p})  # fmt: skip
            self.ex("COMMIT")
            self.files[r].add(p)
        elif op < 0.85:
            self.checkpoint()
            self.check(r, i, "checkpoint")
            return
        elif op < 0.92:  # repo.forget
            self.checkpoint()
            self.ex("BEGIN TRANSACTION")
            self.ex("MATCH (s:Symbol) WHERE s.repoId = $r DETACH DELETE s", {"r": r})
            self.ex("MATCH (f:File) WHERE f.repoId = $r DETACH DELETE f", {"r": r})
            self.ex("COMMIT")
            self.files[r] = set()
        else:  # memory.forget
            self.checkpoint()
            self.ex("MATCH (p:Procedure) WHERE p.repoId = $r DETACH DELETE p", {"r": r})
            self.ex("MATCH (fa:Fact) WHERE fa.repoId = $r DETACH DELETE fa", {"r": r})
        self.dirty = True
        self.check(r, i, "write")


def one_seed(seed: int, steps: int) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="kuzu-damage-")
    t0 = time.monotonic()
    try:
        probe = Probe(seed, os.path.join(tmp, "graph.kuzu"))
        for i in range(steps):
            probe.step(i)
        m = probe.mismatches
        return {"seed": seed, "steps": steps, "mismatches": len(m), "mended_by_rebuild": sum(x["mended"] for x in m),
                "first": m[:5], "seconds": round(time.monotonic() - t0, 1)}  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--out", default="kuzu_damage_probe.json")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: run one seed, print its JSON
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(one_seed(args.one, args.steps)))
        return
    import kuzu

    runs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        # Each seed in its own process: a segfault in Kuzu ends that seed, not the probe.
        proc = subprocess.run([sys.executable, __file__, "--one", str(seed), "--steps", str(args.steps)],
                              capture_output=True, text=True)  # fmt: skip
        run = json.loads(proc.stdout) if proc.returncode == 0 else {"seed": seed, "exit": proc.returncode}
        runs.append(run)
        print(json.dumps({k: v for k, v in run.items() if k != "first"}))
    done = [r for r in runs if "mismatches" in r]
    result = {"kuzu": kuzu.__version__, "steps": args.steps, "runs": runs,
              "mismatches": sum(r["mismatches"] for r in done),
              "mended_by_rebuild": sum(r["mended_by_rebuild"] for r in done),
              "seeds_with_damage": sum(1 for r in done if r["mismatches"]),
              "crashed_seeds": [r["seed"] for r in runs if "exit" in r]}  # fmt: skip
    out = Path(__file__).parent / "results" / args.out
    out.write_text(json.dumps(result, indent=1) + "\n")
    print({k: v for k, v in result.items() if k != "runs"}, "->", out)


if __name__ == "__main__":
    main()
