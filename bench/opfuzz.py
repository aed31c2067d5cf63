"""Operation-sequence fuzzing figures (tests/reliability/opfuzz.py) -> bench/results/opfuzz.json.

    python bench/opfuzz.py [--sequences 20000] [--seconds 0] [--seed 20000] [--workers 2] [--flooder]
                           [--warmup 100] [--out opfuzz.json]

Counts sequences, requests, daemon deaths, hangs (no `ping` answer within 1 s after a sequence), `internal`
replies and every error code; samples each daemon's RSS and database size every `--rss-every` sequences and
reports the RSS growth after the warm-up (`--warmup` sequences per worker: one sample against one, and the
median of the last tenth of the samples against the first tenth, `Outcome.rss_growth`), the daemon's reopens
and why (`status`), sequences per second and the daemon's CPU seconds per sequence.

`--workers N` runs N fuzzers side by side, each with its own daemon, repositories and seed (seed + worker
number): the same sequences and checks as one, N times the rate while cores are free. A daemon's writer is
single-threaded and most of its time is Kuzu checkpoints (ARCHITECTURE.md, "What a graph write costs"), so
one fuzzer cannot use a second core. With `--flooder` every daemon has its own client that sent 15,000
requests and never reads."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.reliability.opfuzz import OpFuzzer, Outcome  # noqa: E402


def combined(outs: list[Outcome], seconds: float) -> dict[str, Any]:
    """One summary of every worker's outcome: counts summed, RSS growth per daemon (the worst first)."""
    per = [o.summary() for o in outs]
    codes: dict[str, int] = {}
    ops: dict[str, float] = {}
    for s in per:
        for k, v in s["codes"].items():
            codes[k] = codes.get(k, 0) + v
        for k, v in s["op_seconds"].items():
            ops[k] = round(ops.get(k, 0.0) + v, 1)
    sequences = sum(s["sequences"] for s in per)
    cpu = sum(o.daemon_cpu_s for o in outs)
    growth = [s["rss"] for s in per]
    known = [g["growth_pct"] for g in growth if g["growth_pct"] is not None]
    windowed = [g["window_growth_pct"] for g in growth if g.get("window_growth_pct") is not None]
    return {
        "sequences": sequences,
        "requests": sum(s["requests"] for s in per),
        "deaths": sum(s["deaths"] for s in per),
        "hangs": sum(s["hangs"] for s in per),
        "set_asides": [r for s in per for r in s["set_asides"]],
        "restart_s": [r for s in per for r in s["restart_s"]],
        "internal": codes.get("internal", 0),
        "codes": dict(sorted(codes.items())),
        "seconds": round(seconds, 1),
        "sequences_per_s": round(sequences / seconds, 3) if seconds else None,
        "daemon_cpu_s_per_sequence": round(cpu / sequences, 3) if sequences else None,
        "rss_growth_pct_max": max(known) if known else None,
        "rss_window_growth_pct_max": max(windowed) if windowed else None,
        "workers": [
            {"sequences": s["sequences"], "rss": s["rss"], "compaction": s["compaction"], "rss_kb": s["rss_kb"],
             "db_bytes": s["db_bytes"], "heap": s["heap"],
             "daemon_cpu_s_per_sequence": s["daemon_cpu_s_per_sequence"]}
            for s in per
        ],  # fmt: skip
        "op_seconds": dict(sorted(ops.items(), key=lambda kv: -kv[1])),
        "failures": [f for s in per for f in s["failures"]][:20],
        "internal_messages": [m for s in per for m in s["internal_messages"]][:20],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sequences", type=int, default=20_000, help="in all, shared between the workers")
    ap.add_argument("--seconds", type=float, default=0.0, help="stop after this long (0: no bound)")
    ap.add_argument("--seed", type=int, default=20_000)
    ap.add_argument("--repos", type=int, default=4)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="fuzzers side by side")
    ap.add_argument("--warmup", type=int, default=100, help="sequences per worker before RSS growth is measured")
    ap.add_argument("--rss-every", type=int, default=25, help="sample RSS and database size this often")
    ap.add_argument("--census", type=int, default=0,
                    help="every this many sequences, where each daemon's memory sits (`debug.heap`; 0: never)")
    ap.add_argument("--flooder", action="store_true", help="keep a client connected that never reads")
    ap.add_argument("--out", default="opfuzz.json", help="result file name under bench/results/")
    args = ap.parse_args()
    out_path = Path(__file__).resolve().parent / "results" / args.out
    fuzzers = [OpFuzzer(repos=args.repos, census=args.census) for _ in range(args.workers)]
    outs: list[Outcome] = [Outcome() for _ in fuzzers]
    errors: list[BaseException] = []
    lock = threading.Lock()
    t0 = time.monotonic()

    def write() -> None:
        summary = combined(outs, time.monotonic() - t0)
        summary.update(seed=args.seed, flooder=args.flooder, workers_count=args.workers, repos=args.repos)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        with lock:
            out_path.write_text(json.dumps(summary, indent=1, default=str))

    def work(w: int) -> None:
        def progress(out: Outcome) -> None:
            outs[w] = out
            write()

        try:
            share = args.sequences // args.workers + (1 if w < args.sequences % args.workers else 0)
            outs[w] = fuzzers[w].campaign(
                share, args.seed + w, time_budget_s=args.seconds or None, rss_every=args.rss_every,
                warmup=args.warmup, on_progress=progress,
            )  # fmt: skip
        except BaseException as exc:  # reported after the others finish
            errors.append(exc)

    try:
        if args.flooder:
            for fz in fuzzers:
                fz.connect_flooder()
        threads = [threading.Thread(target=work, args=(w,), name=f"fuzzer-{w}") for w in range(args.workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        write()
        summary = json.loads(out_path.read_text())
        print(json.dumps({k: v for k, v in summary.items() if k not in ("failures", "workers")}))
        for w in summary["workers"]:
            db = w["db_bytes"][-1] if w["db_bytes"] else None
            print(json.dumps({"sequences": w["sequences"], "rss": w["rss"],
                              "db_mb_end": round(db[1] / 1e6, 1) if db else None,
                              "wal_mb_end": round(db[2] / 1e6, 1) if db else None}))  # fmt: skip
        if errors:
            raise errors[0]
    finally:
        for fz in fuzzers:
            fz.close()


if __name__ == "__main__":
    main()
