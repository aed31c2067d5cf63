"""How a sync batch becomes graph writes. Cypher lives here; Kuzu does not (the store executes it).

Two paths, because Kuzu's costs differ by three orders of magnitude (FIELD-NOTES.md):
- cold: CSV files and `COPY` for every table (100k symbols and 300k edges in well under a second);
- incremental: per batch, delete what the changed files owned and re-insert with `COPY ... FROM (UNWIND ...)`,
  restoring the edges other files had into symbols that survived (ids are stable across edits).
Everything a batch writes happens in one transaction: a file is in the graph whole or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..parse.facts import FileFacts, SymbolFact, file_id, semantic_key, symbol_id
from ..resolve.base import FileResolution
from ..store import Conn
from ..textsplit import search_text

FILE_COLS = ("id", "repoId", "path", "hash", "language", "role", "lineCount", "size", "mtimeNs", "diagnostics")
SYMBOL_COLS = (
    "id", "repoId", "path", "key", "name", "qualifiedName", "kind", "signature", "startLine", "endLine",
    "doc", "searchText", "contentHash", "exported", "unresolved", "unresolvedCount",
)  # fmt: skip
# Relationship tables whose edges may point into a file's symbols from elsewhere; kept across a re-extract.
INCOMING_RELS = (
    ("POSSIBLY_CALLS", "Symbol", ", r.line, r.resolution, r.confidence"),
    ("INHERITS", "Symbol", ", r.resolution, r.confidence"),
    ("ABOUT", "Fact", ""),
    ("TOUCHED", "Change", ""),
)


@dataclass
class FileStat:
    size: int = 0
    mtime_ns: int = 0


@dataclass
class Batch:
    """Everything one sync writes."""

    repo_id: str
    changed: dict[str, FileFacts] = field(default_factory=dict)  # re-extracted (new or modified)
    new_paths: set[str] = field(default_factory=set)  # subset of changed with no File node yet
    stats: dict[str, FileStat] = field(default_factory=dict)
    touched: dict[str, FileStat] = field(default_factory=dict)  # same content, new stat: update only
    deleted: set[str] = field(default_factory=set)
    resolutions: dict[str, FileResolution] = field(default_factory=dict)  # changed + affected files
    facts: dict[str, FileFacts] = field(default_factory=dict)  # facts of every file in `resolutions`

    def empty(self) -> bool:
        return not (self.changed or self.touched or self.deleted or self.resolutions)


def _doc(sym: SymbolFact) -> str:
    return sym.doc[:500]


def symbol_rows(repo_id: str, facts: FileFacts, unresolved: dict[str, list[str]]) -> list[tuple[Any, ...]]:
    rows = []
    for sym in facts.symbols:
        sid = symbol_id(repo_id, facts.path, sym.kind, sym.qualified_name, sym.occurrence)
        raw = unresolved.get(sid, [])
        rows.append(
            (
                sid, repo_id, facts.path,
                semantic_key(facts.language, sym.kind, facts.path, sym.qualified_name, sym.occurrence),
                sym.name, sym.qualified_name, sym.kind, sym.signature[:300], sym.start_line, sym.end_line,
                _doc(sym), search_text(sym.name, sym.qualified_name), sym.content_hash, sym.exported,
                "\n".join(raw[:200]), len(raw),
            )
        )  # fmt: skip
    return rows


def file_row(repo_id: str, facts: FileFacts, st: FileStat) -> tuple[Any, ...]:
    diags = [
        {"severity": d.severity, "code": d.code, "message": d.message[:300], "line": d.line}
        for d in facts.diagnostics[:20]
    ]
    return (
        file_id(repo_id, facts.path), repo_id, facts.path, facts.hash, facts.language, facts.role,
        facts.line_count, st.size, st.mtime_ns, json.dumps(diags) if diags else "",
    )  # fmt: skip


def contains_rows(repo_id: str, facts: FileFacts) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(File->Symbol rows, Symbol->Symbol rows), each (from, to, ordinal)."""
    fid = file_id(repo_id, facts.path)
    by_qname: dict[str, str] = {}
    for sym in facts.symbols:
        by_qname.setdefault(sym.qualified_name, symbol_id(repo_id, facts.path, sym.kind, sym.qualified_name, sym.occurrence))
    top: list[tuple[Any, ...]] = []
    nested: list[tuple[Any, ...]] = []
    for ordinal, sym in enumerate(facts.symbols):
        sid = symbol_id(repo_id, facts.path, sym.kind, sym.qualified_name, sym.occurrence)
        parent = by_qname.get(sym.parent) if sym.parent else None
        if parent is not None and parent != sid:
            nested.append((parent, sid, ordinal))
        else:
            top.append((fid, sid, ordinal))
    return top, nested


