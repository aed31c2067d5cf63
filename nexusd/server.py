"""The socket loop: the only module that knows ZeroMQ (docs/conventions.md point 1).

    client DEALER --ipc--> ROUTER (this loop) --> inline/control ops answered here
                                              --> read jobs  -> reader threads (own Kuzu connection each)
                                              --> write jobs -> the one writer thread
    workers PUSH replies --inproc--> this loop --> ROUTER --> the client that asked

Only this thread touches the ROUTER socket; workers own a PUSH socket each. Traps handled here
(docs/field-notes.md, pyzmq): ROUTER_MANDATORY so a full pipe raises instead of silently dropping the final reply;
progress frames are sent non-blocking and dropped on EAGAIN; final replies are sent non-blocking too, and
what a full pipe refuses waits in a bounded per-peer backlog (`Outbox`), so one peer that stops reading never
makes the loop wait; LINGER 0 so a stop never hangs on an absent peer.
"""

from __future__ import annotations

import errno
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import zmq

from . import config, protocol, recovery
from .errors import BadRequest, Busy, Internal, NexusError, NoSpace, Timeout, TooLarge
from .opargs import Args, NoArgs
from .parse import gcpause
from .registry import Ctx, OpSpec, lookup, validate
from .repos import annotate_view
from .store import StoreError, StoreTimeout

if TYPE_CHECKING:
    from .parts import Parts
    from .recovery import DiskGuard
    from .recycle import Recycler
    from .store import Conn, Store

log = logging.getLogger(__name__)

_INPROC = "inproc://nexusd-replies"
_FINAL = b"f"
_PROGRESS = b"p"
MAX_QUEUED_READS = 2_000
MAX_QUEUED_WRITES = 10_000
PROGRESS_INTERVAL_S = 0.05  # at most ~20 progress frames a second per request
HEARTBEAT_S = float(config.get("NEXUS_HEARTBEAT_S"))  # a long request's silence before the loop says it is alive
RESTART_LINGER_MS = 2000  # how long a restart in place lets queued replies go out before closing the socket
CHECKPOINT_IDLE_S = 2.0  # the writer checkpoints after this long without work
# An image restarted in place while its database rested (`rest_soon`) lets it rest again once its start-up work
# (the catch-up, the tables' rebuild) has been quiet this long, not NEXUS_DB_IDLE_S: nobody used it meanwhile.
REST_AFTER_RESTART_S = 5.0
# ... and this soon after a write that deleted (an edit's), so the next deleting write does not pay that checkpoint
FOLD_SOON_S = 0.1
INTERNAL_BUDGET_S = 5.0  # what `service_writes` spends on queued internal work at one safe point
LONG_JOB_MAX_WAIT_S = 0.5  # a queued sync waits at most about this long behind quick writes
QUICK_BUDGET_S = 0.05  # quick writes a running sync lets in at each of its safe points
# Replies a peer has not taken yet wait here, per peer, when its pipe is full; past these bounds its replies
# are dropped and its new requests ignored until it reads again (ARCHITECTURE.md, "Invariants").
PEER_BACKLOG_FRAMES = 1_000
PEER_BACKLOG_BYTES = 32 * 1024 * 1024
TOTAL_BACKLOG_BYTES = 256 * 1024 * 1024


