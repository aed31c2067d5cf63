"""Store errors are typed where Kuzu raises them (nexusd/store.py), on a real database: callers catch
`StoreTimeout` / `StoreBusy` / `TransactionAborted`, and no other module reads Kuzu's wording."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nexusd.store import Store, StoreBusy, StoreError, StoreTimeout, TransactionAborted

NEXUSD = Path(__file__).resolve().parents[2] / "nexusd"
HEAVY = "UNWIND range(1, 3000) AS a UNWIND range(1, 3000) AS b UNWIND range(1, 100) AS c RETURN sum(a * b + c)"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "graph.kuzu")
    s.ensure_schema()
    return s


def test_a_query_past_its_timeout_is_a_store_timeout(store: Store) -> None:
    conn = store.connect(timeout_ms=50)
    with pytest.raises(StoreTimeout) as info:
        conn.rows(HEAVY)
    assert not isinstance(info.value, (StoreBusy, TransactionAborted))


def test_a_bad_query_is_a_plain_store_error(store: Store) -> None:
    conn = store.connect()
    with pytest.raises(StoreError) as info:
        conn.rows("MATCH (n:NoSuchTable) RETURN n")
    assert type(info.value) is StoreError


def test_a_failure_inside_a_transaction_aborts_the_unit(store: Store) -> None:
    conn = store.connect()
    with pytest.raises(TransactionAborted), conn.transaction():
        conn.execute("MATCH (n:NoSuchTable) RETURN n")
    assert conn.scalar("RETURN 1") == 1  # the connection was replaced and works


def test_a_checkpoint_that_cannot_wait_out_a_reader_is_busy(store: Store) -> None:
    reader, writer = store.connect(), store.connect()
    writer.execute("MERGE (m:Meta {key: 'k'}) SET m.value = 'v'")
    reader.execute("BEGIN TRANSACTION READ ONLY")  # Kuzu waits ~5 s for it, then gives up
    reader.rows("MATCH (m:Meta) RETURN m.key")
    try:
        with pytest.raises(StoreBusy):
            writer.execute("CHECKPOINT")
    finally:
        reader.execute("COMMIT")
    assert store.checkpoint(writer)  # and once the reader left, it runs


def test_no_module_but_the_store_reads_kuzus_wording() -> None:
    pattern = re.compile(r"\bin\s+str\((exc|err|error|e)\)|str\((exc|err|error|e)\)\.lower\(\)|\bin\s+text\.lower\(\)")
    offenders = [
        f"{path.relative_to(NEXUSD)}:{n}: {line.strip()}"
        for path in sorted(NEXUSD.rglob("*.py"))
        # protocol.py is msgpack's one importer and reads msgpack's wording (a length bound), never Kuzu's
        if path.name not in ("store.py", "protocol.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not offenders, offenders
