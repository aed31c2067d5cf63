"""A really large repository: the Linux kernel tree (Debian's `linux-source`), indexed by one daemon.

    apt-get install linux-source            # ships /usr/src/linux-source-<v>.tar.xz (~140 MB)
    tar xJf /usr/src/linux-source-*.tar.xz -C /some/dir
    .venv/bin/python bench/scale_bench.py --tree /some/dir/linux-source-6.1 [--edits 10] [--out scale_bench]

Rows (printed, and written to bench/results/<out>.json):
- the cold `index` of the tree: wall, CPU (daemon plus parser processes), files, symbols, calls, the phases, and
  the daemon's peak RSS (parsers separately) sampled every 0.5 s while it runs, and a series every 2 s
  (`rss_series_during_index`: which phase holds the memory);
- a small repository's `locate` latency while the big one indexes (another client, every 0.5 s): queries of
  other repositories must not starve;
- the RSS after the index and after a handful of queries, and the first query's latency;
- a no-op `sync` of the tree with the watcher on (nothing changed: the watcher knows), and a one-file edit to
  queryable (a new function appended to a `.c` file, polled with `locate` until it is found): back to back
  (0.3 s apart: each edit's write waits for the checkpoint of the one before, `Store.checkpoint_before_delete`),
  and 5 s apart after 35 s of quiet (the writer's idle checkpoint runs between edits, and the first edit comes
  while the query snapshot's save is compacting, which must give way to it); and edits that add a line at
  the file's top, 0.3 s apart (every symbol below moves: nothing is deleted, line columns are rewritten);
- what broke (any error is recorded, not raised, so a partial run still writes its figures).

Debian's tree ships a `.gitignore` whose last block ignores every top-level entry (`/*`, `!/debian/`: its
packaging repository's rule). The bench re-includes them with a `.nexusignore` of `!/*`, as a user would.

Targets (the issue on a light daemon): cold index <= 8 min on 2 cores, RSS <= 2.5 GB, no-op <= 0.1 s with the
watcher, one-file edit <= 0.3 s.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus_client import connect  # noqa: E402

from bench.harness import BenchDaemon, percentiles, write_result  # noqa: E402
from bench.memory_bench import mem_mb, parsers, tree_cpu_s  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
QUERIES = ["kmalloc", "schedule", "mutex_lock", "ext4_fill_super", "tcp_sendmsg"]


def small_repo(work: Path) -> Path:
    root = work / "small"
    shutil.copytree(REPO / "nexusd", root / "nexusd", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def sample_while(stop: threading.Event, pid: int, peak: dict[str, float], series: list[list[float]]) -> None:
    """Peaks every 0.5 s into `peak`; every 2 s a row of `series`: [seconds since the start, the daemon's RSS,
    the parsers' RSS, the forked snapshot build's private MB] (which phase of the index holds the memory)."""
    t0 = time.perf_counter()
    last = -2.0
    while not stop.is_set():
        try:
            d = mem_mb(pid)
            p = parsers(pid)
        except OSError:
            break
        if not d:  # the process went between two readings of /proc
            stop.wait(0.5)
            continue
        peak["daemon_rss"] = max(peak.get("daemon_rss", 0.0), d.get("rss", 0.0))
        peak["daemon_anon"] = max(peak.get("daemon_anon", 0.0), d.get("anon", 0.0))
        peak["parsers_rss"] = max(peak.get("parsers_rss", 0.0), float(p["rss_mb"]))
        peak["forked_private"] = max(peak.get("forked_private", 0.0), float(p["forked_private_mb"]))
        peak["total_rss"] = max(peak.get("total_rss", 0.0),
                                d.get("rss", 0.0) + float(p["rss_mb"]) + float(p["forked_private_mb"]))
        now = time.perf_counter() - t0
        if now - last >= 2.0:
            last = now
            series.append([round(now, 1), d.get("rss", 0.0), float(p["rss_mb"]), float(p["forked_private_mb"])])
        stop.wait(0.5)


def probe_small(
    stop: threading.Event, d: BenchDaemon, root: Path, out: list[float], errors: list[str], slow: list[list[float]]
) -> None:
    """`locate` on the small repository every 0.5 s; `slow` gets [seconds since the start, latency] of each over
    0.5 s (set beside the RSS series to see which phase of the big index held the query)."""
    start = time.perf_counter()
    with connect(d.dirs, timeout=120) as c:
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                c.request("locate", {"repo": str(root), "query": "Daemon", "limit": 5}, timeout=120)
                out.append(time.perf_counter() - t0)
                if out[-1] > 0.5:
                    slow.append([round(t0 - start, 1), round(out[-1], 2)])
            except Exception as exc:  # noqa: BLE001 - recorded as what broke
                errors.append(f"small-repo locate: {exc!r}")
            stop.wait(0.5)


# When each edit was written (wall clock, as the daemon's log writes it): with NEXUS_SLOW_SYNC_MS=0 every sync is
# logged when it ends, with its phases, so an edit's time splits into before its sync, the sync, and after it.
WROTE_AT: list[str] = []


def timed_edits(
    target: Path, n: int, gap_s: float, edit: Callable[[bytes, int], bytes], ready: Callable[[int], bool], what: str
) -> list[float]:
    """`n` edits of `target` (edit `i` writes `edit(original bytes, i)`), each timed until `ready(i)` answers
    yes (polled every 5 ms, 60 s at most), `gap_s` apart; the file's bytes are put back at the end."""
    original = target.read_bytes()
    samples = []
    try:
        for i in range(n):
            t0 = time.perf_counter()
            WROTE_AT.append(f"{what} {i} {datetime.datetime.now().strftime('%H:%M:%S.%f')[:-3]}")
            target.write_bytes(edit(original, i))
            while not ready(i):
                if time.perf_counter() - t0 > 60:
                    raise RuntimeError(f"{what} {i} not queryable after 60 s")
                time.sleep(0.005)
            samples.append(time.perf_counter() - t0)
            time.sleep(gap_s)
    finally:
        target.write_bytes(original)
    return samples