class Outbox:
    """Final replies that could not be sent at once, per peer, in order; the socket loop never waits on a peer.

    Every send is non-blocking. A peer whose pipe is full (it does not read) gets a backlog, retried on every
    turn of the loop; one that has gone (EHOSTUNREACH under ROUTER_MANDATORY) loses its backlog at the next
    try. A backlog over its bounds marks the peer as stalled: its replies are dropped and its requests are
    ignored until the backlog drains."""

    def __init__(self, router: zmq.Socket):
        self.router = router
        self.backlogs: dict[bytes, deque[bytes]] = {}
        self.sizes: dict[bytes, int] = {}
        self.total = 0
        self.stalled: set[bytes] = set()
        self.dropped_replies = 0
        self.ignored_requests = 0
        self.gone = 0
        self.backlogged_peers = 0  # peers that ever needed a backlog

    def send(self, identity: bytes, frame: bytes) -> None:
        backlog = self.backlogs.get(identity)
        if backlog is None:
            try:
                self.router.send_multipart([identity, frame], zmq.NOBLOCK)
                return
            except zmq.Again:
                backlog = self.backlogs[identity] = deque()
                self.sizes[identity] = 0
                self.backlogged_peers += 1
            except zmq.ZMQError as exc:  # the peer went away (EHOSTUNREACH)
                log.debug("final reply dropped: %s", exc)
                self.dropped_replies += 1
                return
        if (
            identity in self.stalled
            or len(backlog) >= PEER_BACKLOG_FRAMES
            or self.sizes[identity] + len(frame) > PEER_BACKLOG_BYTES
            or self.total + len(frame) > TOTAL_BACKLOG_BYTES
        ):
            if identity not in self.stalled:
                log.warning("a client does not read its replies (%d waiting): dropping its replies", len(backlog))
            self.stalled.add(identity)
            self.dropped_replies += 1
            return
        backlog.append(frame)
        self.sizes[identity] += len(frame)
        self.total += len(frame)

    def flush(self) -> None:
        """Send what the peers' pipes take now; forget peers that have gone; lift stalls that drained."""
        for identity in list(self.backlogs):
            backlog = self.backlogs[identity]
            while backlog:
                try:
                    self.router.send_multipart([identity, backlog[0]], zmq.NOBLOCK)
                except zmq.Again:
                    break
                except zmq.ZMQError:
                    self.dropped_replies += len(backlog)
                    self.gone += 1
                    backlog.clear()
                    break
                frame = backlog.popleft()
                self.sizes[identity] -= len(frame)
                self.total -= len(frame)
            if not backlog:
                self.total -= self.sizes.pop(identity)
                del self.backlogs[identity]
                self.stalled.discard(identity)

    def accepts(self, identity: bytes) -> bool:
        """False for a stalled peer: its request is ignored (counted), no work is done for nobody to read."""
        if identity in self.stalled:
            self.ignored_requests += 1
            return False
        return True

    def stats(self) -> dict[str, int]:
        return {
            "waitingPeers": len(self.backlogs),
            "waitingReplies": sum(len(b) for b in self.backlogs.values()),
            "waitingBytes": self.total,
            "stalledPeers": len(self.stalled),
            "droppedReplies": self.dropped_replies,
            "ignoredRequests": self.ignored_requests,
            "goneWithReplies": self.gone,
            "backloggedPeers": self.backlogged_peers,
        }


@dataclass
class Job:
    """A request (or an internal task when identity is None) waiting for a worker."""

    identity: bytes | None
    request_id: Any
    spec: OpSpec | None
    args: Args
    deadline: float
    task: Callable[[Conn], Any] | None = None  # internal work for the writer (sync batches)
    done: threading.Event | None = None
    outcome: Any = None
    # For the socket loop's heartbeat of a long request (`Server._heartbeat`): when it came, when its client
    # last got a frame, the phase its last progress frame named, whether a worker took it and whether it ended.
    # Written by the worker, read by the loop: single attribute stores, each whole under the GIL.
    received: float = 0.0
    last_frame: float = 0.0
    phase: Any = None
    started: bool = False
    finished: bool = False


class WriteQueue:
    """The writer's queue, in two classes: long jobs (syncs, internal tasks) and quick ones (memory writes).

    Quick jobs go first, and a long job lets queued quick jobs run at its safe points (`Server.service_quick`,
    between parse results and before its transaction), so a remembered fact does not wait for a whole index. A
    first history sync also lets the daemon's own queued work (watcher batches) run at its safe points
    (`Server.service_writes`, `take_internal`), so an edit saved meanwhile does not wait for the whole history.
    Within each class the order is arrival order. Same interface as `queue.Queue` where the server uses it.
    """

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._quick: deque[Job | None] = deque()
        self._long: deque[Job | None] = deque()
        self._long_since = 0.0  # when the long job now at the head of its queue got there

    def put(self, job: Job | None, quick: bool = False) -> None:
        with self._cv:
            if not quick and not self._long:
                self._long_since = time.monotonic()
            (self._quick if quick else self._long).append(job)
            self._cv.notify()

    def get(self, timeout: float | None = None) -> Job | None:
        with self._cv:
            if not self._cv.wait_for(lambda: self._quick or self._long, timeout):
                raise queue.Empty
            # Quick first, but a long job that has waited LONG_JOB_MAX_WAIT_S goes next: a steady stream of
            # memory writes must not starve syncs (they still let quick writes in at their safe points).
            if self._long and (not self._quick or self._long_since and
                               time.monotonic() - self._long_since > LONG_JOB_MAX_WAIT_S):
                job = self._long.popleft()
                self._long_since = time.monotonic() if self._long else 0.0
                return job
            return self._quick.popleft()

    def get_nowait(self) -> Job | None:
        return self.get(timeout=0)

    def take_quick(self) -> Job | None:
        with self._cv:
            return self._quick.popleft() if self._quick and self._quick[0] is not None else None

    def take_internal(self) -> Job | None:
        """The next long job when it is the daemon's own work (a watcher batch, a hook's sync), else None."""
        with self._cv:
            if not self._long or self._long[0] is None or self._long[0].task is None:
                return None
            job = self._long.popleft()
            self._long_since = time.monotonic() if self._long else 0.0
            return job

    def qsize(self) -> int:
        with self._cv:
            return len(self._quick) + len(self._long)


