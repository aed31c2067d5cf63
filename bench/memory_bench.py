"""How light the daemon is: resident memory, CPU per file, the first answer, and `status`.

    .venv/bin/python bench/memory_bench.py [--corpus gen1k|gen5k|gen20k|stdlib ...] [--idle-wait 60]
                                           [--skip-status] [--skip-idle] [--status-paths] [--skip-daemon]
                                           [--defaults SECONDS] [--restart-gap]

Rows (each printed, all written to bench/results/memory_bench.json):
- idle: the daemon's RSS (and anonymous RSS) a few seconds after start with an empty NEXUS_HOME;
- per corpus (default gen1k; gen5k, gen20k and stdlib on request — heavy, run them one at a time): parse-only
  wall and CPU (tree-sitter alone, one process, as in index_bench.py), the cold `index` wall and CPU (daemon
  plus its parser processes), the first query after the cold index, the daemon's RSS after the index and after
  a handful of queries (parser processes counted separately; read as the daemon goes quiet, which comes before
  its idle checkpoint and heap trim, and read again 1.5 s after that checkpoint is due), bytes per symbol over the
  idle daemon, the RSS settled 40 s after the queries, the RSS
  once the idle daemon has let the symbol table go (NEXUS_SYNC_IDLE_S=60 for this daemon), once its database
  rested (NEXUS_DB_IDLE_S=90) and after a `status` and an `impact` asked while it rests, once it restarted itself in place after that (NEXUS_RECYCLE_QUIET_S=120, and
  NEXUS_RECYCLE_AFTER_INDEX_S too: nexusd/recycle.py) and the next image's database rested again (a daemon idle
  for long: bytes per symbol there too) and after its next query, the first query after
  a restart, and the RSS settled after the restarted daemon's first edit (which builds its
  sync engine from the facts cache);
- defaults (`--defaults SECONDS`, per corpus): the same corpus on a daemon with every setting at its default (the
  rows above shorten NEXUS_SYNC_IDLE_S and lengthen NEXUS_RECYCLE_QUIET_S to separate their steps): cold index,
  the queries, its RSS every second for SECONDS with no request (when it restarted itself in place, the median of
  the last 30 s, the highest), then after one query and after one edit;
- restart gap (`--restart-gap`, per corpus, twice): with every setting at its default, how long a `locate` sent the
  moment the daemon's log says it restarts in place (NEXUS_RECYCLE_AFTER_INDEX_S after the cold index) waits;
- parsers idle: the parser processes (count, RSS) once the daemon has been idle for `--idle-wait` seconds,
  and the latency of the next one-file sync (parsed in the daemon) and of the next 40-file sync (which needs
  the pool back), both given their paths as the watcher gives them;
- status: `nexus status` as a whole process with five registered repositories, against `python -c pass`,
  and the daemon-side `status` op alone;
- symbols (`--symbols`, per corpus chosen): where the Python heap of one indexed repository goes, part by part, in
  this process (no daemon; tracemalloc): the facts the sync engine keeps, the symbol table, the resolutions and the
  resolver's memo (and what is left once the memo is released, as sync does after a batch), the query snapshot
  built from those facts; bytes per symbol for each part;
- a chart (`<out>.svg` beside the JSON): the daemon's RSS after queries against symbols, and the cold index wall
  time against files, one point per corpus.

Targets (the issue on a light daemon): idle <= 60 MB; stdlib after queries <= 300 MB; <= 1.5 KB per symbol;
parsers idle <= 1 warm worker (or none) with the first parse < 100 ms; stdlib cold CPU <= 2.5x and wall <= 2x
parse-only; 1k small files wall <= 4x parse-only; first query after a cold index or a restart <= 0.2 s;
`nexus status` with five repositories <= 3.5x `python -c pass`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus_client import connect  # noqa: E402
from nexus_client.launcher import socket_ident  # noqa: E402

from bench.harness import BenchDaemon, write_result  # noqa: E402
from bench.index_bench import copy_stdlib, generate  # noqa: E402
from nexusd.server import CHECKPOINT_IDLE_S  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
QUERIES = ["main", "run", "helper", "parse", "Service1"]


# -- /proc readings ---------------------------------------------------------------------------------


def mem_mb(pid: int) -> dict[str, float]:
    out = {}
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            key = line.split(":", 1)[0]
            if key in ("VmRSS", "RssAnon"):
                out["rss" if key == "VmRSS" else "anon"] = round(int(line.split()[1]) / 1024, 1)
    return out


def children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                kids += [int(x) for x in fh.read().split()]
    except OSError:
        pass
    return kids


def cpu_s(pid: int, *, with_reaped: bool = True) -> float:
    """utime+stime of the process (and of its reaped children), in seconds."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if with_reaped else 0)
    return ticks / TICK


def tree_cpu_s(pid: int) -> float:
    total = cpu_s(pid)
    for kid in children(pid):
        try:
            total += cpu_s(kid)
        except OSError:
            pass
    return total


def private_mb(pid: int) -> float:
    """What the process holds that no other process shares (Private_Clean + Private_Dirty): for a forked child,
    the pages it copied, where its RSS would count every page it still shares with its parent."""
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        for line in fh:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1])
    return round(total / 1024, 1)


