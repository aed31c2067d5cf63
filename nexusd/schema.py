"""The graph's tables (docs/conventions.md point 6), as Cypher DDL. No Kuzu import: the store executes these.

Three layers, with different lifetimes:
- code (Repository's files and symbols): derived from the files, dropped and rebuilt on a version change;
- history (commits, shell commands, docs, transcripts): derived from the machine, rebuilt likewise;
- memory (users, sessions, facts, ...): user data. Never dropped without replaying the journal into it.
`Repository` and `Meta` are kept across rebuilds: they are the registry, not derived state.

Links from memory into code (Fact ABOUT Symbol, Procedure APPLIES_TO File) are rebuilt from properties on
the memory nodes (symbolId, symbolKey, files), so a code rebuild never loses an attachment.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable

# Positions set at every write (the memory journal's last applied record): integers, set in place. As a Meta
# string, each SET made the next checkpoint write the column's chunk again with every value it had held. Made at the
# first memory record (an optional table: a database that never held memory has no position to keep).
POSITION_TABLE = "CREATE NODE TABLE IF NOT EXISTS Position(key STRING PRIMARY KEY, seq INT64, byteOffset INT64)"

# Bump when a code/history table changes shape: the code layer is rebuilt from the files.
CODE_SCHEMA_VERSION = 5  # 5: File.hash and Symbol.contentHash are UUIDs (fixed width, set in place), unresolved sites' lines relative to their symbol's start (raw@+offset); 4: Change.symbolNames/symbolRenames (the symbols a change touched and renamed, named at its commit); 3: signatures and docs redacted; unresolved calls stored as raw@line (ext: marked); new symbol kinds
# Bump when a memory table changes shape: memory tables are recreated and refilled from the journal.
MEMORY_SCHEMA_VERSION = 2

REGISTRY_TABLES = [
    "CREATE NODE TABLE IF NOT EXISTS Meta(key STRING PRIMARY KEY, value STRING)",
    """CREATE NODE TABLE IF NOT EXISTS Repository(
        id STRING PRIMARY KEY, root STRING, name STRING, origin STRING, userId STRING,
        graphVersion INT64, indexedAt DOUBLE, indexedRevision STRING, schemaVersion INT64,
        registeredAt DOUBLE, lastBuild STRING, historyCursor STRING)""",
]

# Symbol.searchText is no longer written (graphwrite.SYMBOL_COLS): it stays so that a graph written before needs
# no rebuild, empty in new rows.
CODE_NODE_TABLES = [
    """CREATE NODE TABLE IF NOT EXISTS File(
        id STRING PRIMARY KEY, repoId STRING, path STRING, hash UUID, language STRING, role STRING,
        lineCount INT64, size INT64, mtimeNs INT64, diagnostics STRING)""",
    """CREATE NODE TABLE IF NOT EXISTS Symbol(
        id STRING PRIMARY KEY, repoId STRING, path STRING, key STRING, name STRING, qualifiedName STRING,
        kind STRING, signature STRING, startLine INT64, endLine INT64, doc STRING, searchText STRING,
        contentHash UUID, exported BOOLEAN, unresolved STRING, unresolvedCount INT64)""",
]

CODE_REL_TABLES = [
    "CREATE REL TABLE IF NOT EXISTS HAS_FILE(FROM Repository TO File)",
    "CREATE REL TABLE IF NOT EXISTS CONTAINS(FROM File TO Symbol, FROM Symbol TO Symbol, ordinal INT64)",
    """CREATE REL TABLE IF NOT EXISTS IMPORTS(FROM File TO File,
        specifier STRING, line INT64, resolution STRING, confidence DOUBLE)""",
    """CREATE REL TABLE IF NOT EXISTS POSSIBLY_CALLS(FROM Symbol TO Symbol,
        line INT64, resolution STRING, confidence DOUBLE)""",
    "CREATE REL TABLE IF NOT EXISTS INHERITS(FROM Symbol TO Symbol, resolution STRING, confidence DOUBLE)",
]

HISTORY_NODE_TABLES = [
    """CREATE NODE TABLE IF NOT EXISTS Commit(
        id STRING PRIMARY KEY, repoId STRING, sha STRING, message STRING, author STRING, time DOUBLE,
        signal DOUBLE, isMerge BOOLEAN, searchText STRING, kind STRING, isRevert BOOLEAN, isBreaking BOOLEAN,
        parents STRING[], fileCount INT64)""",
    """CREATE NODE TABLE IF NOT EXISTS Change(
        id STRING PRIMARY KEY, repoId STRING, sha STRING, path STRING, oldPath STRING, status STRING,
        additions INT64, deletions INT64, patch STRING, time DOUBLE, symbolIds STRING[], hunks STRING,
        skipped STRING, truncated BOOLEAN, signal DOUBLE, searchText STRING, symbolNames STRING[],
        symbolRenames STRING[])""",
    """CREATE NODE TABLE IF NOT EXISTS ShellCommand(
        id STRING PRIMARY KEY, userId STRING, repoId STRING, text STRING, cwd STRING, exitCode INT64,
        startedAt DOUBLE, durationMs INT64, shell STRING, source STRING, searchText STRING)""",
    """CREATE NODE TABLE IF NOT EXISTS DocSection(
        id STRING PRIMARY KEY, repoId STRING, path STRING, headingPath STRING, level INT64,
        startLine INT64, text STRING, searchText STRING, part INT64, mtime DOUBLE)""",
    """CREATE NODE TABLE IF NOT EXISTS ConversationTurn(
        id STRING PRIMARY KEY, userId STRING, repoId STRING, sessionId STRING, ordinal INT64,
        role STRING, at DOUBLE, text STRING, searchText STRING, part INT64)""",
    # One search document per history node, over all kinds: the in-daemon history index (`nexusd.retrieve`) is
    # built from these at start and kept in step, so BM25 scores of commits, commands, docs and turns share one
    # set of statistics (so they compare), and the document carries what ranking and display need (signal,
    # time, parent, the bounded text shown, metadata as JSON), because fetching nodes back by a list of ids
    # scans their table in Kuzu 0.11.
    # `id` is the history node's id; userId is '' for repository-wide kinds.
    """CREATE NODE TABLE IF NOT EXISTS HistoryText(
        id STRING PRIMARY KEY, kind STRING, repoId STRING, userId STRING, searchText STRING, signal DOUBLE,
        at DOUBLE, parent STRING, shown STRING, meta STRING)""",
    # Optional embeddings of history nodes (only when NEXUS_EMBED_URL is configured): a list, not a fixed-size
    # array, because the dimension is the configured model's; searched by brute-force cosine per repository.
    """CREATE NODE TABLE IF NOT EXISTS HistoryVector(
        id STRING PRIMARY KEY, repoId STRING, userId STRING, label STRING, model STRING, vec DOUBLE[])""",
]

HISTORY_REL_TABLES = [
    "CREATE REL TABLE IF NOT EXISTS HAS_CHANGE(FROM Commit TO Change)",
    "CREATE REL TABLE IF NOT EXISTS CHANGED_FILE(FROM Change TO File)",
    "CREATE REL TABLE IF NOT EXISTS TOUCHED(FROM Change TO Symbol)",
]

MEMORY_NODE_TABLES = [
    "CREATE NODE TABLE IF NOT EXISTS User(id STRING PRIMARY KEY, name STRING, createdAt DOUBLE)",
    """CREATE NODE TABLE IF NOT EXISTS Session(
        id STRING PRIMARY KEY, userId STRING, repoId STRING, title STRING, client STRING,
        startedAt DOUBLE, endedAt DOUBLE, summary STRING, turnCount INT64)""",
    """CREATE NODE TABLE IF NOT EXISTS Turn(
        id STRING PRIMARY KEY, userId STRING, repoId STRING, sessionId STRING, ordinal INT64,
        role STRING, text STRING, at DOUBLE, searchText STRING)""",
    """CREATE NODE TABLE IF NOT EXISTS Fact(
        id STRING PRIMARY KEY, userId STRING, repoId STRING, sessionId STRING, text STRING,
        searchText STRING, createdAt DOUBLE, usedCount INT64, lastUsedAt DOUBLE, symbolId STRING,
        symbolKey STRING, symbolName STRING, symbolHash STRING, symbolPath STRING, status STRING,
        symbolKind STRING, symbolShape STRING, evidence STRING[])""",
    """CREATE NODE TABLE IF NOT EXISTS Procedure(
        id STRING PRIMARY KEY, userId STRING, repoId STRING, sessionId STRING, title STRING,
        steps STRING[], files STRING[], searchText STRING, createdAt DOUBLE, usedCount INT64,
        lastUsedAt DOUBLE)""",
    """CREATE NODE TABLE IF NOT EXISTS Handoff(
        id STRING PRIMARY KEY, userId STRING, repoId STRING, sessionId STRING, done STRING,
        openItems STRING, nextSteps STRING, searchText STRING, createdAt DOUBLE, acknowledgedAt DOUBLE,
        usedCount INT64, lastUsedAt DOUBLE, evidence STRING[])""",
]

MEMORY_REL_TABLES = [
    "CREATE REL TABLE IF NOT EXISTS OWNS(FROM User TO Session)",
    "CREATE REL TABLE IF NOT EXISTS HAS_TURN(FROM Session TO Turn)",
    "CREATE REL TABLE IF NOT EXISTS LEARNED(FROM Session TO Fact, FROM Session TO Procedure)",
    "CREATE REL TABLE IF NOT EXISTS USED(FROM Session TO Fact, FROM Session TO Procedure, at DOUBLE)",
    "CREATE REL TABLE IF NOT EXISTS FROM_SESSION(FROM Handoff TO Session)",
    "CREATE REL TABLE IF NOT EXISTS EVIDENCE(FROM Handoff TO Turn, FROM Fact TO Turn)",
    """CREATE REL TABLE IF NOT EXISTS SCOPES(FROM Repository TO Session, FROM Repository TO Fact,
        FROM Repository TO Procedure, FROM Repository TO Handoff)""",
    # Derived links into the code layer: dropped with it, relinked from the symbolId/files properties.
    "CREATE REL TABLE IF NOT EXISTS ABOUT(FROM Fact TO Symbol)",
    "CREATE REL TABLE IF NOT EXISTS APPLIES_TO(FROM Procedure TO File)",
]


def table_name(ddl: str) -> str:
    words = ddl.split("(")[0].split()
    return words[-1]


# Drop order matters: relationship tables before the node tables they connect.
CODE_DROP_ORDER = (
    ["ABOUT", "APPLIES_TO"]
    + [table_name(t) for t in HISTORY_REL_TABLES + CODE_REL_TABLES]
    + [table_name(t) for t in HISTORY_NODE_TABLES + CODE_NODE_TABLES]
)
MEMORY_DROP_ORDER = [table_name(t) for t in MEMORY_REL_TABLES] + [table_name(t) for t in MEMORY_NODE_TABLES]

# No full-text index (Kuzu FTS): history is searched by the in-daemon index (`nexusd.retrieve`), memory by the
# one recall uses (`nexusd.memory.index`), identifiers by the snapshot (`nexusd.query.locate`). The four indexes
# earlier schemas had cost ~49 MB of resident memory at every open (their internal tables' key indexes,
# ARCHITECTURE.md "Memory at rest") and work on every insert; `Store.drop_fts_indexes` drops them from an older
# database at its first open.


# Node tables made only when a row is first written to them (`Conn.ensure_table`), and dropped again at open while
# empty (`Store.ensure_schema`): each node table costs ~5.3 MB of resident memory in Kuzu 0.11.3, empty or not, from
# the moment the database opens (ARCHITECTURE.md, "Memory at rest"), and these hold rows only for what a user opts
# into: the shell hook or a scraped shell history, assistant transcripts, an embeddings endpoint, and the memory
# journal's position for a database that was ever given memory. No relationship table refers to them. A read of
# one checks `Conn.has_table` first: a missing table holds no rows.
OPTIONAL_TABLES = frozenset({"ShellCommand", "ConversationTurn", "HistoryVector", "Position"})

# The memory layer's tables are made together, before the first memory record is applied (`model.apply` calls
# `Conn.ensure_table`), and dropped together at open while none of its node tables holds a row: its six node
# tables are ~32 MB of an open database (15 node tables -> 8 with `Position`), paid by every daemon that never
# remembered anything. Reads of memory check `Conn.has_table` first, as the optional tables' do. Memory that
# exists is never dropped: a database holding one fact has the whole group.
MEMORY_TABLES = frozenset(table_name(t) for t in MEMORY_NODE_TABLES + MEMORY_REL_TABLES)
# What a database may lack, in groups made together (`Conn.ensure_table`) and dropped together at open once none of
# a group's node tables holds a row (`Store.ensure_schema`).
LAZY_GROUPS: tuple[frozenset[str], ...] = (*(frozenset({name}) for name in sorted(OPTIONAL_TABLES)), MEMORY_TABLES)
LAZY_TABLES = OPTIONAL_TABLES | MEMORY_TABLES


def group_of(name: str) -> frozenset[str]:
    """The lazily made tables that come and go with `name` (just itself for a table made at open)."""
    return next((group for group in LAZY_GROUPS if name in group), frozenset({name}))


def all_table_ddl(optional: Iterable[str] = LAZY_TABLES) -> list[str]:
    """Every table's CREATE statement, in an order that creates each table after the tables it refers to (node
    tables first); of the lazily made tables only the groups `optional` names any of."""
    keep = {table for name in optional for table in group_of(name)}
    return [ddl for ddl in (
        REGISTRY_TABLES + [POSITION_TABLE] + CODE_NODE_TABLES + HISTORY_NODE_TABLES + MEMORY_NODE_TABLES
        + CODE_REL_TABLES + HISTORY_REL_TABLES + MEMORY_REL_TABLES
    ) if table_name(ddl) not in LAZY_TABLES or table_name(ddl) in keep]  # fmt: skip


def group_ddl(name: str) -> list[str]:
    """The CREATE statements of `name`'s group, node tables first."""
    group = group_of(name)
    return [ddl for ddl in all_table_ddl() if table_name(ddl) in group]