def edit_to_queryable(c: Any, tree: Path, n: int, gap_s: float = 0.3, tag: str = "") -> dict[str, Any]:
    """`n` edits of kernel/sys.c (a new function appended), each polled with `locate` until it is found, `gap_s`
    apart."""
    target = tree / "kernel" / "sys.c"

    def found(i: int) -> bool:
        hits = c.request("locate", {"repo": str(tree), "query": f"scale_bench_fn_{tag}{i}", "limit": 1}, timeout=120)
        return bool(hits["results"]) and hits["results"][0]["name"] == f"scale_bench_fn_{tag}{i}"

    def append(data: bytes, i: int) -> bytes:
        return data + f"\nint scale_bench_fn_{tag}{i}(void)\n{{\n\treturn {i};\n}}\n".encode()

    samples = timed_edits(target, n, gap_s, append, found, "edit")
    return {"file": str(target.relative_to(tree)), "gap_s": gap_s, **percentiles(samples),
            "samples": [round(x, 3) for x in samples]}  # fmt: skip


def shifting_edits(c: Any, tree: Path, n: int, gap_s: float = 0.3) -> dict[str, Any]:
    """`n` edits of kernel/sys.c that each add a comment line at its top (every symbol below moves down a line,
    the way an added include or a longer header comment moves them), each polled with `show` until the file's
    last symbol has its new line, `gap_s` apart. Nothing is deleted, so no edit waits for a checkpoint: what
    this row adds to the appending one above is the cost of rewriting every moved symbol's line columns."""
    target = tree / "kernel" / "sys.c"
    scope = {"repo": str(tree), "path": "kernel/sys.c", "limit": 500}  # (the op's most; a page cut keeps its last the same)
    last = c.request("show", scope, timeout=120)["members"][-1]

    def moved(i: int) -> bool:
        members = c.request("show", scope, timeout=120)["members"]
        return bool(members) and members[-1]["key"] == last["key"] and members[-1]["line"] == last["line"] + i + 1

    samples = timed_edits(target, n, gap_s, lambda data, i: b"/* scale_bench */\n" * (i + 1) + data, moved, "shifting edit")
    return {"file": str(target.relative_to(tree)), "gap_s": gap_s, "moved": last["key"], **percentiles(samples),
            "samples": [round(x, 3) for x in samples]}  # fmt: skip


def database_state(c: Any) -> dict[str, Any]:
    """The database file's size and its last checkpoints' costs (ms waiting, ms checkpointing, WAL kB), from
    `status`: what each edit row left behind."""
    comp = (c.request("status", timeout=120).get("health") or {}).get("compaction") or {}
    return {"fileMB": round((comp.get("fileBytes") or 0) / 2**20, 1), "checkpointMs": comp.get("checkpointMs")}


PROFILE: dict[str, Any] = {}  # --py-spy: {"dir": where the profiles go, "pid": the daemon's}


def edit_row(c: Any, out: dict[str, Any], key: str, label: str, run: Callable[[], dict[str, Any]]) -> None:
    """One row of edits: its figures under `key` (what broke, if it did), printed, and the database it left
    behind (`database_<key>`: the file's size, the last checkpoints). With `--py-spy DIR`, the daemon is sampled
    while the row runs (`DIR/<key>.txt`, py-spy's collapsed stacks; the sampling costs the daemon some time, so
    such a run's figures are not quoted)."""
    spy = None
    if PROFILE:
        spy = subprocess.Popen(["py-spy", "record", "--pid", str(PROFILE["pid"]), "--rate", "200", "--format", "raw",
                                "--output", str(Path(PROFILE["dir"]) / f"{key}.txt")], stdout=subprocess.DEVNULL)  # fmt: skip
        time.sleep(1.0)  # (attached before the first edit)
    try:
        out[key] = run()
    except Exception as exc:  # noqa: BLE001
        out["broke"].append(f"{label}: {exc!r}")
    finally:
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
    print(f"{label} {out.get(key)}", flush=True)
    out[f"database_{key}"] = database_state(c)
    print(f"database {out[f'database_{key}']}", flush=True)