def edge_rows(repo_id: str, res: FileResolution) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(IMPORTS rows, POSSIBLY_CALLS rows); repeated calls between one pair keep the first line."""
    imports: dict[tuple[str, str], tuple[Any, ...]] = {}
    for e in res.imports:
        key = (e.src_path, e.dst_path)
        if key not in imports and e.src_path != e.dst_path:
            imports[key] = (file_id(repo_id, e.src_path), file_id(repo_id, e.dst_path), e.specifier[:300],
                            e.line, e.resolution, float(e.confidence))
    calls: dict[tuple[str, str], tuple[Any, ...]] = {}
    for c in sorted(res.calls, key=lambda c: c.line):
        key = (c.src_id, c.dst_id)
        if key not in calls:
            calls[key] = (c.src_id, c.dst_id, c.line, c.resolution, float(c.confidence))
    return list(imports.values()), list(calls.values())


def _copy(conn: Conn, table: str, cols: Sequence[str], rows: list[tuple[Any, ...]], rel: tuple[str, str] | None = None) -> None:
    if rel:
        conn.copy_rels(table, rel[0], rel[1], rows)
    else:
        conn.copy_nodes(table, cols, rows)


def write_cold(conn: Conn, batch: Batch) -> dict[str, int]:
    """A repository's first graph (or a full rebuild): everything through CSV COPY in one transaction."""
    counts = {"files": 0, "symbols": 0, "imports": 0, "calls": 0}
    files, symbols, top, nested, imports, calls = [], [], [], [], [], []
    for path, facts in batch.changed.items():
        res = batch.resolutions.get(path) or FileResolution(path)
        files.append(file_row(batch.repo_id, facts, batch.stats.get(path, FileStat())))
        symbols.extend(symbol_rows(batch.repo_id, facts, res.unresolved))
        t, n = contains_rows(batch.repo_id, facts)
        top.extend(t)
        nested.extend(n)
        i, c = edge_rows(batch.repo_id, res)
        imports.extend(i)
        calls.extend(c)
    with conn.transaction():
        delete_repo_code(conn, batch.repo_id)
        conn.copy_nodes("File", FILE_COLS, files)
        conn.copy_nodes("Symbol", SYMBOL_COLS, symbols)
        conn.copy_rels("HAS_FILE", "Repository", "File", [(batch.repo_id, f[0]) for f in files])
        conn.copy_rels("CONTAINS", "File", "Symbol", top)
        conn.copy_rels("CONTAINS", "Symbol", "Symbol", nested)
        conn.copy_rels("IMPORTS", "File", "File", imports)
        conn.copy_rels("POSSIBLY_CALLS", "Symbol", "Symbol", calls)
    counts.update(files=len(files), symbols=len(symbols), imports=len(imports), calls=len(calls))
    return counts


def delete_repo_code(conn: Conn, repo_id: str) -> None:
    conn.execute("MATCH (s:Symbol) WHERE s.repoId = $r DETACH DELETE s", {"r": repo_id})
    conn.execute("MATCH (f:File) WHERE f.repoId = $r DETACH DELETE f", {"r": repo_id})


