"""Crash trials: `kill -9` the daemon at a random moment of a cold index, an incremental sync or a burst of
memory writes, restart it, and check what survived. Used by tests/reliability/test_crash.py (a few trials in
the default run, 20 each under `-m slow`) and by bench/crash_trials.py (which writes the figures).

After each kill the oracle is:
- the daemon starts again (a database it cannot open is moved aside, which is counted, not failed);
- before any new sync, every File node's symbols are the extraction of content we wrote under that path
  (its last good extraction; files not written yet are absent, and the next sync picks them up);
- the next sync completes, and then the graph equals a fresh extraction of the files on disk
  (`common.consistency_problems`);
- every memory write that was acknowledged before the kill is in the graph.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess, make_repo
from tests.reliability.common import (
    consistency_problems,
    make_py_repo,
    mutate_repo,
    q,
    record_versions,
    snapshot_problems,
)


@dataclass
class Trial:
    kind: str
    n: int
    kill_after_s: float
    op_acknowledged: bool = False  # the operation under test finished before the kill
    restarted: bool = False
    restart_s: float = 0.0
    moved_aside: str | None = None
    snapshot_problems: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    acked_writes: int = 0
    lost_writes: int = 0
    sync_mode: str = ""

    @property
    def ok(self) -> bool:
        return self.restarted and not self.problems and not self.snapshot_problems and not self.lost_writes


def summary(trials: list[Trial]) -> dict[str, Any]:
    return {
        "trials": len(trials),
        "passed": sum(t.ok for t in trials),
        "killed_mid_operation": sum(not t.op_acknowledged for t in trials),
        "restarted": sum(t.restarted for t in trials),
        "moved_aside": sum(t.moved_aside is not None for t in trials),
        "inconsistent": sum(bool(t.problems or t.snapshot_problems) for t in trials),
        "acked_writes": sum(t.acked_writes for t in trials),
        "lost_writes": sum(t.lost_writes for t in trials),
        "failures": [asdict(t) for t in trials if not t.ok][:10],
    }


def _restart(d: DaemonProcess, trial: Trial) -> None:
    t0 = time.monotonic()
    d.start()
    trial.restart_s = round(time.monotonic() - t0, 3)
    trial.restarted = True
    with d.client() as c:
        recovery = c.request("status", timeout=60)["daemon"]["recovery"]
    if recovery:
        trial.moved_aside = recovery.get("movedAside")


class _Background:
    """One request in a thread, so the main thread can kill the daemon while it runs."""

    def __init__(self, d: DaemonProcess, op: str, args: dict[str, Any], timeout: float = 20):
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

        def run() -> None:
            try:
                with d.client(timeout=timeout) as c:
                    self.result = c.request(op, args, timeout=timeout)
            except BaseException as exc:  # the kill makes this fail; that is the point
                self.error = exc
            finally:
                self.done.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()


def _kill_at(d: DaemonProcess, bg: _Background, delay: float) -> bool:
    """Kill -9 after `delay` seconds (or when the operation ends first); True if it had been acknowledged."""
    bg.done.wait(delay)
    acknowledged = bg.done.is_set() and bg.error is None
    d.kill9()
    return acknowledged


def cold_trial(n: int, rng: random.Random, files: int = 300, window_s: float = 2.0) -> Trial:
    """A fresh home and repository; kill during its first index; restart; sync; check."""
    work = Path(tempfile.mkdtemp(prefix="nx-crash-cold-"))
    trial = Trial("cold_index", n, round(rng.uniform(0.0, window_s), 3))
    d = DaemonProcess(home=work / "home")
    try:
        root = make_py_repo(work / "repo", files)
        versions: dict[tuple[str, str], set[str]] = {}
        record_versions(root, versions)
        d.start()
        bg = _Background(d, "index", {"repo": str(root), "user": "crash"})
        trial.op_acknowledged = _kill_at(d, bg, trial.kill_after_s)
        _restart(d, trial)
        with d.client(timeout=300) as c:
            repos = c.request("repos", timeout=60)["repos"]
            if repos:  # registered before the kill: whatever is in the graph must be a good extraction
                trial.snapshot_problems = snapshot_problems(c, repos[0]["id"], versions)
            res = c.request("index", {"repo": str(root), "user": "crash"}, timeout=300)
            trial.sync_mode = res["mode"]
            trial.problems = consistency_problems(c, res["id"], root)
            again = c.request("sync", {"repo": str(root), "user": "crash"}, timeout=300)
            if again["mode"] != "noop":
                trial.problems.append(f"a second sync after a complete one was {again['mode']}, not noop")
        return trial
    finally:
        d.cleanup()
        shutil.rmtree(work, ignore_errors=True)


class IncrementalRig:
    """One home and one repository for a series of incremental-sync trials (each kill lands on the state the
    previous trials left: damage would accumulate)."""

    def __init__(self, files: int = 400):
        self.work = Path(tempfile.mkdtemp(prefix="nx-crash-inc-"))
        self.files = files
        self.root = make_py_repo(self.work / "repo", files)
        self.versions: dict[tuple[str, str], set[str]] = {}
        record_versions(self.root, self.versions)
        self.d = DaemonProcess(home=self.work / "home").start()
        with self.d.client(timeout=300) as c:
            self.repo_id = c.request("index", {"repo": str(self.root), "user": "crash"}, timeout=300)["id"]

    def trial(self, n: int, rng: random.Random, window_s: float = 1.0) -> Trial:
        trial = Trial("incremental_sync", n, round(rng.uniform(0.0, window_s), 3))
        mutate_repo(self.root, rng, n + 1, self.files)
        record_versions(self.root, self.versions)
        bg = _Background(self.d, "sync", {"repo": str(self.root), "user": "crash"})
        trial.op_acknowledged = _kill_at(self.d, bg, trial.kill_after_s)
        _restart(self.d, trial)
        with self.d.client(timeout=300) as c:
            if not trial.moved_aside:
                trial.snapshot_problems = snapshot_problems(c, self.repo_id, self.versions)
            res = c.request("index", {"repo": str(self.root), "user": "crash"}, timeout=300)
            trial.sync_mode = res["mode"]
            trial.problems = consistency_problems(c, self.repo_id, self.root)
        return trial

    def close(self) -> None:
        self.d.cleanup()
        shutil.rmtree(self.work, ignore_errors=True)


class MemoryRig:
    """One home, a tiny registered repository, and bursts of remember/turn from several clients."""

    WRITERS = 4

    def __init__(self) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="nx-crash-mem-"))
        self.root = make_repo(self.work / "repo", {"app.py": "def main():\n    return 1\n"}, commit=False)
        self.d = DaemonProcess(home=self.work / "home").start()
        self.scope = {"user": "crash", "repo": str(self.root)}
        with self.d.client(timeout=120) as c:
            self.repo_id = c.request("index", self.scope, timeout=120)["id"]
        self.acked_facts: set[str] = set()
        self.acked_turns: dict[str, tuple[str, int]] = {}  # turn id -> (session, ordinal)

    def trial(self, n: int, rng: random.Random, window_s: float = 1.5) -> Trial:
        trial = Trial("memory_burst", n, round(rng.uniform(0.1, window_s), 3))
        stop = threading.Event()
        lock = threading.Lock()
        facts: set[str] = set()
        turns: dict[str, tuple[str, int]] = {}
        with self.d.client(timeout=30) as c:
            session = c.request("session.start", {**self.scope, "title": f"burst {n}"})["session"]

        def writer(w: int) -> None:
            try:
                with self.d.client(timeout=3) as c:
                    i = 0
                    while not stop.is_set():
                        i += 1
                        if i % 2:
                            r = c.request("remember", {**self.scope, "text": f"trial {n} writer {w} fact {i}"})
                            with lock:
                                facts.add(r["id"])
                        else:
                            r = c.request("turn", {**self.scope, "session": session, "text": f"trial {n} w{w} turn {i}"})
                            with lock:
                                turns[r["turn"]] = (session, r["ordinal"])
            except Exception:  # the kill ends the burst; unacknowledged writes may or may not be there
                pass

        threads = [threading.Thread(target=writer, args=(w,), daemon=True) for w in range(self.WRITERS)]
        for t in threads:
            t.start()
        time.sleep(trial.kill_after_s)  # the random moment of the kill is the trial's input, not a wait
        stop.set()
        self.d.kill9()
        for t in threads:
            t.join(30)
        with lock:
            self.acked_facts |= facts
            self.acked_turns.update(turns)
        trial.acked_writes = len(facts) + len(turns)
        _restart(self.d, trial)
        with self.d.client(timeout=120) as c:
            have_facts = {r[0] for r in q(c, "MATCH (f:Fact) WHERE f.repoId = $r RETURN f.id", r=self.repo_id)}
            have_turns = {
                r[0]: (r[1], r[2])
                for r in q(c, "MATCH (t:Turn) WHERE t.repoId = $r RETURN t.id, t.sessionId, t.ordinal", r=self.repo_id)
            }
            lost = (self.acked_facts - have_facts) | (set(self.acked_turns) - set(have_turns))
            trial.lost_writes = len(lost)
            if lost:
                trial.problems.append(f"lost acknowledged writes: {sorted(lost)[:5]}")
            moved = [t for t, where in self.acked_turns.items() if t in have_turns and have_turns[t] != where]
            if moved:
                trial.problems.append(f"{len(moved)} acknowledged turns changed session or ordinal")
            ordinals: dict[str, list[int]] = {}
            for sid, ordinal in have_turns.values():
                ordinals.setdefault(sid, []).append(ordinal)
            dup = [s for s, o in ordinals.items() if len(o) != len(set(o))]
            if dup:
                trial.problems.append(f"duplicate turn ordinals in {len(dup)} sessions")
            res = c.request("sync", self.scope, timeout=120)
            trial.sync_mode = res["mode"]
            c.request("remember", {**self.scope, "text": f"after trial {n}"})
        return trial

    def close(self) -> None:
        self.d.cleanup()
        shutil.rmtree(self.work, ignore_errors=True)


KINDS = ("cold_index", "incremental_sync", "memory_burst")


def run_all(trials: int, seed: int = 7, files: int = 300, kinds: tuple[str, ...] = KINDS) -> dict[str, list[Trial]]:
    rng = random.Random(seed)
    out: dict[str, list[Trial]] = {kind: [] for kind in kinds}
    if "cold_index" in kinds:
        for n in range(trials):
            out["cold_index"].append(cold_trial(n, rng, files=files))
    if "incremental_sync" in kinds:
        inc = IncrementalRig(files=files + 100)
        try:
            for n in range(trials):
                out["incremental_sync"].append(inc.trial(n, rng))
        finally:
            inc.close()
    if "memory_burst" in kinds:
        mem = MemoryRig()
        try:
            for n in range(trials):
                out["memory_burst"].append(mem.trial(n, rng))
        finally:
            mem.close()
    return out