def reinclude_top_level(tree: Path) -> bool:
    gitignore = tree / ".gitignore"
    if gitignore.exists() and "/*" in gitignore.read_text(errors="replace").splitlines():
        (tree / ".nexusignore").write_text("!/*\n")
        return True
    return False


DB_REST_S = 60  # NEXUS_DB_IDLE_S of the bench's daemon: after the edits, its database rests (`rest_row`)


def rest_row(c: Any, out: dict[str, Any], pid: int, tree: Path) -> None:
    """The daemon once its database rested (no statement for DB_REST_S; `status` needs none), then the first
    read of the graph after it (`show` reads a symbol's doc there), which opens it again."""
    deadline = time.monotonic() + DB_REST_S + 60
    while time.monotonic() < deadline and c.request("status", {})["daemon"].get("database") != "resting":
        time.sleep(2.0)
    rested = c.request("status", {})["daemon"].get("database") == "resting"
    out["database_rested"] = rested
    time.sleep(3.0)  # (the heap's trim follows the close)
    out["rss_after_db_rest"] = {"daemon": mem_mb(pid), "parsers": parsers(pid)}
    hit = c.request("locate", {"repo": str(tree), "query": "kmalloc", "limit": 1}, timeout=600)["results"][0]
    t0 = time.perf_counter()
    c.request("show", {"repo": str(tree), "symbol": hit["key"]}, timeout=600)
    out["first_graph_read_after_rest_s"] = round(time.perf_counter() - t0, 3)
    out["rss_after_graph_read"] = {"daemon": mem_mb(pid)}
    print(f"database rested: {rested}; {out['rss_after_db_rest']}; the next graph read "
          f"{out['first_graph_read_after_rest_s']}s, then {out['rss_after_graph_read']}", flush=True)