NODE_TABLES = frozenset(table_name(ddl) for ddl in all_table_ddl() if " NODE TABLE " in ddl)


# -- content hashes ---------------------------------------------------------------------------------------
# File.hash and Symbol.contentHash hold a 128-bit content hash (`parse.facts.content_hash`, 32 hex digits) as
# Kuzu's fixed-width UUID type, not a STRING: Kuzu 0.11.3 rewrites a string column's whole node-group chunk at
# the checkpoint after any SET of one of its values, appending every value again, so an edit's new file hash
# made each checkpoint slower and the file larger than the one before (ARCHITECTURE.md, "Database growth and
# compaction"). A UUID is set in place like an integer. The rest of the daemon speaks hex: convert at the edge.


# A file skipped for a reason its bytes always repeat keeps a marker instead of a digest, `skipped:<reason>`
# (`sync.parsepool.skipped_facts`), so a stat that still matches clears it at the next sync rather than reading
# it again. A marker is stored as the UUID of its own digest and read back as its text.
PERMANENT_SKIPS = ("binary", "too-large")
SKIP_MARKERS = tuple(f"skipped:{reason}" for reason in PERMANENT_SKIPS)


def _marker_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=hashlib.blake2b(text.encode(), digest_size=16).digest())


_MARKER_TEXT = {_marker_uuid(text): text for text in SKIP_MARKERS}


