"""Shared by the reliability tests and the bench scripts (bench/crash_trials.py, fuzz_protocol.py, load.py):
generated repositories, a raw DEALER socket, the daemon's RSS, and the graph-consistency check.

The consistency check is the oracle of the crash trials: after a restart and a completed sync, every File node
of a repository holds exactly the symbols a fresh extraction of the file on disk gives (compared as sets of
semantic keys), no symbol lacks its File or its CONTAINS parent, no edge leaves the repository's files, and no
path has two File nodes. `snapshot_problems` is the weaker check that holds at any moment, even while a sync
runs: every File node's symbols are the extraction of *some* content we wrote under that path (its last good
extraction), read in one statement so one snapshot answers it.
"""

from __future__ import annotations

import os
import random
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgpack
import zmq

from nexusd import schema
from nexusd.errors import Internal
from nexusd.parse.extract import extract
from nexusd.parse.facts import content_hash, semantic_key
from nexusd.sync.walk import WalkRules

# -- generated repositories --------------------------------------------------------------------------------


def module_source(n: int, version: int, fanout: int = 6) -> str:
    """A Python module with functions, a class with methods and calls into its neighbours' modules.
    `version` changes which functions exist, so an edit adds, removes and renames symbols."""
    lines = [f'"""Module {n}, version {version}."""', ""]
    for k in range(max(1, fanout)):
        dep = (n + k + 1) % 997
        lines.append(f"from pkg.m{dep:04d} import func_{dep}_0")
    lines.append("")
    for f in range(4 + version % 3):
        name = f"func_{n}_{f}" if f else f"func_{n}_0"
        lines += [f"def {name}(x{'' if version % 2 else ', y=None'}):", f'    """v{version}"""']
        lines += [f"    return func_{(n + f + 1) % 997}_0(x) if x else {version}", ""]
    lines += [f"class Thing{n}V{version % 2}:", "    def run(self):", f"        return func_{n}_0(self)", ""]
    lines += ["    def stop(self):", "        return None", ""]
    return "\n".join(lines) + "\n"


def make_py_repo(root: Path, files: int, version: int = 0) -> Path:
    pkg = root / "pkg"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    for n in range(files):
        (pkg / f"m{n:04d}.py").write_text(module_source(n, version))
    return root


def mutate_repo(root: Path, rng: random.Random, round_no: int, files: int) -> dict[str, int]:
    """One burst of edits: rewrite some modules, delete a few, add a few. Returns what it did."""
    pkg = root / "pkg"
    existing = sorted(p for p in pkg.glob("m*.py"))
    edited = rng.sample(existing, k=min(len(existing), rng.randint(5, 40)))
    for p in edited:
        n = int(p.stem[1:])
        p.write_text(module_source(n, round_no * 7 + rng.randint(0, 5)))
    doomed = rng.sample(sorted(set(existing) - set(edited)), k=min(3, max(0, len(existing) - len(edited) - 1)))
    for p in doomed:
        p.unlink()
    added = 0
    for _ in range(rng.randint(1, 4)):
        n = rng.randint(files, files + 400)
        target = pkg / f"m{n:04d}.py"
        if not target.exists():
            target.write_text(module_source(n, round_no))
            added += 1
    return {"edited": len(edited), "deleted": len(doomed), "added": added}


# -- a raw socket -------------------------------------------------------------------------------------------


class Raw:
    """A bare DEALER: nothing in the client library hides what the daemon does with a frame."""

    def __init__(self, endpoint: str):
        self.ctx = zmq.Context()
        self.ctx.setsockopt(zmq.LINGER, 0)
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.MAXMSGSIZE, -1)
        self.sock.setsockopt(zmq.SNDHWM, 100_000)
        self.sock.setsockopt(zmq.RCVHWM, 100_000)
        self.sock.connect(endpoint)

    def send(self, *frames: bytes) -> None:
        self.sock.send_multipart(list(frames))

    def recv(self, timeout_ms: int = 5000) -> Any:
        if not self.sock.poll(timeout_ms):
            return None
        return msgpack.unpackb(self.sock.recv(), raw=False, strict_map_key=False)

    def close(self) -> None:
        self.sock.close(0)
        self.ctx.term()


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def tree_rss_kb(pid: int) -> int:
    """RSS of the daemon plus its children (the parse workers)."""
    total = rss_kb(pid)
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    for child in children:
        try:
            total += rss_kb(int(child))
        except (OSError, ValueError):
            pass
    return total


# -- graph consistency ---------------------------------------------------------------------------------------


def q(client: Any, query: str, **params: Any) -> list[list[Any]]:
    """The rows of a Cypher query; none when it reads a table the database makes at its first row and lacks
    (memory's tables before the first memory, `schema.LAZY_TABLES`), as the daemon's own reads answer."""
    try:
        return client.request("debug.cypher", {"query": query, "params": params}, timeout=120)["rows"]  # type: ignore[no-any-return]
    except Internal as exc:
        missing = re.search(r"Table (\w+) does not exist", exc.message)
        if missing is None or missing.group(1) not in schema.LAZY_TABLES:
            raise
        return []