def run(tree: Path, edits: int, out: dict[str, Any]) -> dict[str, Any]:
    """Fills `out` as it goes, so an interrupted run (Ctrl-C, SIGTERM) still leaves what it measured."""
    out.update({"tree": str(tree), "broke": [], "nexusignore_added": reinclude_top_level(tree)})
    work = Path(tempfile.mkdtemp(prefix="nxscale-"))
    try:
        small = small_repo(work)
        with BenchDaemon(env={"NEXUS_LOG_LEVEL": "INFO", "NEXUS_SLOW_SYNC_MS": "0",
                              "NEXUS_DB_IDLE_S": str(DB_REST_S)}) as d:  # (every sync and snapshot save is logged)
            assert d.proc is not None
            pid = d.proc.pid
            if PROFILE:
                PROFILE["pid"] = pid
            with connect(d.dirs, timeout=3600) as c:
                c.request("index", {"repo": str(small)}, timeout=600)
                c.request("locate", {"repo": str(small), "query": "Daemon", "limit": 5}, timeout=600)
                stop = threading.Event()
                peak: dict[str, float] = {}
                small_lat: list[float] = []
                small_err: list[str] = []
                series: list[list[float]] = []
                small_slow: list[list[float]] = []
                threads = [threading.Thread(target=sample_while, args=(stop, pid, peak, series), daemon=True),
                           threading.Thread(target=probe_small, args=(stop, d, small, small_lat, small_err, small_slow),
                                            daemon=True)]
                for t in threads:
                    t.start()
                cpu0 = tree_cpu_s(pid)
                t0 = time.perf_counter()
                try:
                    r = c.request("index", {"repo": str(tree)}, timeout=3600)
                    cold = time.perf_counter() - t0
                    out["cold"] = {"wall_s": round(cold, 1), "cpu_s": round(tree_cpu_s(pid) - cpu0, 1),
                                   "files": r["written"].get("files"), "symbols": r["written"].get("symbols"),
                                   "calls": r["written"].get("calls"), "phases": r.get("seconds")}
                except Exception as exc:  # noqa: BLE001
                    out["broke"].append(f"cold index: {exc!r}")
                    out["cold"] = {"wall_s": round(time.perf_counter() - t0, 1), "failed": True}
                finally:  # also when interrupted: what was sampled so far is kept
                    stop.set()
                    for t in threads:
                        t.join(10)
                    out.setdefault("cold", {"wall_s": round(time.perf_counter() - t0, 1), "interrupted": True,
                                            "cpu_s": round(tree_cpu_s(pid) - cpu0, 1)})
                    out["peak_rss_mb_during_index"] = peak
                    out["rss_series_during_index"] = {"columns": ["s", "daemon_rss", "parsers_rss", "forked_private"],
                                                      "rows": series}  # fmt: skip
                    out["small_repo_locate_during_index"] = percentiles(small_lat)
                    out["small_repo_locate_over_half_a_second"] = small_slow
                    out["broke"] += small_err[:5]
                print(f"cold {out['cold']}\npeak {peak}\nsmall repo during index {out['small_repo_locate_during_index']}",
                      flush=True)
                if out["cold"].get("failed"):
                    return out
                out["rss_after_index"] = {"daemon": mem_mb(pid), "parsers": parsers(pid)}
                t0 = time.perf_counter()
                c.request("locate", {"repo": str(tree), "query": "kmalloc", "limit": 5}, timeout=1800)
                out["first_query_s"] = round(time.perf_counter() - t0, 3)
                lat = []
                for q in QUERIES:
                    t0 = time.perf_counter()
                    c.request("locate", {"repo": str(tree), "query": q, "limit": 20}, timeout=600)
                    lat.append(time.perf_counter() - t0)
                out["warm_locate"] = percentiles(lat)
                out["rss_after_queries"] = {"daemon": mem_mb(pid), "parsers": parsers(pid)}
                print(f"first query {out['first_query_s']}s; warm {out['warm_locate']}; after queries "
                      f"{out['rss_after_queries']}", flush=True)
                time.sleep(2)
                noop = []
                for _ in range(10):
                    t0 = time.perf_counter()
                    rr = c.request("sync", {"repo": str(tree)}, timeout=600)
                    noop.append(time.perf_counter() - t0)
                    out.setdefault("noop_sync_phases", []).append(rr.get("seconds"))
                    if rr.get("mode") != "noop":
                        out["broke"].append(f"no-op sync answered mode {rr.get('mode')!r}")
                out["noop_sync_with_watcher"] = percentiles(noop)
                print(f"no-op sync {out['noop_sync_with_watcher']}", flush=True)
                edit_row(c, out, "one_file_edit_to_queryable", "one-file edit", lambda: edit_to_queryable(c, tree, edits))
                edit_row(c, out, "one_file_edit_shifting", "one-file edit that moves every symbol below it",
                         lambda: shifting_edits(c, tree, edits))  # fmt: skip
                # Quiet long enough for the query snapshot's save to start compacting (30 s after the last
                # batch; minutes on this tree), then edits as a person makes them, seconds apart: the writer's
                # idle checkpoint (2 s after its last work) runs between them instead of before the next delete.
                time.sleep(35)
                edit_row(c, out, "one_file_edit_spaced", "one-file edit, 5 s apart, the first during a snapshot save",
                         lambda: edit_to_queryable(c, tree, edits, gap_s=5.0, tag="spaced_"))  # fmt: skip
                rest_row(c, out, pid, tree)
            shutdown = d.stop()
            out["shutdown_s"] = round(shutdown, 1) if shutdown is not None else None
            print(f"shutdown {out['shutdown_s']} s", flush=True)
            log = d.dirs.state / "nexusd.log"
            if log.exists():  # what the daemon said about slow syncs, snapshot saves and the database
                keep = ("took long", "snapshot", "checkpoint", "compact", "stopp", "cold write", "ERROR", "WARNING")
                out["daemon_log"] = [line[:400] for line in log.read_text(errors="replace").splitlines()
                                     if any(k in line for k in keep)][-200:]  # fmt: skip
            out["edits_written_at"] = WROTE_AT
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", required=True, type=Path, help="an unpacked kernel tree (or any large source tree)")
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument("--out", default="scale_bench")
    ap.add_argument("--py-spy", type=Path, help="sample the daemon during each edit row into this folder (py-spy on PATH)")
    opts = ap.parse_args()
    if opts.py_spy:
        opts.py_spy.mkdir(parents=True, exist_ok=True)
        PROFILE["dir"] = str(opts.py_spy.resolve())
    result: dict[str, Any] = {"targets": {"cold_wall_s": 480, "rss_mb": 2560, "noop_ms": 100, "one_file_edit_ms": 300},
                              "cores": os.cpu_count()}
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    started = time.perf_counter()
    try:
        run(opts.tree.resolve(), opts.edits, result)
    except KeyboardInterrupt:
        result["interrupted_after_s"] = round(time.perf_counter() - started, 1)
        print(f"interrupted after {result['interrupted_after_s']} s; writing what was measured", flush=True)
    print(f"wrote {write_result(opts.out, result)}")


if __name__ == "__main__":
    os.environ.setdefault("NEXUS_LOG_LEVEL", "WARNING")
    main()