def stored_hash(text: str | None) -> uuid.UUID | None:
    """A content hash as the graph stores it: a skip marker as its UUID (`SKIP_MARKERS`); None for no hash, or
    one that is not 32 hex digits, or the all-zero value (Kuzu 0.11.3 stores it as INT128_MIN and then fails
    every later COPY into the table; a blake2b digest is never it in practice, and a missing hash only means
    "read the file again")."""
    if not text:
        return None
    if text.startswith("skipped:"):
        return _marker_uuid(text)
    if len(text) != 32:
        return None
    try:
        value = uuid.UUID(hex=text)
    except ValueError:
        return None
    return value if value.int else None


_HEX32 = re.compile(r"[0-9a-f]{32}")
_ZERO = "0" * 32


def stored_hash_csv(text: str | None) -> str:
    """`stored_hash` as the text a CSV COPY reads (the UUID's canonical form, "" for none), made from the hex
    digits directly: a cold write converts a hash per symbol, and a UUID object made and printed for each cost
    the kernel's `drivers/` ~3 s of its 1.12M symbols. Lower-case hex only (what `content_hash` makes); anything
    else takes `stored_hash`'s way."""
    if text and _HEX32.fullmatch(text) is not None:
        return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}" if text != _ZERO else ""
    value = stored_hash(text)
    return "" if value is None else str(value)


def hash_text(value: object) -> str:
    """A content hash read from the graph, as the 32 hex digits the rest of the daemon compares ("" for none,
    a skip marker's text for its UUID)."""
    if not isinstance(value, uuid.UUID):
        return ""
    return _MARKER_TEXT.get(value) or value.hex
