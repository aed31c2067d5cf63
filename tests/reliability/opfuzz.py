"""Operation-sequence fuzzing: short random sequences of real operations against a real daemon.

Unlike protocol fuzzing (fuzz.py), every request here is a plausible one: index, full rebuild, sync, forget of
a repository, file edits between them, memory writes (facts about symbols, handoffs, procedures, sessions and
turns), memory.forget, and reads (recall, locate, show, impact, status), over several repositories, with a
share of invalid arguments (wrong types, unknown repositories, unknown symbols, missing fields).

Oracle, per sequence: the daemon is alive, it answers `ping` within 1 s (while a client that never reads its
replies stays connected, when asked for), no reply is `internal`, and every error code is in the closed set.
A sequence that kills the daemon or stalls it is kept (`Outcome.failures`) so it can be replayed alone.
"""

from __future__ import annotations

import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq

from nexusd import protocol
from nexusd.errors import ERROR_CODES, NexusError, Timeout, Unavailable
from nexusd.recovery import DAMAGED_MARKER
from tests.helpers import DaemonProcess, git
from tests.reliability.common import module_source, rss_kb

Step = tuple[str, str, dict[str, Any]]  # (kind, op or edit, args); kind: "op" | "edit"


@dataclass
class Outcome:
    sequences: int = 0
    requests: int = 0
    deaths: int = 0
    hangs: int = 0
    # The daemon stopped on purpose, exit 0, having found its database file damaged: the next start sets the
    # file aside and rebuilds (recovery.mark_database_damaged). Not a death; the reasons are kept.
    set_asides: list[str] = field(default_factory=list)
    restart_s: list[float] = field(default_factory=list)  # how long each restart took until `hello` answered
    codes: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)
    internal_messages: list[str] = field(default_factory=list)  # what each `internal` reply said (the first 20)
    rss_kb: list[tuple[int, int]] = field(default_factory=list)  # (sequence number, RSS)
    db_bytes: list[tuple[int, int, int]] = field(default_factory=list)  # (sequence number, database file, its WAL)
    heap: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (sequence number, `debug.heap`)
    op_seconds: Counter[str] = field(default_factory=Counter)  # wall time spent per op, to see what bounds the rate
    seconds: float = 0.0  # wall time of the campaign
    daemon_cpu_s: float = 0.0  # CPU time the daemon process spent during the campaign (user + system)
    warmup: int = 0  # sequences before the RSS growth is measured
    compaction: dict[str, Any] = field(default_factory=dict)  # `status` health.compaction at the end: reopens, why

    def rss_growth(self) -> dict[str, Any]:
        """RSS growth after the warm-up, two ways. `growth_pct`: the last sample against the first at or after
        the warm-up (one sample each, so it depends on where in the buffer pool's swing the two fall).
        `window_growth_pct`: the median of the last tenth of the samples after the warm-up against the median of
        the first tenth (at least 5 samples each). `slope_kb_per_1000`: least squares over the second half."""
        after = [(n, kb) for n, kb in self.rss_kb if n >= self.warmup]
        if len(after) < 2 or after[0][0] == after[-1][0]:
            return {"warmup_sequences": self.warmup, "warm_kb": None, "end_kb": None, "growth_pct": None,
                    "window_growth_pct": None, "slope_kb_per_1000": None}  # fmt: skip
        (_, warm), (_, end) = after[0], after[-1]
        span = max(5, len(after) // 10)
        first = statistics.median(kb for _, kb in after[:span])
        last = statistics.median(kb for _, kb in after[-span:])
        half = after[len(after) // 2 :]
        slope = None
        if len(half) >= 2 and half[0][0] != half[-1][0]:
            fit = statistics.linear_regression([n for n, _ in half], [kb for _, kb in half])
            slope = round(fit.slope * 1000)
        return {"warmup_sequences": self.warmup, "warm_kb": warm, "end_kb": end,
                "growth_pct": round((end - warm) * 100 / warm, 1),
                "window_samples": span, "window_first_kb": round(first), "window_last_kb": round(last),
                "window_growth_pct": round((last - first) * 100 / first, 1),
                "slope_kb_per_1000": slope}  # fmt: skip

    def summary(self) -> dict[str, Any]:
        return {
            "sequences": self.sequences,
            "requests": self.requests,
            "deaths": self.deaths,
            "hangs": self.hangs,
            "set_asides": self.set_asides,
            "restart_s": self.restart_s,
            "internal": self.codes.get("internal", 0),
            "codes": dict(sorted(self.codes.items())),
            "failures": self.failures[:20],
            "internal_messages": self.internal_messages,
            "seconds": round(self.seconds, 1),
            "sequences_per_s": round(self.sequences / self.seconds, 3) if self.seconds else None,
            "daemon_cpu_s_per_sequence": round(self.daemon_cpu_s / self.sequences, 3) if self.sequences else None,
            "rss": self.rss_growth(),
            "compaction": self.compaction,
            "rss_kb": self.rss_kb,
            "db_bytes": self.db_bytes,
            "heap": self.heap,
            "op_seconds": {op: round(s, 1) for op, s in self.op_seconds.most_common()},
        }


def _module(root: Path, n: int, version: int) -> None:
    (root / "pkg" / f"m{n:04d}.py").write_text(module_source(n, version, fanout=2))


def make_repos(base: Path, count: int, files: int = 6) -> list[Path]:
    roots = []
    for r in range(count):
        root = base / f"repo{r}"
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "__init__.py").write_text("")
        for n in range(files):
            _module(root, n, 0)
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
        roots.append(root)
    return roots


class OpFuzzer:
    """Generates and runs sequences; `replay` runs one given sequence (a kept failure, or a regression test)."""

    def __init__(self, repos: int = 3, files: int = 6, env: dict[str, str] | None = None, census: int = 0):
        self.base = Path(tempfile.mkdtemp(prefix="nx-opfuzz-"))
        self.files = files
        self.roots = make_repos(self.base, repos, files)
        self.daemon = DaemonProcess(env={"NEXUS_NO_WATCH": "1", **(env or {})}).start()
        self.client = self.daemon.client(timeout=60)
        self.ids: list[str] = []  # memory ids seen, for memory.forget
        self.census = census  # every this many sequences (0: never), where the memory sits (`debug.heap`)
        self.sessions: list[str] = []
        self.flooder: zmq.Socket | None = None
        self._zctx: zmq.Context | None = None

    def close(self) -> None:
        if self.flooder is not None:
            self.flooder.close(0)
        if self._zctx is not None:
            self._zctx.term()
        self.client.close()
        self.daemon.cleanup()
        shutil.rmtree(self.base, ignore_errors=True)

    # -- a client that sends and never reads --------------------------------------------------------

    def connect_flooder(self, requests: int = 15_000) -> None:
        """Connect a DEALER that sends `requests` pings and never reads a reply (the pipe fills up)."""
        self._zctx = zmq.Context()
        sock = self._zctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 0)
        sock.setsockopt(zmq.RCVHWM, 1)
        sock.setsockopt(zmq.RCVBUF, 4096)
        sock.connect(f"ipc://{self.daemon.dirs.socket}")
        for n in range(requests):
            try:
                sock.send(protocol.request_frame(f"flood-{n}", "ping", {}), zmq.NOBLOCK)
            except zmq.Again:
                break
        self.flooder = sock

    # -- generation ---------------------------------------------------------------------------------

    def _symbol(self, rng: random.Random) -> str:
        n = rng.randrange(self.files + 2)
        return rng.choice([f"func_{n}_0", f"func_{n}_1", f"Thing{n}V0", f"Thing{n}V1.run", "nothing_like_this"])

    def step(self, rng: random.Random) -> Step:
        root = str(rng.choice(self.roots))
        bad = rng.random() < 0.15
        pick = rng.randrange(100)
        if pick < 8:
            return ("edit", rng.choice(["rewrite", "rewrite", "delete", "add"]), {"root": root, "n": rng.randrange(self.files + 3), "v": rng.randrange(7)})
        if pick < 18:
            return ("op", "index", {"repo": root, **({"full": True} if rng.random() < 0.4 else {})})
        if pick < 26:
            return ("op", "sync", {"repo": root} if not bad else {"repo": root, "paths": [rng.choice(["pkg/m0001.py", "../x", "nope.py"])]})
        if pick < 33:
            return ("op", "repo.forget", {"repo": root if not bad else root + "-missing"})
        if pick < 45:
            args: dict[str, Any] = {"repo": root, "text": f"fact {rng.randrange(50)} about things"}
            if rng.random() < 0.7:
                args["about"] = self._symbol(rng)
            if bad:
                args["text"] = rng.choice([5, "", None])
            return ("op", "remember", args)
        if pick < 52:
            return ("op", "handoff.write", {"repo": root, "done": f"did {rng.randrange(20)}", "next": "more"})
        if pick < 56:
            return ("op", "procedure", {"repo": root, "title": f"p{rng.randrange(9)}", "steps": ["a", "b"], "files": ["pkg/m0001.py"]})
        if pick < 60:
            return ("op", "session.start", {"repo": root, "title": "s"})
        if pick < 64:
            return ("op", "turn", {"repo": root, "role": "user", "text": f"turn {rng.randrange(100)}"})
        if pick < 70:
            if rng.random() < 0.5 or not self.ids:
                return ("op", "memory.forget", {"repo": root, "all": True})
            return ("op", "memory.forget", {"repo": root, "ids": rng.sample(self.ids, k=min(len(self.ids), 2))})
        if pick < 76:
            return ("op", "recall", {"repo": root, "query": rng.choice(["fact", "things", "did", "zzz"])})
        if pick < 84:
            return ("op", "locate", {"repo": root, "query": self._symbol(rng) if not bad else 7})
        if pick < 90:
            return ("op", "show", {"repo": root, "symbol": self._symbol(rng)})
        if pick < 95:
            return ("op", "impact", {"repo": root, "symbol": self._symbol(rng), **({"depth": -3} if bad else {})})
        return ("op", "status", {"repo": root} if not bad else {"repo": 12})

    def sequence(self, rng: random.Random, length: int) -> list[Step]:
        return [self.step(rng) for _ in range(length)]

    # -- running ------------------------------------------------------------------------------------

    def _edit(self, name: str, args: dict[str, Any]) -> None:
        root = Path(args["root"])
        target = root / "pkg" / f"m{args['n']:04d}.py"
        if name == "delete":
            target.unlink(missing_ok=True)
        elif target.parent.is_dir():
            _module(root, args["n"], args["v"] + (1 if name == "add" else 0))

    def _request(self, op: str, args: dict[str, Any], out: Outcome) -> str:
        out.requests += 1
        t0 = time.monotonic()
        try:
            result = self.client.request(op, args, timeout=60)
        except (Unavailable, Timeout) as exc:
            return f"transport:{type(exc).__name__}"
        except NexusError as exc:
            out.codes[exc.code] += 1
            if exc.code == "internal" and len(out.internal_messages) < 20:
                out.internal_messages.append(f"{op}: {exc.message}"[:2000])
            return exc.code
        finally:
            out.op_seconds[op] += time.monotonic() - t0
        out.codes["ok"] += 1
        if isinstance(result, dict):
            for key in ("id", "session"):
                value = result.get(key)
                if isinstance(value, str) and value.split("_", 1)[0] in ("fact", "hand", "proc", "ses", "turn"):
                    self.ids.append(value)
        return "ok"

    def ping_ms(self, timeout_s: float = 1.0) -> float | None:
        t0 = time.monotonic()
        try:
            self.client.request("ping", {}, timeout=timeout_s)
        except NexusError:
            return None
        return (time.monotonic() - t0) * 1000

    def run(self, steps: list[Step], out: Outcome, label: Any = None) -> bool:
        """Run one sequence; True when the daemon survived it and answered ping within 1 s."""
        out.sequences += 1
        codes = []
        for kind, name, args in steps:
            if kind == "edit":
                self._edit(name, args)
                continue
            codes.append(self._request(name, args, out))
            if self.daemon.proc is not None and self.daemon.proc.poll() is not None:
                break
        alive = self.daemon.proc is not None and self.daemon.proc.poll() is None
        ping = self.ping_ms() if alive else None
        if alive and ping is None and self._stopping_for_damage():
            alive = False  # it stopped on purpose between the last reply and the ping: a set-aside, not a hang
        if not alive or ping is None or "internal" in codes:
            failure = {"label": label, "steps": steps, "codes": codes, "alive": alive, "ping_ms": ping,
                       "at": time.strftime("%H:%M:%S")}  # fmt: skip
            marker = self.daemon.dirs.state / DAMAGED_MARKER
            if not alive and self.daemon.proc is not None and self.daemon.proc.returncode == 0 and marker.exists():
                out.set_asides.append(marker.read_text(errors="replace").strip()[:300])
                self._restart(out)
                return True
            if not alive:
                out.deaths += 1
                failure["exit"] = self.daemon.proc.returncode if self.daemon.proc else None
                failure["stack"] = self._crash_stack()
                self._restart(out)
            elif ping is None:
                out.hangs += 1
                failure.update(self._stall_evidence())
            out.failures.append(failure)
            return False
        return True

    def _stopping_for_damage(self, wait_s: float = 30.0) -> bool:
        """True when the daemon that missed a ping has written the damage marker and exits with 0 within
        `wait_s`: it found its file damaged and stopped on purpose (its loop closes first, so a ping sent while
        the process winds down gets no answer). Any other outcome is left to the caller (a hang)."""
        proc = self.daemon.proc
        if proc is None or not (self.daemon.dirs.state / DAMAGED_MARKER).exists():
            return False
        try:
            return proc.wait(timeout=wait_s) == 0
        except subprocess.TimeoutExpired:
            return False

    def _stall_evidence(self) -> dict[str, Any]:
        """What the daemon was doing when a ping went unanswered: every thread's stack (py-spy, when installed
        and allowed to attach), then how long a second ping took (up to 30 s), so a stall is told from a hang."""
        evidence: dict[str, Any] = {}
        spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
        if spy is not None and self.daemon.pid:
            try:
                dump = subprocess.run([spy, "dump", "--pid", str(self.daemon.pid)], capture_output=True,
                                      text=True, timeout=20)  # fmt: skip
                evidence["stacks"] = (dump.stdout or dump.stderr)[-6000:]
            except (OSError, subprocess.TimeoutExpired) as exc:
                evidence["stacks"] = f"py-spy: {exc}"
        evidence["late_ping_ms"] = self.ping_ms(timeout_s=30.0)
        return evidence

    def _crash_stack(self) -> list[str]:
        """The project frames of the crashing thread, when the daemon ran with PYTHONFAULTHANDLER=1."""
        proc = self.daemon.proc
        if proc is None or proc.stderr is None:
            return []
        text = proc.stderr.read().decode(errors="replace")
        head = text.split("Fatal Python error", 1)[-1].split("\n\n", 2)
        lines = head[1].splitlines() if len(head) > 1 else []
        return [ln.strip() for ln in lines if "/nexusd/" in ln][:12]

    def _restart(self, out: Outcome | None = None) -> None:
        """Start the daemon again and connect. After a set-aside the new daemon rebuilds every graph and replays
        the journal first: its first `hello` may take longer than the client's 5 s, so connecting is retried for
        up to 180 s, and how long it took is kept (`Outcome.restart_s`)."""
        self.client.close()
        self.daemon.stop()
        t0 = time.monotonic()
        self.daemon.start()
        while True:
            try:
                self.client = self.daemon.client(timeout=60)
                break
            except Timeout:
                if time.monotonic() - t0 > 180:
                    raise
        if out is not None:
            out.restart_s.append(round(time.monotonic() - t0, 1))

    def _alive(self) -> bool:
        return self.daemon.proc is not None and self.daemon.proc.poll() is None

    def _sample(self, n: int, out: Outcome) -> None:
        out.rss_kb.append((n, rss_kb(self.daemon.pid)))
        sizes = {p.name: p.stat().st_size for p in self.daemon.home.rglob("graph.kuzu*") if p.is_file()}
        out.db_bytes.append((n, sizes.get("graph.kuzu", 0), sizes.get("graph.kuzu.wal", 0)))
        if self.census and n % self.census == 0:
            try:
                out.heap.append((n, self.client.request("debug.heap", {}, timeout=30)))
            except NexusError:
                pass  # a daemon without debug ops, or a busy one: the RSS sample stands alone

    def campaign(
        self,
        count: int,
        seed: int,
        *,
        length: tuple[int, int] = (3, 8),
        time_budget_s: float | None = None,
        rss_every: int = 200,
        warmup: int = 0,
        on_progress: Callable[[Outcome], None] | None = None,
    ) -> Outcome:
        """`count` sequences (fewer when `time_budget_s` runs out). The daemon's RSS and database size are
        sampled every `rss_every` sequences and after the last; `warmup`: the sequences before the RSS growth
        is measured (`Outcome.rss_growth`)."""
        rng = random.Random(seed)
        out = Outcome(warmup=warmup)
        t0 = time.monotonic()
        pid = self.daemon.pid
        cpu0 = cpu_s(pid)
        n = 0
        for n in range(count):
            if time_budget_s is not None and time.monotonic() - t0 > time_budget_s:
                break
            self.run(self.sequence(rng, rng.randint(*length)), out, label=(seed, n))
            if self.daemon.pid != pid:  # restarted after a death: the dead process's CPU time is not counted
                pid, cpu0 = self.daemon.pid, cpu_s(self.daemon.pid)
            if n % rss_every == 0 and self._alive():
                self._sample(n, out)
                if on_progress is not None:
                    on_progress(out)
        out.seconds = time.monotonic() - t0
        if self._alive():
            out.daemon_cpu_s += cpu_s(pid) - cpu0
            if not out.rss_kb or out.rss_kb[-1][0] != n:
                self._sample(n, out)
            try:
                out.compaction = self.client.request("status")["health"]["compaction"]
            except NexusError as exc:  # the figures above stand without it
                out.compaction = {"error": str(exc)}
        assert set(out.codes) <= set(ERROR_CODES) | {"ok"}, out.codes
        return out


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process (its own threads, not its children)."""
    import os

    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
