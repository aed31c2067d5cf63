"""Load: N concurrent clients mixing queries and memory writes for T seconds while another repository syncs.

Each client is a thread with its own connection, in one of several worker processes (so the clients' own
Python does not serialise them on one GIL). A client loops without think time: 70% queries (locate, show,
context, impact, recall, status), 30% memory writes (remember, turn), recording each latency, each error and
the id of every acknowledged write. Meanwhile the parent keeps a second repository syncing (a full re-index,
again and again). At the end every acknowledged write is looked up in the graph: lost writes must be zero.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import random
import threading
import time
from pathlib import Path
from typing import Any

from nexus_client import connect

from nexusd import paths
from tests.reliability.common import make_py_repo, q

QUERY_SHARE = 0.7


def _client_loop(home: str, repo: str, seconds: float, seed: int, out: list[dict[str, Any]]) -> None:
    rng = random.Random(seed)
    dirs = paths.dirs({"NEXUS_HOME": home})
    scope = {"user": "load", "repo": repo}
    lat: dict[str, list[float]] = {}
    errors: dict[str, int] = {}
    facts: list[str] = []
    turns: list[str] = []
    end = time.monotonic() + seconds
    n = 0
    with connect(dirs, timeout=120) as c:
        session = c.request("session.start", {**scope, "title": f"load {seed}"})["session"]
        while time.monotonic() < end:
            n += 1
            if rng.random() < QUERY_SHARE:
                op, args = rng.choice(
                    [
                        ("locate", {**scope, "query": f"func_{rng.randint(0, 199)}_0"}),
                        ("show", {**scope, "symbol": f"func_{rng.randint(0, 199)}_1"}),
                        ("context", {**scope, "symbol": f"func_{rng.randint(0, 199)}_0", "depth": 2}),
                        ("impact", {**scope, "symbol": f"func_{rng.randint(0, 199)}_0", "depth": 2}),
                        ("recall", {**scope, "query": "load fact writer"}),
                        ("status", {"repo": repo}),
                    ]
                )
            elif rng.random() < 0.5:
                op, args = "remember", {**scope, "text": f"load fact writer {seed} number {n}"}
            else:
                op, args = "turn", {**scope, "session": session, "text": f"load turn {seed}/{n}"}
            t0 = time.perf_counter()
            try:
                result = c.request(op, args)
            except Exception as exc:  # counted, never fatal: the figure is the error count
                kind = f"{op}:{getattr(exc, 'code', type(exc).__name__)}"
                errors[kind] = errors.get(kind, 0) + 1
                continue
            lat.setdefault(op, []).append(time.perf_counter() - t0)
            if op == "remember":
                facts.append(result["id"])
            elif op == "turn":
                turns.append(result["turn"])
    out.append({"lat": lat, "errors": errors, "facts": facts, "turns": turns})


def _worker(home: str, repo: str, seconds: float, seeds: list[int], path: str) -> None:
    out: list[dict[str, Any]] = []
    threads = [threading.Thread(target=_client_loop, args=(home, repo, seconds, s, out)) for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 300)
    Path(path).write_text(json.dumps(out))


def prepare(work: Path) -> tuple[Path, Path]:
    """The queried repository (200 modules) and the one that keeps syncing (600 modules)."""
    return make_py_repo(work / "queried", 200), make_py_repo(work / "syncing", 600)


def run(d: Any, work: Path, clients: int, seconds: float, processes: int = 5) -> dict[str, Any]:
    queried, syncing = prepare(work)
    with d.client(timeout=300) as c:
        c.request("index", {"repo": str(queried), "user": "load"}, timeout=300)
    stop = threading.Event()
    syncs: list[float] = []

    def keep_syncing() -> None:
        with d.client(timeout=600) as c:
            first = True
            while not stop.is_set():
                t0 = time.perf_counter()
                c.request("index", {"repo": str(syncing), "user": "load", "full": not first}, timeout=600)
                syncs.append(time.perf_counter() - t0)
                first = False

    syncer = threading.Thread(target=keep_syncing, daemon=True)
    syncer.start()
    procs = max(1, min(processes, clients))
    seeds = [list(range(i, clients, procs)) for i in range(procs)]
    files = [str(work / f"load-{i}.json") for i in range(procs)]
    ctx = mp.get_context("spawn")
    workers = [ctx.Process(target=_worker, args=(d.env["NEXUS_HOME"], str(queried), seconds, s, f))
               for s, f in zip(seeds, files, strict=True)]  # fmt: skip
    t0 = time.monotonic()
    for w in workers:
        w.start()
    for w in workers:
        w.join(seconds + 400)
    wall = time.monotonic() - t0
    stop.set()
    syncer.join(600)
    results: list[dict[str, Any]] = []
    for f in files:
        try:
            results.extend(json.loads(Path(f).read_text()))
        except (OSError, ValueError):
            results.append({"lat": {}, "errors": {"worker-died": 1}, "facts": [], "turns": []})
    all_lat: list[float] = []
    by_op: dict[str, list[float]] = {}
    errors: dict[str, int] = {}
    facts: set[str] = set()
    turns: set[str] = set()
    for r in results:
        for op, xs in r["lat"].items():
            by_op.setdefault(op, []).extend(xs)
            all_lat.extend(xs)
        for k, v in r["errors"].items():
            errors[k] = errors.get(k, 0) + v
        facts.update(r["facts"])
        turns.update(r["turns"])
    with d.client(timeout=300) as c:
        have_f = {r[0] for r in q(c, "MATCH (f:Fact) WHERE f.userId = 'load' RETURN f.id")}
        have_t = {r[0] for r in q(c, "MATCH (t:Turn) WHERE t.userId = 'load' RETURN t.id")}
        alive = bool(c.request("ping")["pong"])
    return {
        "clients": clients,
        "seconds": seconds,
        "wall_s": round(wall, 1),
        "requests": len(all_lat) + sum(errors.values()),
        "throughput_rps": round(len(all_lat) / wall, 1) if wall else 0,
        "errors": sum(errors.values()),
        "errors_by_kind": errors,
        "latency": _pct(all_lat),
        "latency_by_op": {op: _pct(xs) for op, xs in sorted(by_op.items())},
        "acknowledged_writes": len(facts) + len(turns),
        "lost_writes": len(facts - have_f) + len(turns - have_t),
        "background_syncs": len(syncs),
        "background_sync_s": _pct(syncs),
        "alive_after": alive,
    }


def _pct(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    s = sorted(xs)

    def pick(p: float) -> float:
        return round(s[min(len(s) - 1, int(p * len(s)))] * 1000, 2)

    return {"p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": round(s[-1] * 1000, 2), "n": len(s)}