def write_incremental(conn: Conn, batch: Batch) -> dict[str, int]:
    """Apply one batch: changed files re-inserted, affected files' outgoing edges redone, deleted removed."""
    repo = batch.repo_id
    changed = sorted(batch.changed)
    gone = sorted(batch.deleted)
    replaced = changed + gone
    affected = sorted(p for p in batch.resolutions if p not in batch.changed)
    counts = {"files": len(changed), "deleted": len(gone), "affected": len(affected), "symbols": 0, "calls": 0,
              "imports": 0, "restored": 0}
    with conn.transaction():
        saved: dict[str, list[list[Any]]] = {}
        if changed:
            for rel, src, props in INCOMING_RELS:
                own = " AND NOT (a.repoId = $repo AND a.path IN $paths)" if src == "Symbol" else ""
                saved[rel] = conn.rows(
                    f"MATCH (a:{src})-[r:{rel}]->(b:Symbol) WHERE b.repoId = $repo AND b.path IN $paths{own} "
                    f"RETURN '{src}', {'a.path' if src == 'Symbol' else 'NULL'}, a.id, b.id{props}",
                    {"repo": repo, "paths": changed},
                )
        if replaced:
            conn.execute(
                "MATCH (s:Symbol) WHERE s.repoId = $repo AND s.path IN $paths DETACH DELETE s",
                {"repo": repo, "paths": replaced},
            )
            conn.execute(
                "MATCH (f:File)-[r:IMPORTS]->(:File) WHERE f.repoId = $repo AND f.path IN $paths DELETE r",
                {"repo": repo, "paths": changed},
            )
        if gone:
            conn.execute(
                "MATCH (f:File) WHERE f.repoId = $repo AND f.path IN $paths DETACH DELETE f",
                {"repo": repo, "paths": gone},
            )
        if affected:
            conn.execute(
                "MATCH (a:Symbol)-[r:POSSIBLY_CALLS]->(:Symbol) WHERE a.repoId = $repo AND a.path IN $paths DELETE r",
                {"repo": repo, "paths": affected},
            )
            conn.execute(
                "MATCH (f:File)-[r:IMPORTS]->(:File) WHERE f.repoId = $repo AND f.path IN $paths DELETE r",
                {"repo": repo, "paths": affected},
            )
        # Files: update existing File nodes in place (incoming IMPORTS survive), create new ones.
        new_files, symbols, top, nested = [], [], [], []
        for path in changed:
            facts = batch.changed[path]
            row = file_row(repo, facts, batch.stats.get(path, FileStat()))
            if path in batch.new_paths:
                new_files.append(row)
            else:
                conn.execute(
                    "MATCH (f:File {id: $id}) SET f.hash = $hash, f.language = $lang, f.role = $role, "
                    "f.lineCount = $lines, f.size = $size, f.mtimeNs = $mtime, f.diagnostics = $diags",
                    {"id": row[0], "hash": row[3], "lang": row[4], "role": row[5], "lines": row[6],
                     "size": row[7], "mtime": row[8], "diags": row[9]},
                )
            res = batch.resolutions.get(path) or FileResolution(path)
            symbols.extend(symbol_rows(repo, facts, res.unresolved))
            t, n = contains_rows(repo, facts)
            top.extend(t)
            nested.extend(n)
        for path, st in batch.touched.items():
            conn.execute(
                "MATCH (f:File {id: $id}) SET f.size = $size, f.mtimeNs = $mtime",
                {"id": file_id(repo, path), "size": st.size, "mtime": st.mtime_ns},
            )
        _copy(conn, "File", FILE_COLS, new_files)
        _copy(conn, "HAS_FILE", (), [(repo, f[0]) for f in new_files], ("Repository", "File"))
        _copy(conn, "Symbol", SYMBOL_COLS, symbols)
        _copy(conn, "CONTAINS", (), top, ("File", "Symbol"))
        _copy(conn, "CONTAINS", (), nested, ("Symbol", "Symbol"))
        live = {row[0] for row in symbols}
        # Edges of every re-resolved file (changed and affected).
        imports, calls = [], []
        for res in batch.resolutions.values():
            i, c = edge_rows(repo, res)
            imports.extend(i)
            calls.extend(c)
        _copy(conn, "IMPORTS", (), imports, ("File", "File"))
        _copy(conn, "POSSIBLY_CALLS", (), calls, ("Symbol", "Symbol"))
        # Unresolved references of affected files' symbols may have changed.
        for path in affected:
            res = batch.resolutions[path]
            known = batch.facts.get(path)
            if known is None:
                continue
            for sym in known.symbols:
                sid = symbol_id(repo, path, sym.kind, sym.qualified_name, sym.occurrence)
                raw = res.unresolved.get(sid, [])
                conn.execute(
                    "MATCH (s:Symbol {id: $id}) WHERE coalesce(s.unresolvedCount, 0) <> $n OR coalesce(s.unresolved, '') <> $u "
                    "SET s.unresolved = $u, s.unresolvedCount = $n",
                    {"id": sid, "u": "\n".join(raw[:200]), "n": len(raw)},
                )
        # Restore edges other files (and memory, history) had into symbols that still exist.
        restored = 0
        for rel, rows in saved.items():
            # Edges from re-resolved files were just recreated; the rest come back if their target lives.
            keep = [r for r in rows if r[3] in live and r[1] not in batch.resolutions]
            by_label: dict[str, list[tuple[Any, ...]]] = {}
            for r in keep:
                by_label.setdefault(r[0], []).append(tuple(r[2:]))
            for label, rrows in by_label.items():
                _copy(conn, rel, (), rrows, (label, "Symbol"))
                restored += len(rrows)
    counts.update(symbols=len(symbols), calls=len(calls), imports=len(imports), restored=restored)
    return counts