def parsers(pid: int) -> dict[str, Any]:
    """The daemon's child processes: parser workers (spawned by multiprocessing), the resource tracker and a first
    start's database builder (`other_children_rss_mb`), and forked copies of the daemon (the query snapshot's
    prebuild during a cold index: `forked_private_mb`, only what they copied, since their RSS is mostly the
    daemon's own pages)."""
    with open(f"/proc/{pid}/cmdline", "rb") as fh:
        own = fh.read()
    kids = []
    for kid in children(pid):
        try:
            with open(f"/proc/{kid}/cmdline", "rb") as fh:
                raw = fh.read()
            cmd = raw.replace(b"\0", b" ").decode(errors="replace")
            kind = ("forked" if raw == own
                    else "other" if "resource_tracker" in cmd or "nexusd.store" in cmd else "worker")  # fmt: skip
            entry = {"pid": kid, "rss": 0.0, **mem_mb(kid), "kind": kind}
            if kind == "forked":
                entry["private"] = private_mb(kid)
            kids.append(entry)
        except OSError:
            pass
    workers = [k for k in kids if k["kind"] == "worker"]
    return {"workers": len(workers), "rss_mb": round(sum(k["rss"] for k in workers), 1),
            "other_children_rss_mb": round(sum(k["rss"] for k in kids if k["kind"] == "other"), 1),
            "forked_private_mb": round(sum(k.get("private", 0.0) for k in kids if k["kind"] == "forked"), 1)}


def quiesce(pid: int, limit_s: float = 60.0) -> float:
    """Wait until the daemon (and its children) spend under 0.05 CPU-s in a second: background work after an
    index (checkpoint, history scan, snapshot) would otherwise land inside the next timing."""
    t0 = time.monotonic()
    last = tree_cpu_s(pid)
    while time.monotonic() - t0 < limit_s:
        time.sleep(1.0)
        now = tree_cpu_s(pid)
        if now - last < 0.05:
            break
        last = now
    return round(time.monotonic() - t0, 1)


def settled(pid: int, since: float, after_s: float = 40.0, samples: int = 10) -> dict[str, float]:
    """The daemon's RSS and anonymous RSS: the median of `samples` one-second readings taken from `after_s`
    seconds past `since` (a time.monotonic() reading)."""
    time.sleep(max(0.0, since + after_s - time.monotonic()))
    readings = []
    for _ in range(samples):
        readings.append(mem_mb(pid))
        time.sleep(1.0)
    return {key: statistics.median(r[key] for r in readings) for key in ("rss", "anon")}