def extraction_keys(rel: str, data: bytes) -> set[str]:
    facts = extract(rel, data)
    return {semantic_key(facts.language, s.kind, facts.path, s.qualified_name, s.occurrence) for s in facts.symbols}


def expected_files(root: Path) -> dict[str, bytes]:
    """What the walk keeps, with the bytes on disk now."""
    rules = WalkRules(root)
    return {e.path: (root / e.path).read_bytes() for e in rules.walk()}


def consistency_problems(client: Any, repo_id: str, root: Path) -> list[str]:
    """Everything wrong with one repository's code graph, compared with the files on disk (quiescent graph)."""
    problems: list[str] = []
    files = q(client, "MATCH (f:File) WHERE f.repoId = $r RETURN f.path, f.hash, f.id", r=repo_id)
    counts = Counter(path for path, _h, _i in files)
    problems += [f"duplicate File nodes for {p} ({n})" for p, n in counts.items() if n > 1]
    disk = expected_files(root)
    graph_paths = set(counts)
    problems += [f"missing File {p}" for p in sorted(set(disk) - graph_paths)][:20]
    problems += [f"File for a path not on disk: {p}" for p in sorted(graph_paths - set(disk))][:20]
    symbols = q(client, "MATCH (s:Symbol) WHERE s.repoId = $r RETURN s.path, s.key", r=repo_id)
    by_path: dict[str, set[str]] = {}
    sym_counts = Counter((p, k) for p, k in symbols)
    problems += [f"duplicate symbol {k}" for (_p, k), n in sym_counts.items() if n > 1][:20]
    for path, key in symbols:
        by_path.setdefault(path, set()).add(key)
    problems += [f"symbols without a File: {p}" for p in sorted(set(by_path) - graph_paths)][:20]
    for path, digest, _fid in files:
        data = disk.get(path)
        if data is None:
            continue
        if digest and digest != content_hash(data):
            problems.append(f"{path}: indexed hash differs from the file on disk")
        want = extraction_keys(path, data)
        have = by_path.get(path, set())
        if want != have:
            problems.append(f"{path}: symbols differ from a fresh extraction (+{len(have - want)} -{len(want - have)})")
    orphans = q(
        client,
        "MATCH (s:Symbol) WHERE s.repoId = $r AND NOT EXISTS { MATCH ()-[:CONTAINS]->(s) } RETURN s.key",
        r=repo_id,
    )
    if orphans:
        problems.append(f"{len(orphans)} symbols without a CONTAINS parent: {[o[0] for o in orphans[:3]]}")
    stray = q(
        client,
        "MATCH (a:Symbol)-[:POSSIBLY_CALLS]->(b:Symbol) WHERE a.repoId = $r AND b.repoId <> $r RETURN count(*)",
        r=repo_id,
    )[0][0]
    if stray:
        problems.append(f"{stray} call edges leave the repository")
    edge_paths = q(
        client,
        "MATCH (a:Symbol)-[:POSSIBLY_CALLS]->(b:Symbol) WHERE a.repoId = $r RETURN DISTINCT a.path, b.path",
        r=repo_id,
    )
    loose = {p for pair in edge_paths for p in pair if p not in graph_paths}
    problems += [f"call edge touches a path with no File: {p}" for p in sorted(loose)][:20]
    imports = q(
        client, "MATCH (a:File)-[:IMPORTS]->(b:File) WHERE a.repoId = $r RETURN a.path, b.path, b.repoId", r=repo_id
    )
    problems += [f"import edge {a} -> {b} leaves the repository" for a, b, rid in imports if rid != repo_id][:20]
    has_file = q(client, "MATCH (r:Repository {id: $r})-[:HAS_FILE]->(f:File) RETURN count(f)", r=repo_id)[0][0]
    if has_file != len(files):
        problems.append(f"HAS_FILE edges {has_file} != File nodes {len(files)}")
    return problems


def snapshot_problems(client: Any, repo_id: str, versions: dict[tuple[str, str], set[str]]) -> list[str]:
    """At any moment (one statement = one snapshot): each File's symbols are the extraction of the content whose
    hash the File node records, and that content is one we wrote. `versions` maps (path, hash) -> symbol keys."""
    rows = q(
        client,
        "MATCH (f:File) WHERE f.repoId = $r OPTIONAL MATCH (f)-[:CONTAINS*1..4]->(s:Symbol) "
        "RETURN f.path, f.hash, collect(s.key)",
        r=repo_id,
    )
    problems = []
    for path, digest, keys in rows:
        want = versions.get((path, digest))
        if want is None:
            if digest:  # an empty hash is a file recorded as failed/skipped: it has no symbols
                problems.append(f"{path}: indexed hash matches no content ever written")
            continue
        got = {k for k in keys if k is not None}
        if got != want:
            problems.append(f"{path}: symbols are not the extraction of its indexed content")
    return problems


def record_versions(root: Path, versions: dict[tuple[str, str], set[str]], paths: Iterable[Path] | None = None) -> None:
    """Remember the extraction of every module's current content, by (path, content hash)."""
    for p in paths if paths is not None else (root / "pkg").glob("*.py"):
        data = p.read_bytes()
        rel = os.path.relpath(p, root)
        versions.setdefault((rel, content_hash(data)), extraction_keys(rel, data))