def known_files(conn: Conn, repo_id: str) -> dict[str, tuple[str, int, int]]:
    """path -> (hash, size, mtimeNs) of every File node of the repository."""
    rows = conn.rows(
        "MATCH (f:File) WHERE f.repoId = $r RETURN f.path, f.hash, f.size, f.mtimeNs", {"r": repo_id}
    )
    return {r[0]: (r[1] or "", r[2] or 0, r[3] or 0) for r in rows}


def repo_counts(conn: Conn, repo_id: str) -> dict[str, Any]:
    files = conn.scalar("MATCH (f:File) WHERE f.repoId = $r RETURN count(f)", {"r": repo_id}) or 0
    symbols = conn.scalar("MATCH (s:Symbol) WHERE s.repoId = $r RETURN count(s)", {"r": repo_id}) or 0
    calls = conn.rows(
        "MATCH (a:Symbol)-[e:POSSIBLY_CALLS]->(:Symbol) WHERE a.repoId = $r RETURN e.resolution, count(*)",
        {"r": repo_id},
    )
    imports = conn.scalar(
        "MATCH (a:File)-[e:IMPORTS]->(:File) WHERE a.repoId = $r RETURN count(e)", {"r": repo_id}
    ) or 0
    unresolved = conn.scalar(
        "MATCH (s:Symbol) WHERE s.repoId = $r RETURN CAST(sum(s.unresolvedCount) AS INT64)", {"r": repo_id}
    ) or 0
    diags = conn.scalar(
        "MATCH (f:File) WHERE f.repoId = $r AND coalesce(f.diagnostics, '') <> '' RETURN count(f)", {"r": repo_id}
    ) or 0
    return {
        "files": files,
        "symbols": symbols,
        "edges": {"calls": {k: v for k, v in sorted(calls)}, "imports": imports},
        "unresolvedReferences": unresolved,
        "filesWithDiagnostics": diags,
    }


def diagnostics(conn: Conn, repo_id: str, limit: int = 50) -> list[dict[str, Any]]:
    rows = conn.rows(
        "MATCH (f:File) WHERE f.repoId = $r AND coalesce(f.diagnostics, '') <> '' RETURN f.path, f.diagnostics "
        "ORDER BY f.path LIMIT $n",
        {"r": repo_id, "n": limit},
    )
    out = []
    for path, text in rows:
        for d in json.loads(text):
            out.append({"path": path, **d})
    return out


def chunks(items: Iterable[Any], n: int) -> Iterable[list[Any]]:
    buf: list[Any] = []
    for item in items:
        buf.append(item)
        if len(buf) >= n:
            yield buf
            buf = []
    if buf:
        yield buf
