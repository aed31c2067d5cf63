"""The only module that imports Kuzu. It opens the database, owns the schema and its versions, and hands out
connections that are safe to use from one thread each.

Traps this module exists to contain (docs/field-notes.md, Kuzu):
- one `kuzu.Database` per process; a second one on the same path segfaults on write;
- after an error inside BEGIN ... COMMIT later statements silently autocommit, and a connection whose BEGIN
  failed segfaults on its next execute: so a failed transaction always discards its connection;
- an explicit buffer pool (the default takes a large share of RAM) and a query timeout on every connection.

An open database costs ~150 MB resident before it holds anything (ARCHITECTURE.md, "Memory at rest"), so the
daemon builds its `Store` closed (`lazy=True`) and the database opens on first need: the first statement on any
connection, or `open()`. Connections open their Kuzu connection on their first statement too. For the same
reason an open database that no statement used for a while is closed by the writer's idle upkeep (`sleep`,
NEXUS_DB_IDLE_S) and opened again by the next statement, on whichever thread (`open` wakes it: the schema and
the start-up work are not run again).
"""

from __future__ import annotations

import collections
import csv
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import config, schema

if TYPE_CHECKING:
    import subprocess

    import kuzu

log = logging.getLogger(__name__)

DEFAULT_BUFFER_POOL_MB = int(config.get("NEXUS_BUFFER_POOL_MB"))
DEFAULT_QUERY_TIMEOUT_MS = 30_000
PREPARED_CACHE = 512  # prepared statements kept per connection
CHECKPOINTS_KEPT = 32  # the last checkpoints' costs that `status` shows
COPY_VIA_CSV = 2_000  # above this many rows a CSV file beats UNWIND (which slows down past a few thousand)


class StoreError(RuntimeError):
    """A database operation failed; the message carries Kuzu's own words. What kind of failure it was is told by
    the subclass (`StoreTimeout`, `StoreBusy`, `TransactionAborted`), decided here from Kuzu's message, so no
    other module reads Kuzu's wording. `no_space` says the failure was a write that found the disk full."""

    no_space = False


class StoreTimeout(StoreError):
    """A statement ran past its time bound (the connection's query timeout, or a wait inside Kuzu)."""


class StoreBusy(StoreError):
    """A checkpoint (asked for, or forced by a COPY or a COMMIT) could not wait out the open read transactions;
    nothing was written, so the unit can be run again."""


class TransactionAborted(StoreError):
    """A statement failed inside a transaction; Kuzu rolled it back. Redo the whole unit."""


class _BusyTimeout(StoreBusy, StoreTimeout):
    pass


class _AbortedTimeout(TransactionAborted, StoreTimeout):
    pass


class _AbortedBusy(TransactionAborted, StoreBusy):
    pass


class _AbortedBusyTimeout(TransactionAborted, StoreBusy, StoreTimeout):
    pass


_KINDS: dict[tuple[bool, bool, bool], type[StoreError]] = {
    # (aborted, busy, timeout) -> class
    (False, False, False): StoreError, (False, False, True): StoreTimeout,
    (False, True, False): StoreBusy, (False, True, True): _BusyTimeout,
    (True, False, False): TransactionAborted, (True, False, True): _AbortedTimeout,
    (True, True, False): _AbortedBusy, (True, True, True): _AbortedBusyTimeout,
}  # fmt: skip


def store_error(message: str, *, aborted: bool = False) -> StoreError:
    """The typed error for one of Kuzu's failures: a query interrupted by its timeout says "Interrupted", a
    checkpoint that cannot wait out readers names the checkpoint (and a timeout)."""
    text = message.lower()
    busy = "checkpoint" in text
    timeout = "interrupted" in text or "timeout" in text
    error = _KINDS[(aborted, busy, timeout)](message)
    # Kuzu 0.11.3 reports a failed write as "IO exception: Cannot write to file ... numBytesWritten: N" (with
    # "Error: Success" when the short write set no errno); see ARCHITECTURE.md, "Invariants".
    error.no_space = any(marker in text for marker in _SPACE_MARKERS)
    return error


_SPACE_MARKERS = ("cannot write to file", "no space left", "disk quota", "file too large")