class Server:
    def __init__(self, store: Store, endpoint: str, readers: int = 4):
        self.store = store
        self.parts: Parts | None = None  # set by the daemon once the composition root built them (app.py)
        self.disk: DiskGuard | None = None  # set by the daemon: writes are refused while the disk is full
        self.endpoint = endpoint
        self.ctx: zmq.Context = zmq.Context.instance()
        self.ctx.setsockopt(zmq.LINGER, 0)
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.router.setsockopt(zmq.MAXMSGSIZE, protocol.HARD_FRAME_BYTES)
        self.router.setsockopt(zmq.SNDHWM, 10_000)
        self.router.setsockopt(zmq.RCVHWM, 10_000)
        self.outbox = Outbox(self.router)
        self.pull = self.ctx.socket(zmq.PULL)
        self.pull.bind(_INPROC)
        self.read_queue: queue.Queue[Job | None] = queue.Queue()
        self.write_queue = WriteQueue()
        self._writer_push: zmq.Socket | None = None
        self.stopping = threading.Event()
        self._workers: list[threading.Thread] = []
        self._readers = readers
        self.handled = 0
        self._dirty = False
        self._db_idle_s = float(config.get("NEXUS_DB_IDLE_S"))  # (`_idle`: the database closes while unused)
        self._running_reads = 0  # read jobs running
        self._active_reads = 0  # ... of them, those that reached the database (`_admit`)
        self._exclusive = False
        self._gate = threading.Condition()
        store.exclusive = self.exclusive
        self.last_request_at = time.monotonic()  # the last client request received (NEXUS_RECYCLE_QUIET_S)
        self.rest_soon = False  # set by the daemon: REST_AFTER_RESTART_S until the first rest or request
        self.recycler: Recycler | None = None  # set by the daemon: the idle writer's restart-in-place check
        self.restarting = False  # the stop in progress is a restart in place: refusals say so
        self._long_jobs: list[Job] = []  # long requests not answered yet (`_heartbeat`), owned by the loop
        self._next_beat = 0.0

    # -- lifecycle ----------------------------------------------------------------------------------

    def bind(self) -> None:
        self.router.bind(self.endpoint)

    def start_workers(self) -> None:
        for i in range(self._readers):
            self._spawn(f"reader-{i}", self.read_queue)
        self._spawn("writer", self.write_queue)

    def _spawn(self, name: str, jobs: queue.Queue[Job | None] | WriteQueue) -> None:
        thread = threading.Thread(target=self._work, args=(jobs,), name=name, daemon=True)
        thread.start()
        self._workers.append(thread)

    def stop(self) -> None:
        self.stopping.set()

    def serve_forever(self) -> None:
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self.pull, zmq.POLLIN)
        while not self.stopping.is_set():
            if self.outbox.backlogs:
                self.outbox.flush()
            try:
                # Backlogged replies are retried every 10 ms (a ROUTER's POLLOUT says nothing about one peer).
                events = dict(poller.poll(10 if self.outbox.backlogs else 100))
            except zmq.ZMQError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise
            if self.pull in events:
                self._forward_replies()
            if self.router in events:
                for _ in range(256):  # bounded, so replies keep flowing under a flood of requests
                    try:
                        frames = self.router.recv_multipart(zmq.NOBLOCK, copy=True)
                    except zmq.Again:
                        break
                    self._on_message(frames)
            if self._long_jobs and time.monotonic() >= self._next_beat:
                self._heartbeat()
        self._forward_replies()

    def _heartbeat(self) -> None:
        """A progress frame to each long request (index, sync, history ingest) whose client heard nothing for
        HEARTBEAT_S: `{phase, heartbeat: true, seconds}`, the phase its last progress frame named ("queued"
        while it waits for the writer). Clients time out on silence and every frame restarts their clock, but
        some steps of a long job say nothing for minutes (a 78,000-file repository's write: ~2 min): without
        this, `nexus index` of one gave up with "no answer within 120s" while the daemon went on and finished.
        Sent from the loop, which owns the socket, so a worker busy inside one statement is covered too; it
        stops once the job ended or passed its deadline."""
        now = time.monotonic()
        self._next_beat = now + min(1.0, HEARTBEAT_S / 2)
        live = []
        for job in self._long_jobs:
            if job.finished or now > job.deadline:
                continue
            live.append(job)
            if now - job.last_frame < HEARTBEAT_S or job.identity is None or job.identity in self.outbox.backlogs:
                continue
            phase = (job.phase or "working") if job.started else "queued"
            data = {"phase": phase, "heartbeat": True, "seconds": round(now - job.received)}
            try:
                self.router.send_multipart([job.identity, protocol.progress_frame(job.request_id, data)], zmq.NOBLOCK)
            except zmq.ZMQError:
                pass  # advisory, as every progress frame: a peer that went or does not read loses it
            job.last_frame = now
        self._long_jobs = live

    def drain_and_close(self, timeout_s: float = 30.0) -> bool:
        """Let the write in progress finish (commit or roll back), refuse the rest, stop the threads. False when a
        worker thread was still running a request `timeout_s` after: the database must not be closed under it
        (Kuzu's close waits for the statement it runs, or for good when that thread then starts another)."""
        for jobs in (self.read_queue, self.write_queue):
            while True:
                try:
                    job = jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    self._refuse(job, "the daemon is shutting down")
        for _ in range(self._readers):
            self.read_queue.put(None)
        self.write_queue.put(None)
        deadline = time.monotonic() + timeout_s
        for thread in self._workers:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._forward_replies()
        self.outbox.flush()
        # A restart in place lets the replies already made reach their clients (LINGER is 0 otherwise): a client
        # sends a request again when it saw no reply, and one run twice must not be a lost reply's doing.
        self.router.close(RESTART_LINGER_MS if self.restarting else 0)
        self.pull.close(0)
        return not any(thread.is_alive() for thread in self._workers)

    # -- receiving ----------------------------------------------------------------------------------

    def _on_message(self, frames: list[bytes]) -> None:
        identity = frames[0]
        self.last_request_at = time.monotonic()
        self.rest_soon = False  # (someone uses the daemon again: its database rests as usual)
        request_id: Any = None
        if not self.outbox.accepts(identity):
            return
        try:
            if len(frames) != 2:
                raise BadRequest(f"expected one frame per request, got {len(frames) - 1}")
            data = frames[1]
            if len(data) > protocol.MAX_FRAME_BYTES:
                raise TooLarge(
                    f"frame of {len(data)} bytes exceeds the limit of {protocol.MAX_FRAME_BYTES}",
                    hint="send smaller arguments; large results are paged with a cursor",
                )
            try:
                obj = protocol.unpack_request(data)  # bounded: refuses huge lists and maps while decoding
            except NexusError:
                request_id = protocol.peek_id_bytes(data)
                raise
            request_id = protocol.peek_id(obj)
            req = protocol.validate_request(obj)
            spec = lookup(req.op)
            args = validate(spec, req.args)  # the typed value the handler takes (nexusd/opargs.py)
            self.handled += 1
            deadline = time.monotonic() + spec.timeout_s
            if spec.lane in ("inline", "control"):
                assert self.parts is not None
                ctx = Ctx(self.parts, None, req.id, spec.name, deadline=deadline)
                self._send_final(identity, protocol.ok_frame(req.id, spec.handler(ctx, args)))
            elif spec.lane == "read":
                if self.read_queue.qsize() >= MAX_QUEUED_READS:
                    raise Busy("too many queries waiting", hint="retry in a moment")
                self.read_queue.put(Job(identity, req.id, spec, args, deadline))
            else:
                if self.write_queue.qsize() >= MAX_QUEUED_WRITES:
                    raise Busy("too many writes waiting", hint="retry in a moment")
                job = Job(identity, req.id, spec, args, deadline)
                if spec.long:
                    job.received = job.last_frame = time.monotonic()
                    self._long_jobs.append(job)
                self.write_queue.put(job, quick=not spec.long)
        except NexusError as exc:
            self._send_final(identity, protocol.error_frame(request_id, exc))
        except Exception as exc:  # the crash barrier of the loop itself
            log.exception("request %r: unexpected failure on the socket loop", request_id)
            self._send_final(identity, protocol.error_frame(request_id, Internal(f"{type(exc).__name__}: {exc}")))

    def submit_internal(self, task: Callable[[Conn], Any], *, wait: bool = False, timeout: float = 600.0) -> Any:
        """Queue work for the writer from inside the daemon (watcher batches); optionally wait for it."""
        job = Job(None, None, None, NoArgs(), time.monotonic() + timeout, task=task, done=threading.Event())
        self.write_queue.put(job)
        if not wait:
            return None
        assert job.done is not None
        if not job.done.wait(timeout):
            raise Timeout("the writer did not finish in time")
        if isinstance(job.outcome, BaseException):
            raise job.outcome
        return job.outcome

    # -- sending ------------------------------------------------------------------------------------

    def _send_final(self, identity: bytes, frame: bytes) -> None:
        self.outbox.send(identity, frame)  # never blocks: a full pipe queues the reply for that peer only

    def _forward_replies(self) -> None:
        while True:
            try:
                kind, identity, frame = self.pull.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            if kind == _FINAL:
                self._send_final(identity, frame)
            elif identity not in self.outbox.backlogs:
                try:
                    self.router.send_multipart([identity, frame], zmq.NOBLOCK)
                except zmq.ZMQError:
                    pass  # progress is advisory: drop it rather than block the loop

    def _refuse(self, job: Job, why: str) -> None:
        # A restart in place says so: the client sends the request again once the socket is back.
        error = (Busy("the daemon is restarting in place", data={"restarting": True}) if self.restarting
                 else Busy(why))  # fmt: skip
        job.finished = True
        if job.done is not None:
            job.outcome = error
            job.done.set()
        if job.identity is not None:
            self._send_final(job.identity, protocol.error_frame(job.request_id, error))

    # -- workers ------------------------------------------------------------------------------------

    @staticmethod
    def _at_safe_point(conn: Conn) -> bool:
        """On the writer thread, with no transaction open: where a long job may let queued work run."""
        return threading.current_thread().name == "writer" and not conn.in_transaction

    def service_writes(self, conn: Conn) -> int:
        """From a safe point of a long job that holds no transaction on the writer thread: the quick writes
        queued meanwhile, then the daemon's own queued work (watcher batches: an edit saved during a first
        history sync), for up to INTERNAL_BUDGET_S. Returns how many ran."""
        ran = self.service_quick(conn)
        if not self._at_safe_point(conn):
            return ran
        until = time.monotonic() + INTERNAL_BUDGET_S
        while time.monotonic() < until and (job := self.write_queue.take_internal()) is not None:
            self._dirty = True
            self._run_task(job, conn)
            ran += 1
        return ran

    def service_quick(self, conn: Conn) -> int:
        """Run the quick writes queued meanwhile, from inside a long job on the writer thread, at a point
        where that job holds no transaction. Returns how many ran."""
        push = self._writer_push
        if push is None or not self._at_safe_point(conn):
            return 0
        ran = 0
        # A time budget per safe point: quick writes get in, and the sync still moves under a steady stream.
        until = time.monotonic() + QUICK_BUDGET_S
        while time.monotonic() < until and (job := self.write_queue.take_quick()) is not None:
            assert job.identity is not None
            push.send_multipart([_FINAL, job.identity, self._run(job, conn, push)])
            ran += 1
        return ran

    def _work(self, jobs: queue.Queue[Job | None] | WriteQueue) -> None:
        push = self.ctx.socket(zmq.PUSH)
        push.setsockopt(zmq.SNDHWM, 0)
        push.connect(_INPROC)
        conn = self.store.connect()
        writer = jobs is self.write_queue
        if writer:
            self._writer_push = push
        else:
            conn.admit = self._admit
        fold = False  # a write that deleted ran, and no checkpoint was tried since (`_fold`)
        try:
            while True:
                try:
                    job = jobs.get(timeout=FOLD_SOON_S if fold else CHECKPOINT_IDLE_S) if writer else jobs.get()
                except queue.Empty:
                    if fold:
                        fold = False
                        self._fold(conn)
                    else:
                        self._idle(conn)
                    continue
                if job is None:
                    return
                if writer:
                    self._dirty = True
                else:
                    with self._gate:
                        self._running_reads += 1
                try:
                    if job.task is not None:
                        self._run_task(job, conn)
                    else:
                        frame = self._run(job, conn, push)
                        assert job.identity is not None
                        push.send_multipart([_FINAL, job.identity, frame])
                finally:
                    if not writer:
                        with self._gate:
                            self._running_reads -= 1
                            if conn.admitted:
                                conn.admitted = False
                                self._active_reads -= 1
                            self._gate.notify_all()
                fold = writer and self.store.deletes_unfolded
        finally:
            conn.close()
            push.close(0)

    def _admit(self, conn: Conn) -> None:
        """A read job's first statement (`Conn.admit`): wait while the exclusive window is held, then count the
        job among the reads of the database until it ends. A job that never reaches the database (an answer
        from a query snapshot) is not held back: on the Linux kernel's cold write, whose COPYs hold the window
        for seconds each, a small repository's `locate` waited up to 4.4 s for them."""
        with self._gate:
            while self._exclusive:
                self._gate.wait()
            self._active_reads += 1
            conn.admitted = True

    @contextmanager
    def exclusive(self, timeout_s: float = 30.0) -> Iterator[None]:
        """Hold new reads of the database back and wait for running ones, for a COPY or CHECKPOINT (see
        store.Conn._copy). Reads queue up meanwhile at their first statement (`_admit`); they are not refused."""
        with self._gate:
            self._exclusive = True
            deadline = time.monotonic() + timeout_s
            while self._active_reads and time.monotonic() < deadline:
                self._gate.wait(0.05)
        try:
            yield
        finally:
            with self._gate:
                self._exclusive = False
                self._gate.notify_all()

    def _reads_waiting(self) -> bool:
        """A query runs or waits: the writer's upkeep (a checkpoint holds reads back) waits for it."""
        return bool(self._running_reads) or not self.read_queue.empty()

    def _fold(self, conn: Conn) -> None:
        """Right after a write that deleted (an edit's), its checkpoint, when no query runs or waits. Every
        deleting write checkpoints what is committed before it (`Store.checkpoint_before_delete`, a Kuzu 0.11.3
        segfault), so edits a moment apart each paid for the one before: on the Linux kernel's graph, ~0.16 s of
        each edit. The rest of the idle upkeep waits for CHECKPOINT_IDLE_S as before."""
        if self._reads_waiting():
            return  # (the idle upkeep checkpoints once the queries are done)
        self.store.checkpoint(conn, reopen=False)  # (a reopen that is due waits for `_idle`)

    def _idle(self, conn: Conn) -> None:
        """The writer's upkeep while it waits for work, only when no query runs or waits: a checkpoint after
        writes (no read transaction may be open, see store.py; only with room on the disk for it,
        recovery.DiskGuard) and the C heap's free pages handed back after it (`gcpause.trim_heap`), then the
        graphs' invariant counts after a checkpoint folded in deletes (`LiveSync.check_after_deletes`), the symbol
        tables and query snapshots nothing needed for a while (`LiveSync.release_idle`, `Snapshots.evict_idle`), the
        snapshots' mapped file pages nothing read for a while (`Snapshots.drop_pages`), then
        freeing what a forgotten repository, a dropped symbol table or a replaced snapshot left in the frozen heap
        (`gcpause.reclaim`: the collection holds the interpreter meanwhile); last, once quiet, whether to restart
        in place (`recycle.Recycler`)."""
        if self._reads_waiting():
            return
        recycler = self.recycler
        if self._dirty and self.store.checkpoint(conn):  # postponed while the disk is too full (recovery.py)
            self._dirty = False
            gcpause.trim_heap()  # what the writes and the checkpoint freed goes back to the system
            if recycler is not None:
                recycler.note(wrote=True)
        if self.parts is not None and not self._dirty:
            self.parts.live.check_after_deletes(conn, self.store.delete_folds)
            released = self.parts.live.release_idle()
            released += len(self.parts.snapshots.evict_idle(float(config.get("NEXUS_SNAPSHOT_IDLE_S")),
                                                            keep=set(self.parts.views.held())))  # fmt: skip
            self.parts.snapshots.drop_pages()  # (what reads mapped of the snapshots' files, back to the page cache)
            if released and recycler is not None:
                recycler.note()
        gcpause.reclaim()
        rest_after = min(self._db_idle_s, REST_AFTER_RESTART_S) if self.rest_soon else self._db_idle_s
        if (not self._dirty and 0 < rest_after <= self.store.idle_s()
                and (self.parts is None or self.parts.live.graphs_checked(self.store.delete_folds))):
            if self.parts is not None and self.store.opened and not self.store.dormant:
                for read_ahead in self.parts.before_rest:  # (answers while it rests come from these)
                    try:
                        read_ahead(conn)
                    except Exception:  # (the answer that needs it opens the database again instead)
                        log.exception("reading ahead before the database rests failed")
            if self.store.sleep():  # (the next statement opens it again)
                self.rest_soon = False
        if recycler is not None and self.parts is not None and not self._dirty:
            recycler.consider(self.parts.live, self.last_request_at)

    def _run_task(self, job: Job, conn: Conn) -> None:
        try:
            recovery.space_check(self.disk, "a background sync")
            job.outcome = job.task(conn) if job.task else None
        except NoSpace as exc:
            log.warning("internal writer task refused: %s", exc)
            job.outcome = exc
        except BaseException as exc:  # crash barrier for internal work: log, keep serving
            log.exception("internal writer task failed")
            job.outcome = exc
        finally:
            if job.done is not None:
                job.done.set()

    def _failure(self, name: str, request_id: Any, exc: Exception) -> NexusError:
        """The error to answer for a handler that raised something other than a NexusError."""
        if isinstance(exc, (StoreError, OSError)):
            space = recovery.as_no_space(self.disk, exc, name)
            if space is not None:
                return space
        if isinstance(exc, StoreError):
            if isinstance(exc, StoreTimeout):
                return Timeout(f"{name}: query ran past its bound")
            log.exception("request %r (%s) failed in the store", request_id, name)
            return Internal(f"{name}: database error: {exc}")
        log.exception("request %r (%s) crashed", request_id, name)
        return Internal(f"{name} failed: {type(exc).__name__}: {exc}", hint="see `nexus daemon logs`")

    def _run(self, job: Job, conn: Conn, push: zmq.Socket) -> bytes:
        """Run one request behind the crash barrier; always returns exactly one final frame."""
        job.started = True
        try:
            return self._answer(job, conn, push)
        finally:
            job.finished = True  # (before the final frame is pushed: no heartbeat after it)

    def _answer(self, job: Job, conn: Conn, push: zmq.Socket) -> bytes:
        assert job.spec is not None
        if time.monotonic() > job.deadline:
            return protocol.error_frame(job.request_id, Timeout(f"{job.spec.name} waited past its time bound"))
        last = [0.0]
        identity = job.identity

        def progress(data: dict[str, Any]) -> None:
            now = time.monotonic()
            if "phase" in data:
                job.phase = data["phase"]
            if identity is None or (now - last[0] < PROGRESS_INTERVAL_S and not data.get("final")):
                return
            last[0] = job.last_frame = now
            push.send_multipart([_PROGRESS, identity, protocol.progress_frame(job.request_id, data)])

        assert self.parts is not None
        ctx = Ctx(self.parts, conn, job.request_id, job.spec.name, progress=progress, deadline=job.deadline)
        try:
            if job.spec.lane == "write":
                recovery.space_check(self.disk, job.spec.name)  # no_space before anything is written
            result = annotate_view(self.parts.repos, job.args, job.spec.handler(ctx, job.args))
            frame = protocol.ok_frame(job.request_id, result)
        except NexusError as exc:
            frame = protocol.error_frame(job.request_id, exc)
        except Exception as exc:
            frame = protocol.error_frame(job.request_id, self._failure(job.spec.name, job.request_id, exc))
        if len(frame) > protocol.MAX_FRAME_BYTES:
            frame = protocol.error_frame(
                job.request_id,
                TooLarge(f"the result of {job.spec.name} is {len(frame)} bytes", hint="ask for a smaller page"),
            )
        return frame
