"""The memory service of one daemon: the journal, the recall index, and the one path every write takes.

    write(record):  journal append + fsync  ->  apply in one transaction (+ Meta journal position)  ->
                    recall index update  ->  the caller acknowledges
    start():        replay what the journal has and the graph lacks; rebuild the index from the graph

Only the writer thread calls `write` (ops in lane "write" and tasks queued with `submit`), so journal order,
graph order and turn ordinals all follow arrival order.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import model
from .index import MemoryIndex
from .journal import Journal
from .text import search_text

if TYPE_CHECKING:
    from pathlib import Path

    from ..store import Conn
    from ..writer import Submit

log = logging.getLogger(__name__)

META_POSITION = "memory.journal.position"  # Position row: seq and byte offset of the last record applied to the graph
REPLAY_BATCH = 500
USAGE_FLUSH_DELAY_S = 0.2
# Records whose application deletes nodes or relationships (see store.Conn.transaction(deletes=...)).
DELETING_RECORDS = frozenset({"forget", "attach"})
# Node records a later `forget` undoes whole: the node and every relationship of it go (DETACH DELETE), and nothing
# else kept a mark of it. Sessions are not among them (a session's record also makes its User), nor a Turn named by
# id (it also raised its session's turn count); a Turn goes with its session.
_FOLDABLE = frozenset({"Fact", "Procedure", "Handoff"})


class Forgotten:
    """What the rest of a journal forgets, so a replay from the beginning (a new database, a damaged file set
    aside) skips the records whose every effect a later `forget` removes: the replay's time follows what is kept,
    not every write ever made (a restart of the op fuzz, whose journal is mostly facts forgotten again, spent 10.6 s
    replaying 5,777 records before its socket answered; bench/replay_bench.py). `fold` returns the record to apply,
    narrowed where only part of it is undone, or None for one to skip. The graph it leaves is the one a full
    replay leaves (tests/memory/test_durability.py)."""

    def __init__(self) -> None:
        self.nodes: dict[str, int] = {}  # node id -> seq of the last forget naming it
        self.sessions: dict[str, int] = {}  # session id -> seq of the last forget naming it (its turns go with it)

    def note(self, record: dict[str, Any]) -> None:
        seq = int(record["seq"])
        for label, ids in (record.get("ids") or {}).items():
            for node_id in ids:
                if isinstance(node_id, str):
                    self.nodes[node_id] = seq
                    if label == "Session":
                        self.sessions[node_id] = seq

    def _gone(self, node: dict[str, Any], label: str, seq: int) -> bool:
        if label in _FOLDABLE:
            return self.nodes.get(str(node.get("id")), 0) > seq
        if label == "Turn":
            return self.sessions.get(str(node.get("sessionId")), 0) > seq
        return False

    def fold(self, record: dict[str, Any]) -> dict[str, Any] | None:
        if not self.nodes:
            return record
        seq, kind = int(record["seq"]), record["op"]
        if kind in _FOLDABLE or kind == "Turn":
            return None if self._gone(record["node"], kind, seq) else record
        if kind in ("attach", "handoff.ack"):
            return None if self.nodes.get(str(record.get("id")), 0) > seq else record
        if kind == "used":  # items: (label, id, count, at)
            items = [i for i in record["items"] if self.nodes.get(str(i[1]), 0) <= seq]
            if not items:
                return None
            return record if len(items) == len(record["items"]) else {**record, "items": items}
        if kind == "import":
            nodes = [n for n in record["nodes"] if not self._gone(n, n["type"], seq)]
            return record if len(nodes) == len(record["nodes"]) else {**record, "nodes": nodes}
        return record


class MemoryService:
    """`submit` queues work for the writer thread; `connect` opens a connection of its own (used only at stop,
    once the writer is gone); `recreated`: the memory tables were just created anew (schema change or a new
    database), so the whole journal is replayed."""

    def __init__(
        self,
        journal: Path,
        submit: Submit,
        connect: Callable[[], Conn],
        *,
        recreated: bool = False,
        ensure_ready: Callable[[], None] = lambda: None,
    ):
        self.journal = Journal(journal)
        self._submit = submit
        self._connect = connect
        self._recreated = recreated
        # Called before the recall index is first read: opens the store, whose open runs `start` (app.py).
        self._ensure_ready = ensure_ready
        self._started = False
        self._index = MemoryIndex()
        self._flush_lock = threading.Lock()
        self._flush_pending = False
        self._timer: threading.Timer | None = None
        self.replayed = 0
        self.replay_skipped = 0  # replayed records skipped because a later `forget` removes what they made (Forgotten)

    # -- start --------------------------------------------------------------------------------------

    @property
    def index(self) -> MemoryIndex:
        """The recall index, loaded from the graph (after the journal's replay) by `start`."""
        if not self._started:
            self._ensure_ready()
        return self._index

    @property
    def searchable(self) -> int | None:
        """How many nodes recall searches; None while the store has not been opened (nothing loaded yet)."""
        return len(self._index) if self._started else None

    def start(self, conn: Conn, *, recreated: bool | None = None) -> None:
        if recreated is not None:
            self._recreated = recreated
        seq, offset = (0, 0) if self._recreated else self._position(conn)
        if seq > self.journal.last_seq:
            # The graph knows more than the journal (journal deleted or truncated): write a snapshot of the
            # graph's memory into the journal so the next fresh database can be rebuilt from it.
            log.warning("memory journal is behind the graph (%d < %d): writing a snapshot", self.journal.last_seq, seq)
            nodes = export_nodes(conn, None, None)
            with conn.transaction():
                self._journal_and_apply(conn, {"op": "import", "nodes": nodes})
        elif seq < self.journal.last_seq:
            self.replayed = self._replay(conn, seq, offset)
            log.info("memory: replayed %d journal records (from seq %d; %d of them skipped, their nodes forgotten "
                     "later)", self.replayed, seq, self.replay_skipped)  # fmt: skip
        self._load_index(conn)
        self._started = True
        log.info("memory: %d searchable nodes, journal at seq %d", len(self._index), self.journal.last_seq)

    def _position(self, conn: Conn) -> tuple[int, int]:
        rows = conn.has_table("Position") and conn.rows(
            "MATCH (p:Position {key: $k}) RETURN p.seq, p.byteOffset", {"k": META_POSITION}
        )
        if rows:
            return int(rows[0][0]), int(rows[0][1])
        value = conn.scalar("MATCH (m:Meta {key: $k}) RETURN m.value", {"k": META_POSITION})  # (a store before
        if not value:  # Position: "seq:offset", then never set again)
            return 0, 0
        seq, _, offset = str(value).partition(":")
        return int(seq), int(offset or 0)

    def _replay(self, conn: Conn, seq: int, offset: int) -> int:
        voided: set[int] = set()
        later = Forgotten()
        for r, _ in self.journal.records(seq, offset):
            if r.get("op") == "void":
                voided.add(int(r["void"]))
            elif r.get("op") == "forget":
                later.note(r)
        batch: list[tuple[dict[str, Any], int]] = []
        count = 0

        def apply(record: dict[str, Any]) -> int:
            """Apply one record (as `later` folds it); 1 when it was skipped whole, else 0."""
            if record["op"] == "void" or int(record["seq"]) in voided:
                return 0
            folded = later.fold(record)
            if folded is None:
                return 1
            model.apply(conn, folded)
            return 0

        def flush() -> None:
            nonlocal count
            if not batch:
                return
            deletes = any(r.get("op") in DELETING_RECORDS for r, _ in batch)
            try:
                with conn.transaction(deletes=deletes):
                    skipped = sum(apply(record) for record, _ in batch)
                    self._set_position(conn, int(batch[-1][0]["seq"]), batch[-1][1])
                count += len(batch)
                self.replay_skipped += skipped
            except Exception:
                # One bad record must not cost the rest: redo this batch record by record.
                for record, end in batch:
                    try:
                        with conn.transaction(deletes=record.get("op") in DELETING_RECORDS):
                            skipped = apply(record)
                            self._set_position(conn, int(record["seq"]), end)
                        count += 1
                        self.replay_skipped += skipped
                    except Exception:
                        log.exception("memory replay: record %s could not be applied; skipped", record.get("seq"))
            batch.clear()

        for record, end in self.journal.records(seq, offset):
            batch.append((record, end))
            if len(batch) >= REPLAY_BATCH:
                flush()
        flush()
        return count

    def _set_position(self, conn: Conn, seq: int, offset: int) -> None:
        conn.ensure_table("Position")  # (with the first record: schema.POSITION_TABLE)
        conn.execute(
            "MERGE (p:Position {key: $k}) SET p.seq = $s, p.byteOffset = $o", {"k": META_POSITION, "s": seq, "o": offset}
        )

    def _load_index(self, conn: Conn) -> None:
        if not model.held(conn):
            return
        for label in model.SEARCHABLE:
            for row in conn.dicts(f"MATCH (n:{label}) RETURN n.*"):
                props = {k.split(".", 1)[1]: v for k, v in row.items()}
                self._index_node(label, props)

    # -- writes (writer thread only) ---------------------------------------------------------------------

    def write(self, conn: Conn, record: dict[str, Any]) -> int:
        """Make one record durable, apply it, index it. Returns its journal seq."""
        mark = self.journal.mark()
        try:
            with conn.transaction(deletes=record.get("op") in DELETING_RECORDS):
                seq = self._journal_and_apply(conn, record)
        except BaseException:
            # Also a COMMIT that failed (a full disk): the answer is an error, so the record must not stay.
            self._unjournal(mark)
            raise
        self._index_record(record)
        return seq

    def _journal_and_apply(self, conn: Conn, record: dict[str, Any]) -> int:
        record = {"at": time.time(), **record}
        mark = self.journal.mark()
        seq, offset = self.journal.append(record)
        try:
            model.apply(conn, record)
            self._set_position(conn, seq, offset)
        except BaseException:
            self._unjournal(mark)
            raise
        return seq

    def _unjournal(self, mark: tuple[int, int]) -> None:
        """A record is in the journal but its transaction failed: cut it off again (needs no disk space);
        failing that, void it, or a replay would resurrect a write that was answered with an error."""
        seq = self.journal.last_seq
        if seq <= mark[0] or self.journal.rollback(mark):
            return
        try:
            self.journal.append({"op": "void", "void": seq})
        except Exception:
            log.exception("memory journal: could not void record %d", seq)

    def submit(self, task: Callable[[Conn], Any]) -> None:
        """Queue work for the writer thread (from a reader)."""
        self._submit(task)

    def schedule_usage_flush(self) -> None:
        """Persist usage counts soon: at most one flush per USAGE_FLUSH_DELAY_S, so a burst of recalls costs
        the writer one statement per label instead of one transaction per recall."""
        with self._flush_lock:
            if self._flush_pending:
                return
            self._flush_pending = True
            self._timer = threading.Timer(USAGE_FLUSH_DELAY_S, self.submit, args=(self._flush_usage,))
            self._timer.daemon = True
            self._timer.start()

    def stop(self) -> None:
        """Flush pending usage counts: through the writer if it still runs, else (it was drained) directly."""
        with self._flush_lock:
            timer, self._timer = self._timer, None
            pending = self._flush_pending
        if timer is not None:
            timer.cancel()
        if not pending:
            return
        try:
            writer_alive = any(t.name == "writer" and t.is_alive() for t in threading.enumerate())
            if writer_alive:
                self._submit(self._flush_usage, wait=True, timeout=10.0)
            else:
                conn = self._connect()
                try:
                    self._flush_usage(conn)
                finally:
                    conn.close()
        except Exception:
            log.exception("memory: could not flush usage counts at stop")

    def _flush_usage(self, conn: Conn) -> None:
        with self._flush_lock:
            self._flush_pending = False
        items = self._index.take_dirty()
        if items:
            self.write(conn, {"op": "used", "items": [list(i) for i in items]})

    # -- the recall index -----------------------------------------------------------------------------

    def _index_record(self, record: dict[str, Any]) -> None:
        kind = record["op"]
        if kind in model.SEARCHABLE:
            self._index_node(kind, record["node"])
        elif kind == "import":
            for node in record["nodes"]:
                if node["type"] in model.SEARCHABLE:
                    self._index_node(node["type"], node)
        elif kind == "forget":
            for ids in record["ids"].values():
                for node_id in ids:
                    self._index.remove(node_id)
        elif kind == "attach":
            doc = self._index.get(record["id"])
            if doc is not None:
                doc.item.update({k: record[k] for k in ("symbolId", "symbolKey", "symbolName", "symbolPath") if k in record})
                if record.get("symbolHash"):
                    doc.item["symbolHash"] = record["symbolHash"]
                doc.item["symbol"] = _symbol_item(record)
        elif kind == "handoff.ack":
            self._index.update_item(record["id"], acknowledged=True)

    def _index_node(self, label: str, props: dict[str, Any]) -> None:
        item = item_of(label, props)
        if label == "Fact":
            text = search_text(props.get("text"), props.get("symbolName"), props.get("symbolKey"))
        elif label == "Procedure":
            text = search_text(props.get("title"), *(props.get("steps") or []), *(props.get("files") or []))
        else:
            text = search_text(props.get("done"), props.get("openItems"), props.get("nextSteps"))
        self._index.put(label, props, text, item)

    def close(self) -> None:
        self.journal.close()  # after the writer stopped; every record was fsynced when written


def _symbol_item(props: dict[str, Any]) -> dict[str, Any] | None:
    if not props.get("symbolId"):
        return None
    return {
        "id": props.get("symbolId"),
        "key": props.get("symbolKey"),
        "name": props.get("symbolName"),
        "path": props.get("symbolPath"),
    }


def item_of(label: str, props: dict[str, Any]) -> dict[str, Any]:
    """What recall shows of a node (usage is added at read time)."""
    base = {"id": props["id"], "sessionId": props.get("sessionId"), "createdAt": props.get("createdAt")}
    if label == "Fact":
        fact = {"type": "fact", **base, "text": props.get("text") or ""}
        for key in ("symbolId", "symbolKey", "symbolName", "symbolPath", "symbolKind", "symbolHash", "symbolShape"):
            fact[key] = props.get(key)
        fact["symbol"] = _symbol_item(props)
        return fact
    if label == "Procedure":
        return {
            "type": "procedure",
            **base,
            "title": props.get("title") or "",
            "steps": list(props.get("steps") or []),
            "files": list(props.get("files") or []),
        }
    return {
        "type": "handoff",
        **base,
        "done": props.get("done") or "",
        "open": props.get("openItems") or "",
        "next": props.get("nextSteps") or "",
        "evidence": list(props.get("evidence") or []),
        "acknowledged": props.get("acknowledgedAt") is not None,
    }


def render(item: dict[str, Any]) -> str:
    """The text an item costs in a budget (and what the CLI prints)."""
    kind = item["type"]
    if kind == "fact":
        sym = item.get("symbol")
        return item["text"] + (f"  [about {sym.get('key') or sym.get('name')}]" if sym else "")
    if kind == "procedure":
        steps = "\n".join(f"  {i}. {s}" for i, s in enumerate(item["steps"], 1))
        files = f"\n  files: {', '.join(item['files'])}" if item["files"] else ""
        return f"{item['title']}\n{steps}{files}"
    parts = [f"done: {item['done']}"]
    if item.get("open"):
        parts.append(f"open: {item['open']}")
    if item.get("next"):
        parts.append(f"next: {item['next']}")
    return "\n".join(parts)


def export_nodes(conn: Conn, user: str | None, repos: list[str] | None) -> list[dict[str, Any]]:
    """Every memory node of `user` in `repos` (None: everyone / every repository), parents first."""
    out: list[dict[str, Any]] = []
    if not model.held(conn):
        return out
    for label in model.LABELS:
        where: list[str] = []
        params: dict[str, Any] = {}
        if user is not None:
            where.append("n.userId = $u")
            params["u"] = user
        if repos is not None:
            where.append("n.repoId IN $r")
            params["r"] = repos
        clause = f"WHERE {' AND '.join(where)} " if where else ""
        order = "n.sessionId, n.ordinal" if label == "Turn" else "n.id"
        for row in conn.dicts(f"MATCH (n:{label}) {clause}RETURN n.* ORDER BY {order}", params):
            props = {k.split(".", 1)[1]: v for k, v in row.items()}
            props.pop("searchText", None)
            out.append({"type": label, **props})
    return out
