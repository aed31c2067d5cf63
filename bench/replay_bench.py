"""How long a start that rebuilds memory from the journal takes before the daemon answers, by what the journal holds.

    .venv/bin/python bench/replay_bench.py [--facts 1500] [--out replay_bench]

Two journals of the same length, written through a real daemon into one small registered repository: `kept`
(facts remembered and kept) and `churn` (the same number of facts, two thirds of them forgotten again by id, as an
agent that remembers and forgets a lot; the journal then also holds the forget records). For each, the daemon is
killed, its database deleted (what a set-aside does), and started again: the seconds from start to a `hello`
answer, and `status` -> memory (`replayed`, `replaySkipped`). A replay skips the records whose every effect a later
forget removes (memory/service.py `Forgotten`), so `churn` should cost about what its kept third costs.
Writes bench/results/<out>.json.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nexus_client import connect  # noqa: E402

from bench.harness import BenchDaemon, write_result  # noqa: E402
from tests.helpers import lose_database, make_repo  # noqa: E402


def one(kind: str, facts: int) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="nx-replay-"))
    try:
        root = str(make_repo(base / "repo", {"pkg/mod.py": "def entry():\n    return 1\n"}))
        with BenchDaemon(env={"NEXUS_NO_WATCH": "1"}) as d:
            with connect(d.dirs, timeout=120) as c:
                c.request("index", {"repo": root})
                ids = [c.request("remember", {"repo": root, "text": f"fact number {n} about entry", "about": "entry"})["id"]
                       for n in range(facts)]  # fmt: skip
                if kind == "churn":
                    gone = [i for n, i in enumerate(ids) if n % 3]
                    for k in range(0, len(gone), 50):
                        c.request("memory.forget", {"repo": root, "ids": gone[k : k + 50]})
                journal_seq = c.request("status")["memory"]["journalSeq"]
            assert d.proc is not None
            d.proc.kill()
            d.proc.wait()
            lose_database(d.dirs.db)
            t0 = time.perf_counter()
            d.start()
            with connect(d.dirs, timeout=600) as c:
                answered = time.perf_counter() - t0
                memory = c.request("status")["memory"]
        return {"kind": kind, "facts": facts, "journalSeq": journal_seq, "start_to_hello_s": round(answered, 2),
                "replayed": memory["replayed"], "replaySkipped": memory.get("replaySkipped"),
                "searchable": memory["searchable"]}  # fmt: skip
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=1500)
    ap.add_argument("--out", default="replay_bench")
    args = ap.parse_args()
    rows = []
    for kind in ("kept", "churn", "kept", "churn"):  # interleaved, twice
        row = one(kind, args.facts)
        print(row, flush=True)
        rows.append(row)
    print(write_result(args.out, {"rows": rows}))


if __name__ == "__main__":
    main()