def timed(fn: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


# -- rows -------------------------------------------------------------------------------------------


def wait_builder(pid: int, limit_s: float = 60.0) -> float:
    """Wait until a first start's database builder (a child process) is done: a cold index timed while it runs
    would count the database's creation, which the daemon did before its socket existed when it was built at
    start."""
    t0 = time.monotonic()
    while parsers(pid)["other_children_rss_mb"] and time.monotonic() - t0 < limit_s:
        time.sleep(0.1)
    return round(time.monotonic() - t0, 1)


def idle_row(settle_s: float = 3.0) -> dict[str, Any]:
    """A first start builds its (empty) database in a child process, in the background; the row waits for that
    child to finish and reports the largest RSS it saw of it apart."""
    with BenchDaemon() as d:
        assert d.proc is not None
        t0 = time.monotonic()
        builder = 0.0
        while time.monotonic() - t0 < 60:
            kids = parsers(d.proc.pid)
            builder = max(builder, kids["other_children_rss_mb"])
            if time.monotonic() - t0 >= settle_s and not kids["other_children_rss_mb"]:
                break
            time.sleep(0.1)
        out = {"daemon": mem_mb(d.proc.pid), "parsers": parsers(d.proc.pid), "settle_s": round(time.monotonic() - t0, 1),
               "first_start_db_builder_peak_rss_mb": builder, "db_file_built": d.dirs.db.exists()}
    print(f"[idle] nothing registered: {out}", flush=True)
    return out


_BREAKDOWN = r"""
import json, sys, tempfile, kuzu
from pathlib import Path
def anon():
    for line in open('/proc/self/status'):
        if line.startswith('RssAnon'):
            return round(int(line.split()[1]) / 1024, 1)
out = {'python+kuzu import': anon()}
from nexusd import schema
from nexusd.store import Store
home = Path(tempfile.mkdtemp())
store = Store(home / 'db')
out['database+connection+fts extension'] = anon()
c = store._admin
made = schema.all_table_ddl(optional=())  # (what a new database has: the optional tables come with their first row)
nodes = [d for d in made if 'NODE TABLE' in d]
for ddl in nodes:
    c.execute(ddl)
out['node tables'] = anon()
out['node table count'] = len(nodes)
for ddl in made:
    if 'REL TABLE' in ddl:
        c.execute(ddl)
out['rel tables'] = anon()
store.checkpoint()
store.close()
print(json.dumps(out))
print(home / 'db')
"""

_REOPEN = r"""
import json, sys
from pathlib import Path
def anon():
    for line in open('/proc/self/status'):
        if line.startswith('RssAnon'):
            return round(int(line.split()[1]) / 1024, 1)
from nexusd.store import Store
store = Store(Path(sys.argv[1]))
store.ensure_schema()
print(json.dumps({'existing empty database opened (a restart)': anon()}))
"""


def idle_breakdown_row() -> dict[str, Any]:
    """Where the idle daemon's anonymous memory goes, step by step in a fresh process (MB of RssAnon after
    each step; Kuzu's buffer pool size makes no difference to these, see the report)."""
    import json

    here = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.run([sys.executable, "-c", _BREAKDOWN], capture_output=True, text=True, check=True, cwd=here)
    lines = proc.stdout.strip().splitlines()
    out: dict[str, Any] = json.loads(lines[-2])
    db = Path(lines[-1])
    proc = subprocess.run([sys.executable, "-c", _REOPEN, str(db)], capture_output=True, text=True, check=True, cwd=here)
    out.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    shutil.rmtree(db.parent, ignore_errors=True)
    print(f"[idle-breakdown] RssAnon MB after each step: {out}", flush=True)
    return out


def parse_only(root: Path) -> dict[str, Any]:
    """index_bench's parse-only floor, with its CPU time too (one process)."""
    from bench.index_bench import parse_only as floor

    c0 = time.process_time()
    out = floor(root)
    out["cpu_s"] = round(time.process_time() - c0, 3)
    return out


RELEASE_S = 60  # NEXUS_SYNC_IDLE_S of the corpus rows' daemon: its symbol table goes after the settled reading
# NEXUS_RECYCLE_QUIET_S of that daemon: with no request for this long (after the release's reading) and no table
# held, it restarts in place when its allocator keeps NEXUS_RECYCLE_MB (32) it freed (nexusd/recycle.py). Its
# NEXUS_RECYCLE_AFTER_INDEX_S too (5 s by default): the readings before the restart stay what they measured; the
# defaults row reads what a user gets.
RECYCLE_QUIET_S = 120
# NEXUS_DB_IDLE_S of that daemon (120 s by default): its database rests (closes) after the release's reading and
# before the restart in place; the first graph read after that opens it again.
DB_REST_S = 90


def _rest_after_restart(log: Path, limit_s: float) -> float | None:
    """Seconds until the daemon's log says its database rested, counting only what was logged from this call on
    (the next image's part, when called as it starts; the log rotates at 5 MB, so a file shorter than it was is
    read whole); None when not within `limit_s`."""
    t0 = time.monotonic()
    start = log.stat().st_size if log.exists() else 0
    while time.monotonic() - t0 < limit_s:
        data = log.read_bytes() if log.exists() else b""
        if b"closed the database while idle" in (data[start:] if len(data) >= start else data):
            return round(time.monotonic() - t0, 1)
        time.sleep(0.5)
    return None


def corpus_row(name: str, root: Path, idle_anon: float) -> dict[str, Any]:
    out: dict[str, Any] = {"corpus": name, "parse_only": parse_only(root)}
    print(f"[{name}] parse only: {out['parse_only']}", flush=True)
    # (logging at INFO: the bench's WARNING would hide the rest's line that `_rest_after_restart` waits for)
    env = {"NEXUS_SYNC_IDLE_S": str(RELEASE_S), "NEXUS_RECYCLE_QUIET_S": str(RECYCLE_QUIET_S),
           "NEXUS_RECYCLE_AFTER_INDEX_S": str(RECYCLE_QUIET_S), "NEXUS_DB_IDLE_S": str(DB_REST_S),
           "NEXUS_LOG_LEVEL": "INFO"}  # fmt: skip
    with BenchDaemon(env=env) as d:
        assert d.proc is not None
        pid = d.proc.pid
        out["waited_for_db_builder_s"] = wait_builder(pid)
        with connect(d.dirs, timeout=3600) as c:
            cpu0 = tree_cpu_s(pid)
            r, cold = timed(lambda: c.request("index", {"repo": str(root)}, timeout=3600))
            cpu = tree_cpu_s(pid) - cpu0
            symbols = int(r["written"].get("symbols") or 0)
            out["cold"] = {"wall_s": round(cold, 3), "cpu_s": round(cpu, 2), "files": r["written"].get("files"),
                           "symbols": symbols, "phases": r["seconds"]}
            po = out["parse_only"]
            out["cold_wall_vs_parse_only"] = round(cold / po["seconds"], 2)
            out["cold_cpu_vs_parse_only"] = round(cpu / po["cpu_s"], 2) if po["cpu_s"] else None
            out["rss_after_index"] = {"daemon": mem_mb(pid), "parsers": parsers(pid)}
            _, first = timed(lambda: c.request("locate", {"repo": str(root), "query": "main", "limit": 5}, timeout=600))
            out["first_query_after_cold_s"] = round(first, 3)
            for q in QUERIES:
                c.request("locate", {"repo": str(root), "query": q, "limit": 20}, timeout=600)
            out["rss_right_after_queries"] = {"daemon": mem_mb(pid)}
            # Steady state: the snapshot is compacted into arrays in the background after it is made
            # (query/compact.py) and saved beside the graph; wait for the daemon to go quiet.
            queried = time.monotonic()
            out["quiesce_after_queries_s"] = quiesce(pid)
            daemon = mem_mb(pid)
            out["rss_after_queries"] = {"daemon": daemon, "parsers": parsers(pid)}
            out["bytes_per_symbol"] = round((daemon["anon"] - idle_anon) * 1024 * 1024 / symbols) if symbols else None
            # The reading above comes as the daemon goes quiet, which is before its idle checkpoint (the writer's
            # upkeep CHECKPOINT_IDLE_S after its last work, then a heap trim): this one follows that checkpoint.
            time.sleep(max(0.0, queried + CHECKPOINT_IDLE_S + 1.5 - time.monotonic()))
            out["rss_after_idle_checkpoint"] = mem_mb(pid)
            # Settled: what the daemon holds once its delayed upkeep ran too (the snapshot's save after
            # NEXUS_SNAPSHOT_SAVE_S, the idle checkpoint's reopen of the database after the big write, the
            # heap's trim): the median of ten one-second samples from 40 s after the queries. The reading
            # above falls before or after that upkeep by chance, and moved by ~+-40 MB between runs.
            out["rss_settled"] = settled(pid, since=queried)
            out["bytes_per_symbol_settled"] = (
                round((out["rss_settled"]["anon"] - idle_anon) * 1024 * 1024 / symbols) if symbols else None
            )
            print(f"[{name}] cold {cold:.2f}s wall ({out['cold_wall_vs_parse_only']}x), {cpu:.1f} CPU-s "
                  f"({out['cold_cpu_vs_parse_only']}x); first query {first:.3f}s; after queries {out['rss_after_queries']}; "
                  f"{out['bytes_per_symbol']} B/symbol ({symbols} symbols); after the idle checkpoint "
                  f"{out['rss_after_idle_checkpoint']}; settled {out['rss_settled']}, "
                  f"{out['bytes_per_symbol_settled']} B/symbol", flush=True)
            # Idle: the symbol table is let go NEXUS_SYNC_IDLE_S after the index last needed it (LiveSync.release_idle),
            # here RELEASE_S instead of the default 600 s; the snapshot stays for the queries.
            out["rss_settled_after_release"] = settled(pid, since=queried, after_s=RELEASE_S + 15)
            print(f"[{name}] symbol table let go after {RELEASE_S} s idle: {out['rss_settled_after_release']}", flush=True)
            # The database rests once no statement used it for NEXUS_DB_IDLE_S (here DB_REST_S): what the daemon
            # holds then, and the first read of the graph after it (`show` reads a symbol's doc there), which
            # opens it again. (That request starts the restart in place's quiet period again.)
            out["rss_settled_after_db_rest"] = settled(pid, since=queried, after_s=DB_REST_S + 8)
            out["bytes_per_symbol_after_db_rest"] = (
                round((out["rss_settled_after_db_rest"]["anon"] - idle_anon) * 1024 * 1024 / symbols) if symbols else None
            )
            hit = next(r for q in QUERIES
                       for r in c.request("locate", {"repo": str(root), "query": q, "limit": 1}, timeout=600)["results"])
            # `status` and `impact` while it rests answer from what the writer read just before the rest
            # (`Parts.before_rest`): the database stays closed, and so does what it would hold.
            c.request("status", {}, timeout=60)
            c.request("impact", {"repo": str(root), "symbol": hit["key"]}, timeout=600)
            out["database_after_status_and_impact"] = c.request("status", {}, timeout=60)["daemon"]["database"]
            out["rss_after_status_and_impact"] = settled(pid, since=time.monotonic(), after_s=3, samples=3)
            print(f"[{name}] after status and impact while it rests: the database "
                  f"{out['database_after_status_and_impact']}, {out['rss_after_status_and_impact']}", flush=True)
            _, wake = timed(lambda: c.request("show", {"repo": str(root), "symbol": hit["key"]}, timeout=600))
            out["first_graph_read_after_rest_s"] = round(wake, 3)
            out["rss_after_graph_read"] = mem_mb(pid)
            out["database_rests"] = c.request("status", {})["daemon"].get("databaseRests")
            print(f"[{name}] database rested after {DB_REST_S} s unused: {out['rss_settled_after_db_rest']}; the "
                  f"next graph read {wake:.3f}s, then {out['rss_after_graph_read']}", flush=True)
            queried = time.monotonic()
            # The restart in place: seen as a new socket file (a status request would reset the quiet period).
            before = socket_ident(d.dirs.socket)
            deadline = queried + RECYCLE_QUIET_S + 120
            while time.monotonic() < deadline and socket_ident(d.dirs.socket) in (before, None):
                time.sleep(0.5)
            recycled = socket_ident(d.dirs.socket) not in (before, None)
            out["restarted_in_place"] = recycled
            if recycled:
                # The image before stopped while its database rested, so the next one lets it rest again once its
                # start-up work is quiet for 5 s (`Server.rest_soon`): awaited in its log, since a request would
                # make it wait NEXUS_DB_IDLE_S again. What it holds then is a daemon idle for long: no symbol table
                # (let go above), the snapshot mapped, the database resting, a fresh allocator.
                out["rest_after_restart_in_place_s"] = _rest_after_restart(d.dirs.log, limit_s=60)
                out["rss_settled_after_restart_in_place"] = settled(pid, since=time.monotonic(), after_s=5)
                out["bytes_per_symbol_after_restart_in_place"] = (
                    round((out["rss_settled_after_restart_in_place"]["anon"] - idle_anon) * 1024 * 1024 / symbols)
                    if symbols else None
                )
                _, first = timed(lambda: c.request("locate", {"repo": str(root), "query": "main", "limit": 5},
                                                   timeout=600))  # fmt: skip
                out["first_query_after_restart_in_place_s"] = round(first, 3)
                out["rss_after_restart_in_place_query"] = mem_mb(pid)
            print(f"[{name}] restarted in place: {recycled}; {out.get('rss_settled_after_restart_in_place')}, "
                  f"after a query {out.get('rss_after_restart_in_place_query')}", flush=True)
        d.stop()
        d.start()
        with connect(d.dirs, timeout=600) as c:
            _, first = timed(lambda: c.request("locate", {"repo": str(root), "query": "main", "limit": 5}, timeout=600))
            out["first_query_after_restart_s"] = round(first, 3)
            assert d.proc is not None
            out["rss_after_restart_query"] = {"daemon": mem_mb(d.proc.pid), "parsers": parsers(d.proc.pid)}
            print(f"[{name}] first query after restart {first:.3f}s; {out['rss_after_restart_query']}", flush=True)
            # A restarted daemon builds its sync engine (facts, symbol table) from the facts cache at its first
            # edit: what a daemon started at login holds once it is used, settled like the reading above.
            target = _edit_target(root)
            target.write_text(target.read_text() + "\n\ndef memory_bench_restart_edit(x):\n    return x\n")
            _, edit = timed(lambda: c.request("sync", {"repo": str(root)}, timeout=600))
            out["first_edit_after_restart_s"] = round(edit, 3)
            out["rss_settled_after_restart_edit"] = settled(d.proc.pid, since=time.monotonic())
        print(f"[{name}] first edit after restart {edit:.2f}s; settled {out['rss_settled_after_restart_edit']}", flush=True)
    return out


def defaults_row(name: str, root: Path, watch_s: float) -> dict[str, Any]:
    """The daemon as a user runs it, every setting at its default: cold index, the queries, then its RSS read
    every second for `watch_s` seconds with no request (so its own idle upkeep runs: the snapshot's save, the
    checkpoint, a restart in place once its allocator keeps NEXUS_RECYCLE_MB freed, which brings the symbol
    table back at once), then one query and one edit, each followed by a settled reading."""
    out: dict[str, Any] = {"corpus": name, "watch_s": watch_s}
    with BenchDaemon() as d:
        assert d.proc is not None
        pid = d.proc.pid
        wait_builder(pid)
        with connect(d.dirs, timeout=3600) as c:
            r, cold = timed(lambda: c.request("index", {"repo": str(root)}, timeout=3600))
            out["cold_wall_s"] = round(cold, 3)
            out["symbols"] = int(r["written"].get("symbols") or 0)
            for q in QUERIES:
                c.request("locate", {"repo": str(root), "query": q, "limit": 20}, timeout=600)
            queried = time.monotonic()
            out["rss_right_after_queries"] = mem_mb(pid)
            before = socket_ident(d.dirs.socket)
            timeline: list[dict[str, float]] = []
            restarts: list[float] = []
            while time.monotonic() - queried < watch_s:
                time.sleep(1.0)
                ident = socket_ident(d.dirs.socket)
                if ident not in (before, None):  # a new socket file: the daemon restarted itself in place
                    restarts.append(round(time.monotonic() - queried, 1))
                    before = ident
                timeline.append({"s": round(time.monotonic() - queried, 1), **mem_mb(pid)})
            out["timeline"] = timeline
            out["restarts_in_place_at_s"] = restarts
            last = [t for t in timeline if t["s"] >= watch_s - 30]
            out["rss_last_30_s"] = {key: statistics.median(t[key] for t in last) for key in ("rss", "anon")}
            out["rss_max_after_queries"] = {key: max(t[key] for t in timeline) for key in ("rss", "anon")}
            _, first = timed(lambda: c.request("locate", {"repo": str(root), "query": "main", "limit": 5}, timeout=600))
            out["query_after_watch_s"] = round(first, 3)
            out["rss_settled_after_query"] = settled(pid, since=time.monotonic(), after_s=5)
            target = _edit_target(root)
            target.write_text(target.read_text() + "\n\ndef memory_bench_defaults_edit(x):\n    return x\n")
            _, edit = timed(lambda: c.request("sync", {"repo": str(root)}, timeout=600))
            out["edit_after_watch_s"] = round(edit, 3)
            out["rss_settled_after_edit"] = settled(pid, since=time.monotonic(), after_s=5)
    shown = {k: v for k, v in out.items() if k != "timeline"}
    print(f"[{name} defaults] {shown}", flush=True)
    return out


def restart_gap_row(name: str, root: Path, runs: int = 2) -> dict[str, Any]:
    """What a restart in place costs a question: with every setting at its default, the cold index, then from the
    moment the daemon's log says it restarts in place (NEXUS_RECYCLE_AFTER_INDEX_S after the index, when its
    allocator keeps NEXUS_RECYCLE_MB it freed) a `locate` every 50 ms for 5 s: the slowest is what a question
    asked at the worst moment waits (the client waits for the next image and sends it again). A run with no
    restart within 60 s says so (the allocator kept less than NEXUS_RECYCLE_MB)."""
    out: dict[str, Any] = {"corpus": name, "restarted": [], "slowest_answer_s": [], "asked_after_index_s": []}
    for _ in range(runs):
        with BenchDaemon(env={"NEXUS_LOG_LEVEL": "INFO"}) as d:  # (the bench's WARNING would hide the restart's line)
            assert d.proc is not None
            wait_builder(d.proc.pid)
            with connect(d.dirs, timeout=3600) as c:
                c.request("index", {"repo": str(root)}, timeout=3600)
                indexed = time.monotonic()
                while "restarting in place" not in d.dirs.log.read_text(errors="replace"):
                    if time.monotonic() - indexed > 60:
                        break
                    time.sleep(0.005)
                else:
                    out["asked_after_index_s"].append(round(time.monotonic() - indexed, 1))
                    slowest, until = 0.0, time.monotonic() + 5
                    while time.monotonic() < until:
                        _, took = timed(lambda: c.request("locate", {"repo": str(root), "query": "main", "limit": 5},
                                                          timeout=600))  # fmt: skip
                        slowest = max(slowest, took)
                        time.sleep(0.05)
                    out["slowest_answer_s"].append(round(slowest, 3))
                    out["restarted"].append(True)
                    continue
                out["restarted"].append(False)
    print(f"[{name} restart gap] {out}", flush=True)
    return out


def _edit_target(root: Path) -> Path:
    """The file the corpus rows edit: the first Python file of some size, in path order."""
    return next(p for p in sorted(root.rglob("*.py")) if p.stat().st_size > 200)


def parsers_idle_row(root: Path, wait_s: float) -> dict[str, Any]:
    """Index, let the daemon idle, then look at its parser processes and time the next parses."""
    env = {"NEXUS_NO_WATCH": "1"}
    with BenchDaemon(env=env) as d:
        assert d.proc is not None
        pid = d.proc.pid
        with connect(d.dirs, timeout=600) as c:
            c.request("index", {"repo": str(root)}, timeout=600)
            out: dict[str, Any] = {"after_index": parsers(pid)}
            time.sleep(wait_s)
            out["idle_wait_s"] = wait_s
            out["after_idle"] = parsers(pid)
            out["daemon_after_idle"] = mem_mb(pid)
            files = sorted(root.rglob("m*.py"))
            one = files[0]
            one.write_text(one.read_text() + "\n\ndef idle_edit_0(x):\n    return x\n")
            # Explicit paths (what the watcher hands the writer): the time is the parse and the write, no walk.
            rel = [str(one.relative_to(root))]
            r, secs = timed(lambda: c.request("sync", {"repo": str(root), "paths": rel}, timeout=600))
            assert r.get("parsed") == 1, r
            out["one_file_sync_after_idle_ms"] = round(secs * 1000, 1)
            out["one_file_phases_s"] = r.get("seconds")
            out["one_file_after"] = parsers(pid)
            time.sleep(wait_s)
            many = files[1:41]
            for f in many:
                f.write_text(f.read_text() + "\n\ndef idle_edit_1(x):\n    return x\n")
            rels = [str(f.relative_to(root)) for f in many]
            r, secs = timed(lambda: c.request("sync", {"repo": str(root), "paths": rels}, timeout=600))
            out["many_file_sync_after_idle_ms"] = round(secs * 1000, 1)
            out["many_file_phases_s"] = r.get("seconds")
            out["many_files"] = len(many)
            out["many_parsed"] = r.get("parsed")
            out["after_many"] = parsers(pid)
    print(f"[parsers-idle] {out}", flush=True)
    return out


def symbols_row(name: str, root: Path) -> dict[str, Any]:
    """The Python heap of one indexed repository, part by part (tracemalloc deltas, MB and bytes per symbol):
    facts as the engine keeps them, the symbol table, resolutions + the resolver's memo, the memo released, the
    query snapshot built from the same facts and resolutions."""
    import gc
    import tracemalloc

    from nexusd.query import compact
    from nexusd.query.snapshot import Snapshot
    from nexusd.resolve.base import RepoIndex
    from nexusd.sync.indexer import MAX_FILE_BYTES, intern_facts
    from nexusd.sync.parsepool import ParsePool, ParseTask
    from nexusd.sync.walk import WalkRules

    tasks = [ParseTask(e.path) for e in WalkRules(str(root), MAX_FILE_BYTES).walk()]
    gc.collect()
    tracemalloc.start(1)
    base = tracemalloc.get_traced_memory()[0]
    marks: dict[str, int] = {}

    def mark(label: str) -> None:
        gc.collect()
        marks[label] = tracemalloc.get_traced_memory()[0] - base

    pool = ParsePool(2)
    facts = {}
    try:
        for outcome in pool.run(str(root), tasks, MAX_FILE_BYTES):
            if outcome.facts is not None:
                facts[outcome.path] = intern_facts(outcome.facts)
    finally:
        pool.close()
    mark("facts")
    index = RepoIndex("r-symbols", root)
    for f in facts.values():
        index.set_file(f)
    mark("index")
    t0 = time.perf_counter()
    res = {p: index.resolve_file(p) for p in sorted(facts)}
    resolve_s = time.perf_counter() - t0
    mark("resolutions+memo")
    index.release_memo()
    mark("memo released")
    t0 = time.perf_counter()
    snap = Snapshot("r-symbols")
    snap.build([(p, (facts[p], res[p])) for p in sorted(facts)], 1)
    build_s = time.perf_counter() - t0
    mark("snapshot (dict form)")
    t0 = time.perf_counter()
    snap.to_compact()  # what the daemon keeps: the arrays (query/compact.py)
    freeze_s = time.perf_counter() - t0
    mark("snapshot")
    symbols = len(snap.by_id)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    with tempfile.TemporaryDirectory() as tmp:
        assert snap.frozen is not None
        stamp = compact.stamp_of("r-symbols", 1, None)
        t0 = time.perf_counter()
        size = compact.save(snap.frozen, Path(tmp) / "s.snap", stamp)
        save_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = Snapshot("r-symbols")
        again.adopt(compact.load_file(Path(tmp) / "s.snap", stamp), 1)
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        hits = sum(1 for _ in again.live(again.name_lower.get("main", ())))
        first_lookup_ms = (time.perf_counter() - t0) * 1000
        del again
    file_row = {"bytes": size, "bytes_per_symbol": round(size / symbols) if symbols else None,
                "save_s": round(save_s, 3), "load_s": round(load_s, 3),
                "first_lookup_ms": round(first_lookup_ms, 2), "lookup_hits": hits}  # fmt: skip
    parts = {
        "facts": marks["facts"],
        "symbol table": marks["index"] - marks["facts"],
        "resolutions": marks["memo released"] - marks["index"],
        "resolver memo (released after each batch)": marks["resolutions+memo"] - marks["memo released"],
        "snapshot": marks["snapshot"] - marks["memo released"],
        "snapshot before compaction (dict form, not kept)": marks["snapshot (dict form)"] - marks["memo released"],
    }
    kept = marks["snapshot"]
    out = {"corpus": name, "files": len(facts), "symbols": symbols, "resolve_s": round(resolve_s, 2),
           "snapshot_build_s": round(build_s, 2), "snapshot_compact_s": round(freeze_s, 2), "snapshot_file": file_row,
           "mb": {k: round(v / 2**20, 1) for k, v in parts.items()},
           "bytes_per_symbol": {k: round(v / symbols) for k, v in parts.items()} if symbols else {},
           "kept_mb": round(kept / 2**20, 1), "kept_bytes_per_symbol": round(kept / symbols) if symbols else None,
           "peak_mb": round(peak / 2**20, 1)}
    del snap, res, index, facts
    gc.collect()
    print(f"[symbols {name}] {out}", flush=True)
    return out


def svg_chart(rows: list[dict[str, Any]]) -> str:
    """Two panels, one point per corpus: daemon RSS after queries (MB) against symbols, and cold index wall time (s)
    against files."""
    panels = [("daemon RSS after queries (MB) vs symbols", "symbols", lambda r: r["cold"]["symbols"],
               lambda r: r["rss_after_queries"]["daemon"]["rss"]),
              ("cold index wall (s) vs files", "files", lambda r: r["cold"]["files"] or 0, lambda r: r["cold"]["wall_s"])]
    width, height, pw, ph, left, top = 900, 380, 360, 260, 70, 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">']
    for n, (title, xlabel, fx, fy) in enumerate(panels):
        x0 = left + n * (pw + 90)
        pts = [(r["corpus"], float(fx(r)), float(fy(r))) for r in rows]
        xmax = max((p[1] for p in pts), default=1.0) * 1.1 or 1.0
        ymax = max((p[2] for p in pts), default=1.0) * 1.15 or 1.0
        out.append(f'<text x="{x0}" y="{top - 20}" font-size="13">{title}</text>')
        out.append(f'<line x1="{x0}" y1="{top + ph}" x2="{x0 + pw}" y2="{top + ph}" stroke="black"/>')
        out.append(f'<line x1="{x0}" y1="{top}" x2="{x0}" y2="{top + ph}" stroke="black"/>')
        out.append(f'<text x="{x0 + pw - 40}" y="{top + ph + 28}">{xlabel}</text>')
        for k in range(5):
            yv = ymax * k / 4
            yy = top + ph - ph * k / 4
            out.append(f'<text x="{x0 - 8}" y="{yy + 4:.1f}" text-anchor="end">{yv:.0f}</text>')
            xv = xmax * k / 4
            out.append(f'<text x="{x0 + pw * k / 4:.1f}" y="{top + ph + 14}" text-anchor="middle">{xv:,.0f}</text>')
        prev = None
        for label, xv, yv in sorted(pts, key=lambda p: p[1]):
            cx, cy = x0 + pw * xv / xmax, top + ph - ph * yv / ymax
            if prev is not None:
                out.append(f'<line x1="{prev[0]:.1f}" y1="{prev[1]:.1f}" x2="{cx:.1f}" y2="{cy:.1f}" stroke="#2b6cb0"/>')
            prev = (cx, cy)
            out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="#2b6cb0"/>')
            out.append(f'<text x="{cx + 6:.1f}" y="{cy - 6:.1f}">{label}: {yv:,.1f}</text>')
    out.append("</svg>")
    return "\n".join(out)


def wire_row(limit: int = 250) -> dict[str, Any]:
    """What shipping parse outcomes back costs: pickled objects (before) against the msgpack arrays the workers
    send now, over the standard library's top-level modules (CPU seconds in this process)."""
    import pickle
    import sysconfig

    from nexusd.sync.parsepool import ParseTask, decode_outcome, encode_outcome, process_one

    root = Path(sysconfig.get_paths()["stdlib"])
    files = [str(p.relative_to(root)) for p in sorted(root.glob("*.py"))][:limit]
    c0 = time.process_time()
    outs = [process_one(str(root), ParseTask(f), 2_000_000) for f in files]
    extract = time.process_time() - c0

    def cpu(fn: Any, items: list[Any]) -> tuple[list[Any], float]:
        t0 = time.process_time()
        res = [fn(x) for x in items]
        return res, round(time.process_time() - t0, 3)

    pickled, p_dump = cpu(lambda o: pickle.dumps(o, protocol=pickle.HIGHEST_PROTOCOL), outs)
    _, p_load = cpu(pickle.loads, pickled)
    packed, m_enc = cpu(encode_outcome, outs)
    back, m_dec = cpu(decode_outcome, packed)
    assert back == outs
    out = {"files": len(outs), "extract_cpu_s": round(extract, 3),
           "pickle": {"encode_s": p_dump, "decode_s": p_load, "mb": round(sum(map(len, pickled)) / 1e6, 2)},
           "msgpack": {"encode_s": m_enc, "decode_s": m_dec, "mb": round(sum(map(len, packed)) / 1e6, 2)}}
    print(f"[wire] {out}", flush=True)
    return out


def _paired(a: list[str], b: list[str], n: int, env: dict[str, str]) -> tuple[float, float]:
    """Medians of two commands run alternately, so a change in the machine's load reaches both alike."""
    sa, sb = [], []
    for _ in range(n):
        for cmd, out in ((a, sa), (b, sb)):
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            out.append(time.perf_counter() - t0)
    return statistics.median(sa), statistics.median(sb)


def _interleaved(cmds: dict[str, list[str]], n: int, env: dict[str, str]) -> dict[str, list[float]]:
    """Wall seconds of each command, run in turn n times (a change in the machine's load reaches all alike)."""
    out: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(n):
        for name, cmd in cmds.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            out[name].append(time.perf_counter() - t0)
    return out


def status_paths_row(work: Path, repos: int = 5, n: int = 21) -> dict[str, Any]:
    """`nexus status` with five repositories through the console entry point (the start-up path without click,
    client/fast.py) and through the click group alone (what every command paid before), against
    `python -c pass`, interleaved: min and median of each, and the ratios."""
    nexus = str(Path(sys.executable).parent / "nexus")
    click_script = work / "nexus_click.py"
    click_script.write_text("import sys\nfrom nexus_client.cli_group import run\nsys.exit(run())\n")
    with BenchDaemon(env={"NEXUS_NO_WATCH": "1"}) as d:
        assert d.proc is not None
        env = dict(d.env)
        with connect(d.dirs, timeout=600) as c:
            for i in range(repos):
                root = generate(work / f"status{i}", 200)
                c.request("index", {"repo": str(root)}, timeout=600)
            quiet = quiesce(d.proc.pid)
            runs = _interleaved({"pass": [sys.executable, "-c", "pass"], "fast": [nexus, "status"],
                                 "click": [sys.executable, str(click_script), "status"]}, n, env)  # fmt: skip
    stats = {k: {"min_ms": round(min(v) * 1000, 1), "median_ms": round(statistics.median(v) * 1000, 1)}
             for k, v in runs.items()}  # fmt: skip
    base_min, base_med = min(runs["pass"]), statistics.median(runs["pass"])
    out = {"runs": n, "repos": repos, "quiesce_s": quiet, "ms": stats,
           "ratio_min": {k: round(min(runs[k]) / base_min, 2) for k in ("fast", "click")},
           "ratio_median": {k: round(statistics.median(runs[k]) / base_med, 2) for k in ("fast", "click")}}  # fmt: skip
    print(f"[status paths] {out}", flush=True)
    return out


def status_row(work: Path, repos: int = 5, n: int = 15) -> dict[str, Any]:
    nexus = str(Path(sys.executable).parent / "nexus")
    with BenchDaemon(env={"NEXUS_NO_WATCH": "1"}) as d:
        assert d.proc is not None
        env = dict(d.env)
        with connect(d.dirs, timeout=600) as c:
            quiesce(d.proc.pid)
            empty_op = _op_ms(c, n)
            base_empty, empty = _paired([sys.executable, "-c", "pass"], [nexus, "status"], n, env)
            for i in range(repos):
                root = generate(work / f"status{i}", 200)
                c.request("index", {"repo": str(root)}, timeout=600)
            quiet = quiesce(d.proc.pid)
            op_ms = _op_ms(c, n)
            base, full = _paired([sys.executable, "-c", "pass"], [nexus, "status"], n, env)
            base_i, imp = _paired([sys.executable, "-c", "pass"], [sys.executable, "-c", "import nexus_client.cli"], n, env)
    out = {"client_import_ms": round(imp * 1000, 1), "client_import_ratio": round(imp / base_i, 2),"python_c_pass_ms": round(base * 1000, 1), "status_empty_ms": round(empty * 1000, 1),
           "status_5_repos_ms": round(full * 1000, 1), "ratio_5_repos": round(full / base, 2),
           "ratio_empty": round(empty / base_empty, 2), "python_c_pass_ms_empty_run": round(base_empty * 1000, 1),
           "op_ms_empty": empty_op, "op_ms_5_repos": op_ms, "repos": repos, "quiesce_s": quiet}
    print(f"[status] {out}", flush=True)
    return out


def _op_ms(c: Any, n: int) -> float:
    samples = []
    for _ in range(n):
        _, s = timed(lambda: c.request("status", {}, timeout=60))
        samples.append(s)
    return round(statistics.median(samples) * 1000, 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", action="append", choices=["none", "gen1k", "gen5k", "gen20k", "stdlib"])
    ap.add_argument("--idle-wait", type=float, default=60.0, help="seconds of idling before the parser row")
    ap.add_argument("--skip-idle", action="store_true", help="skip the parsers-idle row")
    ap.add_argument("--skip-status", action="store_true")
    ap.add_argument("--symbols", action="store_true", help="the symbols row (heap by part) per corpus chosen")
    ap.add_argument("--skip-daemon", action="store_true", help="no daemon rows per corpus (with --symbols)")
    ap.add_argument("--status-paths", action="store_true",
                    help="only `nexus status` with and without click, interleaved (-> bench/results/status_paths.json)")
    ap.add_argument("--defaults", type=float, default=0.0, metavar="SECONDS",
                    help="per corpus, also the daemon with every setting at its default, watched this long after the queries")
    ap.add_argument("--restart-gap", action="store_true",
                    help="per corpus, also how long a question sent as the daemon restarts in place waits (defaults)")
    ap.add_argument("--out", default="memory_bench", help="result name under bench/results/")
    opts = ap.parse_args()
    if opts.status_paths:
        work = Path(tempfile.mkdtemp(prefix="nxmem-"))
        try:
            path = write_result("status_paths", {"status_paths": status_paths_row(work), "target_ratio": 3.5})
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"wrote {path}")
        return
    chosen = opts.corpus if opts.corpus is not None else ["gen1k"]
    work = Path(tempfile.mkdtemp(prefix="nxmem-"))
    result: dict[str, Any] = {}
    try:
        result["idle"] = idle_row()
        idle_anon = result["idle"]["daemon"]["anon"]
        result["idle_breakdown"] = idle_breakdown_row()
        result["wire"] = wire_row()
        if not opts.skip_status:
            result["status"] = status_row(work)
        if not opts.skip_idle:
            result["parsers_idle"] = parsers_idle_row(generate(work / "idle", 300), opts.idle_wait)
        rows = []
        sym_rows = []
        defaults_rows: list[dict[str, Any]] = []
        gap_rows: list[dict[str, Any]] = []
        for name in chosen:
            if name == "none":
                continue
            if name == "stdlib":
                root = copy_stdlib(work / "stdlib")
            else:
                root = generate(work / name, {"gen1k": 1000, "gen5k": 5000, "gen20k": 20000}[name])
            if opts.symbols:
                sym_rows.append(symbols_row(name, root))
            if not opts.skip_daemon:
                rows.append(corpus_row(name, root, idle_anon))
            if opts.defaults:
                defaults_rows.append(defaults_row(name, root, opts.defaults))
            if opts.restart_gap:
                gap_rows.append(restart_gap_row(name, root))
            shutil.rmtree(root, ignore_errors=True)
        result["corpora"] = rows
        if sym_rows:
            result["symbols"] = sym_rows
        if defaults_rows:
            result["defaults"] = defaults_rows
        if gap_rows:
            result["restart_gap"] = gap_rows
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["targets"] = {"idle_mb": 60, "stdlib_after_queries_mb": 300, "bytes_per_symbol": 1536, "parser_idle_workers": 1,
                         "first_parse_after_idle_ms": 100, "stdlib_cpu_vs_parse_only": 2.5, "stdlib_wall_vs_parse_only": 2.0,
                         "gen1k_wall_vs_parse_only": 4.0, "first_query_s": 0.2, "status_ratio": 3.5}
    path = write_result(opts.out, result)
    print(f"wrote {path}")
    if result["corpora"]:
        chart = path.with_suffix(".svg")
        chart.write_text(svg_chart(result["corpora"]) + "\n")
        print(f"wrote {chart}")


if __name__ == "__main__":
    os.environ.setdefault("NEXUS_LOG_LEVEL", "WARNING")
    main()