class Conn:
    """One Kuzu connection, for one thread at a time."""

    def __init__(self, store: Store, timeout_ms: int):
        self._store = store
        self._timeout_ms = timeout_ms
        self._kuzu: kuzu.Connection | None = None  # opened on the first statement (and the database with it)
        self.in_transaction = False
        self._copied = False
        self._made_table = False  # this transaction made an optional table (`ensure_table`)
        self._prepared: dict[str, Any] = {}
        # Called before this connection's first statement of a job, when set (a reader of the server: it waits
        # there while the store's exclusive window is held, `Server._admit`); `admitted` until the job ends. A
        # job answered without the database (from a query snapshot) is never held back by a COPY or checkpoint.
        self.admit: Callable[[Conn], None] | None = None
        self.admitted = False

    def _enter(self) -> None:
        if self.admit is not None and not self.admitted:
            self.admit(self)
        self._store.used_at = time.monotonic()  # (`Store.sleep`: a database nothing uses for a while closes)

    def _prepare(self, query: str) -> Any:
        import warnings

        self._enter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                stmt = self._conn.prepare(query)
        except RuntimeError:
            return None  # some statements cannot be prepared; run them as text (the error repeats there)
        if len(self._prepared) >= PREPARED_CACHE:
            self._prepared.pop(next(iter(self._prepared)))
        self._prepared[query] = stmt
        return stmt

    @property
    def store(self) -> Store:
        """The database this connection belongs to (per-database caches key on it)."""
        return self._store

    def has_table(self, name: str) -> bool:
        """Whether the database has this table now: always for a table the schema makes at open, for an optional
        one (`schema.OPTIONAL_TABLES`) once a row was written to it, and for a memory table once a memory record
        was applied (`schema.MEMORY_TABLES`, made together). A missing table holds no rows."""
        return name not in schema.LAZY_TABLES or name in self._store.optional_tables(self)

    def ensure_table(self, name: str) -> None:
        """Make an optional table, or the memory group, before its first row. Inside a transaction, a rollback
        undoes it with the rest; until the transaction ends no other connection can see it, so none keeps its
        reading of which tables exist (`Store.optional_tables`)."""
        if not self.has_table(name):
            for ddl in schema.group_ddl(name):
                self.execute(ddl)
            if self.in_transaction:
                self._made_table = self._store.tables_pending = True
            self._store.forget_tables()

    @property
    def _conn(self) -> kuzu.Connection:
        conn = self._kuzu
        if conn is None:
            import kuzu

            conn = kuzu.Connection(self._store.database())
            conn.set_query_timeout(self._timeout_ms)
            self._kuzu = conn
        return conn

    def _discard(self) -> None:
        conn, self._kuzu = self._kuzu, None  # the next statement opens a fresh one
        try:
            if conn is not None:
                conn.close()
        except Exception:  # a broken connection may fail to close; it is dropped either way
            pass
        self.in_transaction = False
        self._copied = False
        self._prepared = {}  # statements belong to the connection they were prepared on

    def execute(self, query: str, params: dict[str, Any] | None = None) -> Any:
        self._enter()
        try:
            if params:
                # Kuzu 0.11.3 leaks ~9 KB per `execute(text, params)` (it prepares anew each time); reusing one
                # prepared statement per query text does not. Bounded, and dropped with the connection.
                stmt = self._prepared.get(query)
                if stmt is None:
                    stmt = self._prepare(query)
                if stmt is not None:
                    return self._conn.execute(stmt, params)
            return self._conn.execute(query, params or {})
        except RuntimeError as exc:
            # In a transaction Kuzu already rolled back; later statements would autocommit: poison the unit.
            raise store_error(str(exc), aborted=self.in_transaction) from exc

    def rows(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        result = self.execute(query, params)
        out = result.get_all()
        result.close()
        return out

    def dicts(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        result = self.execute(query, params)
        cols = result.get_column_names()
        out = [dict(zip(cols, row, strict=True)) for row in result.get_all()]
        result.close()
        return out

    def scalar(self, query: str, params: dict[str, Any] | None = None) -> Any:
        rows = self.rows(query, params)
        return rows[0][0] if rows and rows[0] else None

    @contextmanager
    def transaction(self, *, deletes: bool = False) -> Iterator[Conn]:
        """All-or-nothing. On any error the connection is replaced (see module docstring) and it re-raises.
        `deletes`: the unit deletes nodes or relationships, so committed writes are checkpointed first
        (`Store.checkpoint_before_delete`)."""
        if self.in_transaction:
            yield self
            return
        if deletes:
            self._store.checkpoint_before_delete(self)
        self._enter()
        try:
            self._conn.execute("BEGIN TRANSACTION")
        except RuntimeError as exc:
            self._discard()
            raise store_error(f"could not begin a transaction: {exc}") from exc
        self.in_transaction = True
        self._copied = False
        try:
            yield self
            # A COPY inside a transaction defers its checkpoint to COMMIT, which then waits for every open
            # read transaction: hold reads back for the COMMIT too (see _copy).
            with self._store.exclusive() if self._copied else nullcontext():
                try:
                    self._conn.execute("COMMIT")
                except RuntimeError as exc:
                    raise store_error(f"commit failed: {exc}", aborted=True) from exc
            self.in_transaction = False
            if deletes:
                self._store.deletes_unfolded = True
        except BaseException:
            try:
                self._conn.execute("ROLLBACK")
            except Exception:
                pass
            self._discard()
            raise
        finally:
            if self._made_table:  # committed or rolled back: every connection sees the same tables again
                self._made_table = self._store.tables_pending = False
                self._store.forget_tables()

    def copy_nodes(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
        """Bulk-insert node rows (in `columns` order)."""
        return self._copy(table, columns, rows, None)

    def copy_rels(self, table: str, from_table: str, to_table: str, rows: Sequence[Sequence[Any]]) -> int:
        """Bulk-insert relationship rows: (from_id, to_id, *properties) in the table's property order."""
        return self._copy(table, (), rows, (from_table, to_table))

    def _copy(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], rel: tuple[str, str] | None
    ) -> int:
        """COPY is Kuzu's only fast bulk path, but into a non-empty table it first checkpoints, which waits for
        every open read transaction (and fails after ~6 s under steady reads). So each COPY runs inside the
        store's exclusive window, which the server implements by holding new reads back for its duration.
        Large sets go through a CSV file; small ones through `COPY ... FROM (UNWIND $rows ...)`."""
        if not rows:
            return 0
        self._copied = True
        with self._store.exclusive():
            if len(rows) >= COPY_VIA_CSV:
                return self._copy_csv(table, columns, rows, rel)
            names = [f"c{i}" for i in range(len(rows[0]))]
            params = {"rows": [dict(zip(names, row, strict=True)) for row in rows]}
            ret = ", ".join(f"r.{n}" for n in names)
            cols = f"({', '.join(columns)})" if columns else ""
            opts = f" (from='{rel[0]}', to='{rel[1]}')" if rel else ""
            self.execute(f"COPY {table}{cols} FROM (UNWIND $rows AS r RETURN {ret}){opts}", params)
            return len(rows)

    def _copy_csv(
        self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], rel: tuple[str, str] | None
    ) -> int:
        fd, name = tempfile.mkstemp(prefix=f"nexus-{table}-", suffix=".csv", dir=self._store.tmp_dir)
        count = 0
        try:
            with os.fdopen(fd, "w", newline="", encoding="utf-8", errors="surrogateescape") as fh:
                writer = csv.writer(fh)
                for row in rows:
                    writer.writerow(row)
                    count += 1
            if count:
                self._copy_file(table, columns, name, rel)
        finally:
            os.unlink(name)
        return count

    def copy_csv(self, table: str, columns: Sequence[str], name: str, rel: tuple[str, str] | None) -> None:
        """COPY a CSV file written by `csv.writer` (UTF-8, surrogateescape), in the store's exclusive window
        (see `_copy`): the cold write streams its rows to such files before its transaction."""
        self._copied = True
        with self._store.exclusive():
            self._copy_file(table, columns, name, rel)

    def _copy_file(self, table: str, columns: Sequence[str], name: str, rel: tuple[str, str] | None) -> None:
        cols = f"({', '.join(columns)})" if columns else ""
        extra = f", from='{rel[0]}', to='{rel[1]}'" if rel else ""
        # parallel=false: a quoted newline (docstrings) breaks the parallel CSV reader; auto_detect=false:
        # sniffing the dialect from the first rows misreads later rows holding JSON.
        self.execute(
            f"COPY {table}{cols} FROM '{name}' (header=false, parallel=false, auto_detect=false, escape='\"'{extra})"
        )

    def close(self) -> None:
        conn, self._kuzu = self._kuzu, None
        try:
            if conn is not None:
                conn.close()
        except Exception:
            pass


class Store:
    """One database. `lazy`: nothing is opened here; the database opens (and `on_open` runs) on first need,
    in whichever thread needs it first, while every other thread that needs it waits."""

    def __init__(
        self,
        path: Path,
        *,
        buffer_pool_mb: int = DEFAULT_BUFFER_POOL_MB,
        read_only: bool = False,
        lazy: bool = False,
        create_whole: bool = False,
        compact_min_mb: float | None = None,
    ):
        self.path = path
        self.tmp_dir = str(path.parent / "tmp")
        os.makedirs(self.tmp_dir, exist_ok=True)
        self._buffer_pool_mb = buffer_pool_mb
        self._read_only = read_only
        self._optional: frozenset[str] | None = None  # `optional_tables`, read again after each open
        self._optional_gen = 0  # moved by `forget_tables`: a reading taken across it is not kept
        self.tables_pending = False  # an open transaction made an optional table
        # A database that does not exist yet is built with its whole schema beside its path and renamed into
        # place: a kill during the creation cannot leave a half-made schema (with the full-text indexes earlier
        # schemas made, it left hidden tables Kuzu 0.11.3 could neither drop nor create over, and every later
        # open failed). The daemon builds its store this way.
        self._create_whole = create_whole
        self._creator: threading.Thread | None = None
        self._lock = threading.Lock()
        self._conns: list[Conn] = []
        # Set by the server: a context manager during which no read transaction is open (see Conn._copy).
        self.exclusive: Callable[[], AbstractContextManager[Any]] = nullcontext
        # Set by the daemon (recovery.checkpoint_allowed): False while the disk is too full for a checkpoint,
        # which Kuzu 0.11.3 cannot survive on a full disk (ARCHITECTURE.md, "Invariants").
        self.checkpoint_allowed: Callable[[], bool] = lambda: True
        # Set by the daemon (app.build): called with the reason when a compaction finds the file disagreeing with
        # itself (its rows counted one way, exported another); True when the file will be set aside.
        self.on_damaged: Callable[[str], bool] | None = None
        # Run once, in order, right after the database opened (schema, registrations, memory replay), by the
        # thread that opened it; other threads' statements wait until they are done.
        self.on_open: list[Callable[[Store], None]] = []
        # Run after a compaction swapped the rebuilt file in (`_swap_in`): the rows are the same, but their
        # internal ids (table, offset) are renumbered, so whatever is keyed by them must be dropped.
        self.on_swap: list[Callable[[], None]] = []
        # Run after every reopen (a compaction's swap, or the periodic reopen below): the daemon hands the freed
        # C heap back to the system there (glibc `malloc_trim`).
        self.on_reopen: list[Callable[[], None]] = []
        # Run after `sleep` closed the database (the file is whole and closed), and before `_wake` opens it again
        # (a hook that raises keeps it closed): the daemon marks the stop clean meanwhile.
        self.on_sleep: list[Callable[[], None]] = []
        self.on_wake: list[Callable[[], None]] = []
        # Kuzu 0.11.3 keeps ~0.3 MB of anonymous memory per CHECKPOINT statement (even with nothing to fold in)
        # until the Database closes (bench/kuzu_churn.py; RELIABILITY.md, "What holds the RSS"): the database is
        # closed and opened again every NEXUS_REOPEN_CHECKPOINTS checkpoints, which bounds it.
        self._reopen_every = int(config.get("NEXUS_REOPEN_CHECKPOINTS"))
        self.checkpoints_since_open = 0
        # The buffer pool keeps every page it read or wrote until the Database closes, and the pages of a file that
        # grows between compactions come and go with it (a swing of ~130 MB in the op fuzz). A checkpoint also
        # reopens the database once the process's anonymous memory is NEXUS_REOPEN_GROWTH_MB above what it was
        # right after the last reopen (or at the first checkpoint after the first open): whatever Kuzu holds then
        # is given back, and growth that a reopen does not give back (Python's own) only moves the mark.
        self._reopen_growth = int(config.get("NEXUS_REOPEN_GROWTH_MB")) * 1024 * 1024
        self._anon_after_open: int | None = None
        self.reopen_reasons: dict[str, int] = {}  # the checkpoints' reopens by why (`_reopen_reason`)
        # Kuzu 0.11.3 can damage a relationship table at a checkpoint that folds in deletes (ARCHITECTURE.md,
        # "Invariants"): such checkpoints are counted, so the writer can check the graphs after them
        # (`LiveSync.check_after_deletes`).
        self.deletes_unfolded = False
        self.delete_folds = 0
        # The last checkpoints' costs, for `status` (`compaction_status`): (ms waiting for the exclusive window,
        # ms of Kuzu's CHECKPOINT, kB of WAL it folded in). An edit a moment after another waits for the
        # checkpoint of the one before.
        self.checkpoint_costs: collections.deque[tuple[int, int, int]] = collections.deque(maxlen=CHECKPOINTS_KEPT)
        # Set after a big write (a cold index): the next checkpoint also reopens the database. Kuzu keeps the
        # pages that write touched resident in its buffer pool (143 of a stdlib daemon's 610 MB), which only
        # closing the Database gives back; the reopened one reads the pages it needs again, from the file.
        self._reopen_due = False
        self.schema_report: dict[str, Any] = {}
        self.fts_available = False
        self._db: kuzu.Database | None = None
        self._admin_conn: Conn | None = None
        # Compaction (`maybe_compact`): the file size that makes the writer look at the live data again, and
        # what the compactions did (the `compaction` part of `status`'s health section).
        if compact_min_mb is None:
            compact_min_mb = float(config.get("NEXUS_COMPACT_MIN_MB"))
        self._compact_min = int(compact_min_mb * 1024 * 1024)
        self._compact_ratio = max(1.5, float(config.get("NEXUS_COMPACT_RATIO")))
        self._compact_base: int | None = None  # the file's size right after its last compaction (read at open)
        self._compact_at = self._compact_min
        self.compactions: dict[str, Any] = {"count": 0, "failed": 0, "tooLarge": 0, "last": None}
        self._open_lock = threading.RLock()
        self._opening = False
        self._reopening = False  # inside `_reopen` (closed and opened again in the exclusive window)
        self._ready = False
        self._closed = False
        # Closed by `sleep` while nothing used it, opened again by the next statement (`open` -> `_wake`).
        self._dormant = False
        self.used_at = time.monotonic()  # the last statement on any connection (`Conn._enter`)
        self.sleeps = 0  # how many times `sleep` closed it (status)
        if not lazy:
            self.open()

    @property
    def buffer_pool_bytes(self) -> int:
        return self._buffer_pool_mb * 1024 * 1024

    @property
    def opened(self) -> bool:
        """The database is open (always, unless built `lazy` and not needed yet). A reopen in the exclusive
        window counts as open: a read that needs no statement (`status`) runs during it (`Conn.admit`); so does a
        database closed while idle (`sleep`), which the next statement opens again without the start-up work."""
        return self._ready or self._reopening or self._dormant

    @property
    def dormant(self) -> bool:
        """Closed by `sleep` while nothing used it; the next statement opens it again."""
        return self._dormant

    def open(self) -> None:
        """Open the database now, if it is not open yet (idempotent, thread-safe)."""
        if self._ready:
            return
        with self._open_lock:
            if self._ready or self._opening:  # open already, or this thread is inside its own open
                return
            if self._closed:
                raise StoreError("the database is closed")
            if self._dormant:
                self._wake()
                return
            self._opening = True
            try:
                self._open_database()
                for hook in self.on_open:
                    hook(self)
                self._ready = True
            except BaseException:
                self._abandon()
                raise
            finally:
                self._opening = False

    def _open_database(self) -> None:
        creator = self._creator
        if creator is not None:
            creator.join()
        if self._create_whole and not self._read_only:  # the daemon's own database (not a child's or a tool's)
            self._clear_compaction_leftovers()
            if self.path.exists():
                self._load_base()
            else:
                self._base_path.unlink(missing_ok=True)  # a new file: what the old one compacted to says nothing
        if self._create_whole and not self._read_only and not self.path.exists():
            self._create_elsewhere()
        log.info("opening the database %s", self.path)
        self._db = self._kuzu_database(self.path)
        conn = self._admin_conn = self.connect()
        try:
            conn.execute("LOAD EXTENSION fts")
            self.fts_available = True
        except StoreError:
            try:
                conn.execute("INSTALL fts")
                conn.execute("LOAD EXTENSION fts")
                self.fts_available = True
            except StoreError as exc:  # (only needed to drop an older schema's full-text indexes)
                log.warning("full-text extension unavailable: %s", exc)

    def _kuzu_database(self, path: Path) -> kuzu.Database:
        import kuzu

        # auto_checkpoint off: Kuzu's automatic checkpoint runs inside a writer's COMMIT and waits for every
        # open read transaction; under steady query load it times out and fails the write. We checkpoint
        # ourselves when the writer is idle (and before a clean exit) and retry when readers are busy.
        return kuzu.Database(
            str(path),
            buffer_pool_size=self._buffer_pool_mb * 1024 * 1024,
            read_only=self._read_only,
            max_num_threads=2,
            auto_checkpoint=False,
        )

    def prepare(self) -> None:
        """Start building a database that does not exist yet, in the background (see `_create_elsewhere`), so
        the first need finds it ready to open."""
        if self._create_whole and not self._read_only and not self.path.exists() and self._creator is None:
            self._creator = threading.Thread(target=self._create_quietly, name="db-create", daemon=True)
            self._creator.start()

    def _create_quietly(self) -> None:
        try:
            self._create_elsewhere()
        except Exception:  # the open that needs it tries again and reports
            log.exception("building the new database failed; the first open tries again")

    def _create_elsewhere(self) -> None:
        """Build a new database's schema at a temporary path, in a child process, fold it into the file and
        rename it into place. In a child because creating the schema costs memory this process would keep after
        the close (~195 MB with the full-text indexes of earlier schemas)."""

        tmp = self.path.with_name(self.path.name + ".creating")
        for suffix in ("", ".wal", ".shadow"):  # what a kill during an earlier creation left
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        log.info("creating the database %s", self.path)
        # The child dies with this process (PR_SET_PDEATHSIG), so a kill -9 of the daemon leaves no creator
        # running on the temporary path that the next start clears and builds again.
        proc = _run_child(
            "from pathlib import Path\n"
            "from nexusd.store import Store\n"
            "s = Store(Path(sys.argv[1]), buffer_pool_mb=int(sys.argv[2]))\n"
            "s.ensure_schema()\n"
            "s._admin.execute('CHECKPOINT')\n"
            "s.close()\n",
            [str(tmp), str(min(self._buffer_pool_mb, 64))],
            timeout=300,
        )
        if proc.returncode != 0 or os.path.exists(str(tmp) + ".wal"):
            detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
            raise StoreError(f"could not create the database at {tmp}: {detail[0]}")
        os.replace(tmp, self.path)

    def _abandon(self) -> None:
        """An open that failed: drop what it made, so the next need tries again."""
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # each opens a fresh Kuzu connection on its next statement
            conn.close()
        db, self._db, self._admin_conn = self._db, None, None
        if db is not None:
            try:
                db.close()
            except Exception:
                pass

    def database(self) -> kuzu.Database:
        """The open database, opening it first when needed."""
        if not self._ready:
            if self._closed:
                raise StoreError("the database is closed")
            self.open()
        assert self._db is not None
        return self._db

    @property
    def db(self) -> kuzu.Database:
        return self.database()

    @property
    def _admin(self) -> Conn:
        if not self._ready:
            self.open()
        assert self._admin_conn is not None
        return self._admin_conn

    def connect(self, timeout_ms: int = DEFAULT_QUERY_TIMEOUT_MS) -> Conn:
        conn = Conn(self, timeout_ms)  # no Kuzu connection (nor database) until its first statement
        with self._lock:
            self._conns.append(conn)
        return conn

    # -- schema -------------------------------------------------------------------------------------

    def ensure_schema(self) -> dict[str, Any]:
        """Create what is missing; rebuild layers whose version changed. Returns what was done."""
        conn = self._admin
        for ddl in schema.REGISTRY_TABLES:
            conn.execute(ddl)
        code_v = self.meta_get("schema.code")
        memory_v = self.meta_get("schema.memory")
        report: dict[str, Any] = {"code_rebuilt": False, "memory_recreated": False}
        if code_v is not None and int(code_v) != schema.CODE_SCHEMA_VERSION:
            log.warning("code schema %s -> %s: dropping the derived code layer", code_v, schema.CODE_SCHEMA_VERSION)
            self._drop(schema.CODE_DROP_ORDER)
            conn.execute("MATCH (r:Repository) SET r.graphVersion = 0, r.indexedAt = NULL, r.lastBuild = NULL")
            report["code_rebuilt"] = True
        if memory_v is not None and int(memory_v) != schema.MEMORY_SCHEMA_VERSION:
            log.warning("memory schema %s -> %s: recreating from the journal", memory_v, schema.MEMORY_SCHEMA_VERSION)
            self._drop(["ABOUT", "APPLIES_TO"] + schema.MEMORY_DROP_ORDER)
            report["memory_recreated"] = True
        existing = {row[0] for row in conn.rows("CALL SHOW_TABLES() RETURN name")}
        for group in schema.LAZY_GROUPS:  # empty: made again before its first row (schema.LAZY_GROUPS)
            nodes = sorted(group & existing & schema.NODE_TABLES)
            if nodes and not self._read_only and not any(conn.scalar(f"MATCH (n:{n}) RETURN count(n)") for n in nodes):
                self._drop(sorted(group, key=lambda t: t in schema.NODE_TABLES))  # (relationship tables first)
                existing -= group
        for ddl in schema.all_table_ddl(optional=existing):
            conn.execute(ddl)
        self.forget_tables()
        self.drop_fts_indexes()
        self.meta_set("schema.code", str(schema.CODE_SCHEMA_VERSION))
        self.meta_set("schema.memory", str(schema.MEMORY_SCHEMA_VERSION))
        self.schema_report = report
        return report

    def drop_fts_indexes(self) -> None:
        """Drop the full-text indexes an older schema made (none is made now: `schema.py`). Each cost ~11 MB of
        resident memory at every open and work on every insert into its table."""
        if not self.fts_available:
            return
        for row in self._admin.dicts("CALL SHOW_INDEXES() RETURN *"):
            if row["index_type"] == "FTS":
                self._admin.execute(f"CALL DROP_FTS_INDEX('{row['table_name']}', '{row['index_name']}')")
                log.info("dropped the full-text index %s, which no query uses", row["index_name"])

    def optional_tables(self, conn: Conn) -> frozenset[str]:
        """Which of the tables it may lack (`schema.LAZY_TABLES`) the database has, as `conn` sees them: read
        once and kept until a table is made or dropped. A reading taken while a transaction that made one is open,
        or across the making, is not kept (another connection's reading would miss the table for good, and a
        delete on the writer would then skip its rows)."""
        present = self._optional
        if present is None:
            gen = self._optional_gen
            present = frozenset(schema.LAZY_TABLES & {row[0] for row in conn.rows("CALL SHOW_TABLES() RETURN name")})
            if gen == self._optional_gen and not self.tables_pending:
                self._optional = present
        return present

    def forget_tables(self) -> None:
        """A table was made or dropped: read them again at the next `optional_tables`."""
        self._optional = None
        self._optional_gen += 1

    def _drop(self, tables: Iterable[str]) -> None:
        self.forget_tables()
        existing = {row[0] for row in self._admin.rows("CALL SHOW_TABLES() RETURN name")}
        indexes = {(row[0], row[1]) for row in self._admin.rows("CALL SHOW_INDEXES() RETURN *")}
        for table, index in indexes:
            if table in tables:
                self._admin.execute(f"CALL DROP_FTS_INDEX('{table}', '{index}')")
        for table in tables:
            if table in existing:
                self._admin.execute(f"DROP TABLE {table}")

    def meta_get(self, key: str) -> str | None:
        value = self._admin.scalar("MATCH (m:Meta {key: $k}) RETURN m.value", {"k": key})
        return None if value is None else str(value)

    def meta_set(self, key: str, value: str) -> None:
        """Set a registry value, unless it already holds it: a SET of a string, even to the value it holds,
        makes the next checkpoint write the column's chunk again with every value it held."""
        if self.meta_get(key) != value:
            self._admin.execute("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})

    # -- lifecycle ----------------------------------------------------------------------------------

    def checkpoint(self, conn: Conn | None = None, *, reopen: bool = True) -> bool:
        """Fold the WAL into the database file, then compact the file when it grew (`maybe_compact`). False when
        open read transactions made it time out.
        `reopen`: also reopen the database when one is due (`_reopen_reason`). The checkpoints between an edit and
        the next (`checkpoint_before_delete`, the writer's fold right after a write) leave that to the writer's
        idle one: after the Linux kernel's cold index, a reopen for memory growth came due at each of them (the
        edit's pages read into the emptied buffer pool grew it again past the mark), and every edit 0.3 s apart
        paid a reopen and a cold buffer pool. A compaction stays possible at each: under writes that never pause,
        the file must stay bounded all the same."""
        if not self._ready:
            return True  # never opened: nothing was written
        if not self.checkpoint_allowed():
            log.warning("checkpoint postponed: too little free disk space")
            return False
        used = self.used_at  # (upkeep, not use: a database rests NEXUS_DB_IDLE_S after its last use, `sleep`)
        try:
            t0 = time.perf_counter()
            with self.exclusive():
                t1 = time.perf_counter()
                wal = self.wal_bytes()
                (conn or self._admin).execute("CHECKPOINT")
                took = round((time.perf_counter() - t1) * 1000)
                self.checkpoint_costs.append((round((t1 - t0) * 1000), took, wal // 1024))
                self.checkpoints_since_open += 1
                if self.deletes_unfolded:
                    self.deletes_unfolded = False
                    self.delete_folds += 1
                reason = self._reopen_reason() if reopen else None
                if reason and not self._read_only and (conn is None or not conn.in_transaction):
                    self.reopen_reasons[reason] = self.reopen_reasons.get(reason, 0) + 1
                    self._reopen(None)  # in the same window: no read transaction is open
            self.used_at = used
        except StoreError as exc:
            log.info("checkpoint postponed: %s", exc)
            return False
        if conn is not None and not conn.in_transaction:
            self.maybe_compact(conn)
        return True

    def _reopen_reason(self) -> str | None:
        """Why the checkpoint that just ran should also reopen the database, or None."""
        if self._reopen_due:
            return "bigWrite"
        if self._reopen_every > 0 and self.checkpoints_since_open >= self._reopen_every:
            return "checkpoints"
        if self._reopen_growth > 0:
            anon = anon_rss()
            if self._anon_after_open is None:  # the first checkpoint since the first open sets the mark
                self._anon_after_open = anon
            elif anon is not None and anon - self._anon_after_open >= self._reopen_growth:
                return "memory"
        return None

    @property
    def reopens(self) -> int:
        """How many times a checkpoint reopened the database (a compaction's swap is counted apart)."""
        return sum(self.reopen_reasons.values())

    def idle_s(self) -> float:
        """Seconds since the last statement on any connection."""
        return time.monotonic() - self.used_at

    def sleep(self) -> bool:
        """Close the database while nothing needs it (the writer's idle upkeep, NEXUS_DB_IDLE_S): an open one holds
        ~42-80 MB of Kuzu's own per-table structures (8-15 node tables) plus the buffer pool pages it read, all of
        which closing gives back (`on_reopen` trims the C heap). The next statement on any connection opens it again
        (`_wake`, ~0.1 s). Runs in the exclusive window, after a CHECKPOINT that succeeded: no read transaction is
        open and the WAL is folded in, so the file left closed is whole (a kill while it rests loses nothing).
        False when it stayed open: not open, read-only, no room on the disk for the checkpoint (Kuzu aborts the
        process in a checkpoint or a close on a full disk), or a read held the checkpoint back."""
        if not self._ready or self._read_only or self._opening or not self.checkpoint_allowed():
            return False
        t0 = time.monotonic()
        try:
            with self.exclusive(), self._open_lock:
                if not self._ready:
                    return False
                self._admin.execute("CHECKPOINT")
                self._dormant = True  # (before the close: `opened` stays true throughout)
                self._shut()  # (a connection's next statement wakes the database)
        except StoreError as exc:
            log.info("database left open: %s", exc)
            return False
        self.sleeps += 1
        for hook in [*self.on_sleep, *self.on_reopen]:
            hook()
        log.info("closed the database while idle (%.2f s)", time.monotonic() - t0)
        return True

    def _wake(self) -> None:
        """Open the database `sleep` closed, as a reopen does (the caller holds `_open_lock`): the schema, the
        registrations and the memory replay already ran in this process and are not run again."""
        t0 = time.monotonic()
        for hook in self.on_wake:
            hook()
        self._open_again()
        self._dormant = False
        self._anon_after_open = anon_rss()
        log.info("opened the database again after it rested (%.2f s)", time.monotonic() - t0)

    def reopen_soon(self) -> None:
        """Close and reopen the database at the next checkpoint (the writer's idle one), to hand back the buffer
        pool pages a big write left resident."""
        self._reopen_due = True

    def checkpoint_before_delete(self, conn: Conn) -> None:
        """Fold committed writes into the database file before a transaction that deletes nodes together
        with their relationships. Kuzu 0.11.3 segfaults later (on the next relationship insert touching the
        same nodes) when DETACH DELETE removes relationships that were committed but not yet checkpointed:
        `remember` about a symbol, then `repo.forget`, `index`, `repo.forget`, `index` killed the daemon
        inside the relink of memory. See ARCHITECTURE.md, "Invariants"."""
        if conn.in_transaction or not self.wal_bytes():
            return
        if not self.checkpoint_allowed():
            from .errors import NoSpace

            raise NoSpace("too little free disk space to delete safely", hint="free some space, then retry")
        for _ in range(3):
            if self.checkpoint(conn, reopen=False):
                return
        from .errors import Busy

        raise Busy("the database is too busy to delete safely just now", hint="retry in a moment")

    # -- compaction ---------------------------------------------------------------------------------

    def compaction_status(self) -> dict[str, Any]:
        """For `status`: the file's size, the size the last compaction left, the size that triggers the next
        one, what the compactions of this run did, and how many reopens ran and why (`checkpoint`; with the
        anonymous memory measured after the last one, the mark the memory-driven reopen counts from)."""
        return {**self.compactions, "reopens": self.reopens, "reopenReasons": dict(self.reopen_reasons),
                "checkpointMs": [list(row) for row in self.checkpoint_costs],
                "anonAfterOpenBytes": self._anon_after_open, "fileBytes": self.file_bytes(), "compactedBytes": self._compact_base,
                "nextAtBytes": self._compact_at if self._compact_min > 0 else None}  # fmt: skip

    def file_bytes(self) -> int:
        try:
            return os.path.getsize(self.path)
        except OSError:
            return 0

    def live_bytes(self, conn: Conn) -> int:
        """What the tables' column chunks occupy (`storage_info` of every table). An upper bound of what a rebuilt
        file needs: it counts the relationship tables' preallocated CSR headers and the dead bytes of updated
        strings, which a rebuild drops."""
        pages = 0
        for table in [row[0] for row in conn.rows("CALL SHOW_TABLES() RETURN name")]:
            try:
                pages += int(conn.scalar(f"CALL storage_info('{table}') RETURN sum(num_pages)") or 0)
            except StoreError:
                continue  # (counted as empty: the figure only decides whether a compaction is worth trying)
        return pages * PAGE_BYTES

    def maybe_compact(self, conn: Conn) -> bool:
        """Rebuild the database file when it has grown far beyond its live data (right after a checkpoint, on
        the writer, outside any transaction). Kuzu 0.11.3 reuses little of what deletes free: repeated
        forget / re-index / full rebuild cycles grew a file of a few MB of live rows to 1.7 GB, and the
        daemon's RSS with it (RELIABILITY.md, "Database growth"). Cheap when nothing grew: one stat."""
        if self._compact_min <= 0 or self._read_only or conn.in_transaction:
            return False
        size = self.file_bytes()
        if size < self._compact_at:
            return False
        # Over the threshold (NEXUS_COMPACT_MIN_MB, or the ratio times the size the last compaction left).
        # Each compaction costs about one export and one bulk load of the live rows, and the next one waits
        # for the file to grow the ratio over them, so the work stays proportional to what was written.
        try:
            live = self.live_bytes(conn)
        except StoreError as exc:
            log.info("compaction check postponed: %s", exc)
            return False
        if self._compact_base is None and size < self._compact_ratio * live:
            # A file never compacted whose rows fill it (a cold index's bulk load) has nothing to give back:
            # its size is remembered as if a compaction had left it, and the bound over it (`_next_compaction`)
            # takes over. Compacting it "to learn its size" cost the kernel's 956 MB file a failed export of
            # 7 s on the writer right after its index, and again at every start.
            log.info("the database file is dense (%d MB, %d MB of it in column chunks): not compacted",
                     size >> 20, live >> 20)  # fmt: skip
            self._set_base(size)
            return False
        if live > self.buffer_pool_bytes:
            # A compaction moves every row through a buffer pool of the daemon's size (the export here, the
            # load in the child), and every one seen to fail had more column data than that pool: a history's
            # 93 MB with 64 MB (it succeeds with 384), the kernel's 781 MB with 384 ("Buffer manager exception:
            # ... the buffer pool is full", after ~7 s of the writer each time). Not tried; checked again once
            # the file doubled (a larger NEXUS_BUFFER_POOL_MB makes room).
            self.compactions["tooLarge"] += 1
            self._retry_once_doubled(size)
            log.warning("the database file (%d MB, %d MB of column chunks) is not compacted: its rows are more "
                        "than the %d MB buffer pool can export (NEXUS_BUFFER_POOL_MB)", size >> 20, live >> 20,
                        self._buffer_pool_mb)  # fmt: skip
            return False
        return self.compact(conn, live_bytes=live)

    def compact(self, conn: Conn, *, live_bytes: int | None = None) -> bool:
        """Rebuild the file from its own rows: EXPORT DATABASE (parquet) here, a new database built from the
        export in a child process (the daemon's schema, the rows copied, checked row for row by count per
        table), then swapped in under the store's exclusive window.
        The old file stays in place, whole, until the atomic rename: a kill -9 at any moment leaves either
        the old database or the new one, each complete and checkpointed, plus leftovers the next open
        removes. Memory, journal and repositories are not touched: the rows are the same rows."""
        import json
        import shutil
        import subprocess

        t0 = time.monotonic()
        before = self.file_bytes()
        work = Path(self.tmp_dir) / f"compact-{os.getpid()}"
        new = self.path.with_name(self.path.name + COMPACTING)
        ok = False
        failure: BaseException | None = None
        try:
            shutil.rmtree(work, ignore_errors=True)
            for suffix in ("", ".wal", ".shadow"):
                Path(str(new) + suffix).unlink(missing_ok=True)
            if "'" in str(work):
                raise StoreError(f"cannot export to {work}: a quote in the path")
            with self.exclusive():  # the export and the swap see everything committed, and no WAL
                conn.execute("CHECKPOINT")
            counts = table_counts(conn)
            conn.execute(f"EXPORT DATABASE '{work}' (format='parquet')")
            proc = _run_child(
                "from nexusd.store import build_from_export\n"
                "build_from_export(sys.argv[1], sys.argv[2], int(sys.argv[3]))\n",
                # The daemon's own pool: the rows it holds are the rows the copy loads. With 64 MB, copying a
                # whole history's diffs (a 180 MB file, 93 MB of it live) failed with "the buffer pool is full",
                # so a file full of history was never compacted. The child's memory goes when it exits.
                [str(work), str(new), str(self._buffer_pool_mb)],
                timeout=COMPACT_TIMEOUT_S,
            )
            if proc.returncode != 0 or os.path.exists(str(new) + ".wal"):
                detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
                raise StoreError(f"rebuilding the database failed: {detail[0]}")
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            if FAULTS.pop("compaction-mismatch", None):  # debug.damage_next_compaction
                got["Symbol"] = got.get("Symbol", 0) + 1
            wrong = {t: (n, got.get(t)) for t, n in counts.items() if got.get(t) != n}
            if wrong:
                raise Inconsistent(f"the rebuilt database does not hold the same rows: {sorted(wrong.items())[:5]}")
            self._swap_in(new)
            ok = True
        except (StoreError, OSError, ValueError, subprocess.TimeoutExpired) as exc:
            failure = exc
            self.compactions["failed"] += 1
            self.compactions["lastError"] = {"at": time.time(), "error": str(exc)[:300]}
            log.warning("compacting the database failed (it stays as it is): %s", exc)
        finally:
            shutil.rmtree(work, ignore_errors=True)
            for suffix in ("", ".wal", ".shadow"):
                Path(str(new) + suffix).unlink(missing_ok=True)
        if isinstance(failure, Inconsistent) and self.on_damaged is not None:
            # Nothing wrote between the count and the export (both on the writer), so the file's rows read one
            # way and export another: Kuzu 0.11.3's damaged relationship storage (ARCHITECTURE.md, "Invariants"),
            # which no statement inside this file mends. Refused, the compaction is also retried only when the
            # file doubled, and the file, and Kuzu's in-memory indexes with it, grew meanwhile.
            self.on_damaged(f"the database's rows, counted and exported, differ ({failure})")
        after = self.file_bytes()
        if ok:
            self._set_base(after)
        else:
            self._retry_once_doubled(after)
        if ok:
            seconds = round(time.monotonic() - t0, 2)
            self.compactions["count"] += 1
            self.compactions["last"] = {"at": time.time(), "beforeBytes": before, "afterBytes": after,
                                        "liveBytes": live_bytes, "seconds": seconds}  # fmt: skip
            log.info("compacted the database: %d MB -> %d MB in %.1f s", before >> 20, after >> 20, seconds)
        return ok

    @property
    def _base_path(self) -> Path:
        return self.path.with_name(self.path.name + ".compacted")

    def _set_base(self, size: int) -> None:
        """Remember the size a compaction left (also across restarts, in a sidecar beside the database)."""
        self._compact_base = size
        self._compact_at = self._next_compaction(size)
        self._write_sidecar()

    def _retry_once_doubled(self, size: int) -> None:
        """No compaction before the file is twice `size`, also after a restart (a failed or hopeless one costs the
        writer its export each time)."""
        self._compact_at = max(self._compact_at, self._compact_min, 2 * size)
        self._write_sidecar(retry_at=self._compact_at)

    def _write_sidecar(self, retry_at: int | None = None) -> None:
        """The sidecar: the size the last compaction left (0: none yet) and, after a failed one, the size the
        next try waits for (a restart must not pay the same failure again; a success forgets it)."""
        try:
            tmp = self._base_path.with_name(self._base_path.name + ".tmp")
            tmp.write_text(f"{self._compact_base or 0}\n" + (f"{retry_at}\n" if retry_at is not None else ""))
            os.replace(tmp, self._base_path)
        except OSError as exc:  # the next start checks the file once more to learn its size again
            log.warning("could not record the compacted size: %s", exc)

    def _next_compaction(self, size: int) -> int:
        """The file size that triggers the next compaction after one left `size`: the ratio over it, but never
        more than an eighth of the buffer pool over it. An update of one string in a node group makes Kuzu
        0.11.3 append the whole group's strings of that column again at the next checkpoint, and a checkpoint
        that must rewrite a column chunk over about a sixth of the buffer pool fails ("Buffer manager
        exception: ... the buffer pool is full"; `test_compaction.py`), the likely cause of the `internal`
        replies to `index --full` late in a 21-minute op fuzz. Such a chunk grows the file by its own size at
        least, so this bound compacts before one gets there."""
        headroom = min(int((self._compact_ratio - 1) * size), self._buffer_pool_mb * 1024 * 1024 // 8)
        return max(self._compact_min, size + headroom)

    def _load_base(self) -> None:
        """Read the sidecar (`_write_sidecar`)."""
        try:
            numbers = [int(line) for line in self._base_path.read_text().split()]
        except (OSError, ValueError):
            return
        if numbers and numbers[0] > 0:
            self._compact_base = numbers[0]
            self._compact_at = self._next_compaction(numbers[0])
        if len(numbers) > 1 and numbers[1] > self._compact_at:
            self._compact_at = numbers[1]

    def _swap_in(self, new: Path) -> None:
        """Close every connection and the database, rename the rebuilt file into place, open it again. Runs in
        the exclusive window (no read transaction open, new reads held back) and holds the open lock, so a
        statement on any other connection waits for the reopened database instead of reaching a closed one."""
        with self.exclusive():
            self._reopen(new)

    def _reopen(self, new: Path | None) -> None:
        """Close every connection and the database, rename `new` (a rebuilt file) into place if given, and open
        the database again. The caller holds the exclusive window."""
        t0 = time.monotonic()
        with self._open_lock:
            self._reopening = True  # (`opened` stays true: reads that need no statement go on meanwhile)
            try:
                self._shut()
                wal = Path(str(self.path) + ".wal")
                if new is not None:
                    if wal.exists() and wal.stat().st_size:
                        raise StoreError("the database kept a WAL after its checkpoint; not swapped")  # reopened below
                    wal.unlink(missing_ok=True)
                    Path(str(self.path) + ".shadow").unlink(missing_ok=True)
                    os.replace(new, self.path)
                    _fsync_dir(self.path.parent)
            finally:
                self._open_again()  # the new file when the rename happened, else the old one: either is whole
                self._reopening = False
                if new is not None:
                    for hook in self.on_swap:
                        hook()
                else:
                    log.info("reopened the database (%.2f s)", time.monotonic() - t0)
                for hook in self.on_reopen:
                    hook()
                self._anon_after_open = anon_rss()

    def _shut(self) -> None:
        """Discard every connection (each, the admin's too, opens a fresh Kuzu connection at its next statement)
        and close the Database (`_reopen`, `sleep`; the caller holds `_open_lock` in the exclusive window)."""
        with self._lock:
            conns = list(self._conns)
        for c in conns:
            c._discard()
        db, self._db = self._db, None
        self._ready = False
        self.forget_tables()
        if db is not None:
            db.close()

    def _open_again(self) -> None:
        """Open the Database over the file again with its FTS extension, without the first open's start-up work
        (`_reopen`, `_wake`; the caller holds `_open_lock`). If that fails nothing stays open: never two
        Databases over one file, and the next statement tries again."""
        self._db = self._kuzu_database(self.path)
        # Marked as opening: else the statement below, seeing the store not ready, ran a whole second open
        # (another Database over this file, another admin Conn) per compaction.
        self._opening = True
        try:
            if self.fts_available:
                self._admin.execute("LOAD EXTENSION fts")
        except BaseException:
            if self._admin_conn is not None:
                self._admin_conn._discard()
            db, self._db = self._db, None
            if db is not None:
                db.close()
            raise
        finally:
            self._opening = False
        self._ready = True
        self.checkpoints_since_open = 0
        self._reopen_due = False

    def _clear_compaction_leftovers(self) -> None:
        """What a kill during a compaction left: the half-built file and the export."""
        import shutil

        for suffix in ("", ".wal", ".shadow"):
            Path(str(self.path) + COMPACTING + suffix).unlink(missing_ok=True)
        for old in Path(self.tmp_dir).glob("compact-*"):
            shutil.rmtree(old, ignore_errors=True)

    def wal_bytes(self) -> int:
        try:
            return os.path.getsize(str(self.path) + ".wal")
        except OSError:
            return 0

    def close(self) -> None:
        with self._open_lock:
            with self._lock:
                conns, self._conns = self._conns, []
            for conn in conns:
                conn.close()
            db, self._db, self._admin_conn = self._db, None, None
            self._ready = False
            self._closed = True
            if db is not None:
                db.close()


PAGE_BYTES = 4096  # Kuzu's page size
COMPACTING = ".compacting"  # suffix of the file a compaction builds beside the database
COMPACT_TIMEOUT_S = 600


class Inconsistent(StoreError):
    """The database disagrees with itself: a compaction's rebuild from its export holds other row counts than the
    file it was exported from."""


# Debug faults (`debug.damage_next_compaction`): "compaction-mismatch" makes the next compaction's rebuilt file
# count one Symbol more than the live one, the shape of the row mismatches the op fuzz met.
FAULTS: dict[str, bool] = {}


def table_counts(conn: Conn) -> dict[str, int]:
    """Rows per table (nodes and relationships), the check that a rebuilt database holds the same data."""
    out = {}
    for name, kind in conn.rows("CALL SHOW_TABLES() RETURN name, type"):
        pattern = f"(n:{name})" if kind == "NODE" else f"()-[n:{name}]->()"
        out[name] = int(conn.scalar(f"MATCH {pattern} RETURN count(*)") or 0)
    return out


def build_from_export(export_dir: str, path: str, buffer_pool_mb: int) -> None:
    """In a child process (`Store.compact`): a new database at `path` with the daemon's schema, the rows of an
    EXPORT DATABASE copied in; prints the rows per table as JSON. The export's COPY statements are run here
    rather than Kuzu's IMPORT DATABASE, which failed on the full-text indexes of earlier schemas
    ("default_english_stopwords already exists") and would recreate tables the schema no longer has."""
    import json
    import re

    store = Store(Path(path), buffer_pool_mb=buffer_pool_mb)
    conn = store._admin
    base = Path(export_dir)
    lines = (base / "copy.cypher").read_text().splitlines()
    exported = {m.group(1) for m in (re.match(r"COPY `([^`]+)`", line.strip()) for line in lines) if m}
    for ddl in schema.all_table_ddl(optional=exported):  # (the optional tables the live file has, empty or not)
        conn.execute(ddl)
    tables = {row[0] for row in conn.rows("CALL SHOW_TABLES() RETURN name")}
    for line in lines:
        m = re.match(r'COPY `([^`]+)`(.*) FROM "([^"]+)"(.*);\s*$', line.strip())
        if m is None:
            continue
        table, cols, name, opts = m.groups()
        if table not in tables:
            continue  # tables the schema no longer has (an older schema's full-text stopwords)
        # Parquet takes no options but the rel table pair (from=, to=).
        pair = ", ".join(re.findall(r"(?:from|to)='[^']*'", opts))
        conn.execute(f"COPY `{table}`{cols} FROM '{base / name}'" + (f" ({pair})" if pair else ""))
    conn.execute("CHECKPOINT")
    print(json.dumps(table_counts(conn)))
    store.close()


def anon_rss() -> int | None:
    """This process's resident anonymous memory in bytes (`RssAnon` of /proc/self/status), or None where there is
    no such file. Read at each checkpoint: ~15 us."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"RssAnon:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def probe(path: Path) -> tuple[bool, str]:
    """Open the database in a throwaway subprocess: a poisoned file segfaults there, not in the daemon."""
    import subprocess
    import sys

    code = (
        "import sys, kuzu\n"
        "db = kuzu.Database(sys.argv[1], buffer_pool_size=64*1024*1024)\n"
        "c = kuzu.Connection(db)\n"
        "c.execute('CALL SHOW_TABLES() RETURN count(*)')\n"
        "print('ok')\n"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        return False, "opening the database timed out"
    if proc.returncode == 0 and "ok" in proc.stdout:
        return True, ""
    detail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
    return False, detail[0]


_CHILD_PRELUDE = (
    "import ctypes, os, signal, sys\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)\n"
    "except (OSError, AttributeError):\n"
    "    pass\n"
    "if os.getppid() != int(sys.argv[-1]):\n"
    "    sys.exit(1)\n"
)


def _run_child(body: str, args: list[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run `body` in a Python child that dies with this process (PR_SET_PDEATHSIG) and exits at once if its parent
    is already gone, with this package importable; the parent's pid is the child's last argument."""
    import subprocess
    import sys

    here = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, "-c", _CHILD_PRELUDE + body, *args, str(os.getpid())],
        capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip
