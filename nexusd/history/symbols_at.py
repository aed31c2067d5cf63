"""Which symbols a commit's change touched, judged on the file *as it was at that commit*.

A hunk of commit C in path P has two sides: the new lines (coordinates of P at C) and the old lines
(coordinates of P at C's first parent, under the old path for a rename). A symbol of P at C is touched when a
hunk's new lines overlap its range; a symbol of P at the parent is touched when a hunk's old lines overlap its
range (that is how a pure deletion inside a function counts). Symbols are named by their qualified name within
the file (`Class.method`), the same names the code graph gives them, so a function that moved inside its file,
or whose file was renamed, keeps its history: `history` follows the name, and the file's renames, back through
the stored changes.

Both blobs come from one `git cat-file --batch` process per sync, and each blob is parsed once (by object id)
with the language's definition patterns only (`definitions`): the same patterns and the same container sweep as
the code graph (`nexusd.parse.extract`), without calls, imports or type facts, which is about 3.5x cheaper than a
full extraction.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from nexusd.history import git as git_source
from nexusd.history.facts import CommitFacts
from nexusd.parse import extract as extract_mod
from nexusd.parse.languages import parsed_language

Range = tuple[int, int, str]  # (first line, last line, qualified name), 1-based inclusive

MAX_BLOB_BYTES = 1 << 20  # bigger files are generated or vendored: their changes keep no symbol names
CACHE_BLOBS = 4096


def definitions(path: str, data: bytes) -> list[Range]:
    """The symbols of one version of a file, as the code graph would name them; [] when it is not parsed."""
    language = parsed_language(path)
    if language is None or language not in extract_mod.HOOKS or len(data) > MAX_BLOB_BYTES:
        return []
    if b"\0" in data[: extract_mod.BINARY_PROBE]:
        return []
    try:
        symbols = extract_mod.definition_symbols(path, language, data)
    except Exception:  # noqa: BLE001 - a version that cannot be parsed names no symbols; the sync goes on
        return []
    return [(s.start_line, s.end_line, s.qualified_name) for s in symbols]


def touched(hunks: Iterable[Sequence[int]], new: Sequence[Range], old: Sequence[Range]) -> set[str]:
    """Qualified names a change touched: hunks are (new_start, new_len, old_start, old_len) as git prints them."""
    new_spans: list[tuple[int, int]] = []
    old_spans: list[tuple[int, int]] = []
    for hunk in hunks:
        ns, nl, os_, ol = (int(x) for x in hunk[:4])
        if nl > 0:
            new_spans.append((ns, ns + nl - 1))
        if ol > 0:
            old_spans.append((os_, os_ + ol - 1))
    out: set[str] = set()
    for spans, ranges in ((new_spans, new), (old_spans, old)):
        if not spans:
            continue
        for start, end, name in ranges:
            if name in out:
                continue
            for lo, hi in spans:
                if lo <= end and start <= hi:
                    out.add(name)
                    break
    return out


def old_line(line: int, hunks: Sequence[Sequence[int]]) -> int | None:
    """Where a new-side line outside every hunk was on the old side (None: the line is one the change added)."""
    shift = 0
    for hunk in sorted(hunks, key=lambda h: int(h[0])):
        ns, nl, os_, ol = (int(x) for x in hunk[:4])
        first_new = ns if nl > 0 else ns + 1  # a pure deletion sits after line ns
        if line < first_new:
            break
        if nl > 0 and line <= ns + nl - 1:
            return None
        shift = (os_ + (ol if ol > 0 else 1)) - (ns + (nl if nl > 0 else 1))
    return line + shift


def old_range(start: int, end: int, hunks: Sequence[Sequence[int]]) -> set[int]:
    """The old-side lines a new-side range came from, as `git log -L` carries a range through a diff: unchanged
    lines map one to one, and a hunk the range overlaps brings all of its removed lines."""
    out: set[int] = set()
    for line in range(start, end + 1):
        mapped = old_line(line, hunks)
        if mapped is not None:
            out.add(mapped)
    for hunk in hunks:
        ns, nl, os_, ol = (int(x) for x in hunk[:4])
        lo, hi = (ns, ns + nl - 1) if nl > 0 else (ns, ns)
        if ol > 0 and lo <= end and start <= hi:
            out.update(range(os_, os_ + ol))
    return out


def renames(hunks: Sequence[Sequence[int]], new: Sequence[Range], old: Sequence[Range]) -> dict[str, str]:
    """New name -> old name, for symbols that appear by name in this change and whose lines came from a symbol
    that disappears by name in it (a function or class renamed or moved inside the file): the old symbol
    whose range best matches (Jaccard) the lines the new one's range came from, each old symbol given to one
    new symbol at most. A vanished symbol with the new one's own name in another container (`A.m` -> `B.m`,
    `TestCase.test_x` -> `test_x`) is preferred: a diff's alignment of lines between two versions of a file
    that was reindented or reordered can pair lines of different functions."""
    new_names = {name for _, _, name in new}
    gone = [(s, e, name) for s, e, name in old if name not in new_names]
    if not gone:
        return {}
    old_names = {name for _, _, name in old}
    short: dict[str, int] = {}
    for _, _, candidate in gone:
        short[candidate.rsplit(".", 1)[-1]] = short.get(candidate.rsplit(".", 1)[-1], 0) + 1
    pairs: list[tuple[float, str, str]] = []
    for start, end, name in new:
        if name in old_names or name == extract_mod.MODULE_QN:
            continue
        lines = old_range(start, end, hunks)
        tail = name.rsplit(".", 1)[-1]
        for s, e, candidate in gone:
            overlap = sum(1 for line in lines if s <= line <= e)
            score = overlap / (len(lines) + (e - s + 1) - overlap) if overlap else 0.0
            if candidate.rsplit(".", 1)[-1] == tail:
                # the same name in another container (a class renamed, a test class turned into functions):
                # that name's only vanished holder first, else the one its lines came from
                score += 2.0 if short[tail] == 1 else (1.0 if overlap else 0.0)
            if score > 0:
                pairs.append((score, name, candidate))
    # One old symbol becomes at most one new one (and the reverse): best matches first.
    out: dict[str, str] = {}
    taken: set[str] = set()
    for _, name, candidate in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
        if name not in out and candidate not in taken:
            out[name] = candidate
            taken.add(candidate)
    return out


class BlobReader:
    """`git cat-file --batch` kept open for a sync: `rev:path` -> (object id, bytes), or None when absent."""

    def __init__(self, root: Path | str) -> None:
        cmd = ["git", "--no-pager", *git_source.SAFE_CONFIG, "-C", str(root), "cat-file", "--batch"]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=git_source.git_env()
        )

    def get(self, spec: str) -> tuple[str, bytes] | None:
        proc = self.proc
        assert proc.stdin is not None and proc.stdout is not None
        if "\n" in spec:
            return None
        proc.stdin.write(spec.encode("utf-8", "surrogateescape") + b"\n")
        proc.stdin.flush()
        header = proc.stdout.readline().decode("utf-8", "replace").split()
        if len(header) != 3 or header[1] not in ("blob", "tree", "commit", "tag"):
            return None  # "<spec> missing" or "ambiguous"
        size = int(header[2])
        data = proc.stdout.read(size)
        proc.stdout.read(1)  # the newline after the contents
        return (header[0], data) if header[1] == "blob" else None

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


RENAME_SEP = "\t"


def name_changes(root: Path | str, commits: Iterable[CommitFacts]) -> dict[str, tuple[list[str], list[str]]]:
    """Change id -> (the qualified names its hunks touched, on the file as it was at its commit and at its parent;
    the renames it made, as "new<TAB>old"). Changes of unparsed languages, skipped or binary patches get none."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    parsed: dict[str, list[Range]] = {}
    todo = [
        (c, ch)
        for c in commits
        for ch in c.changes
        if ch.hunks and ch.skipped not in ("binary", "lockfile", "generated") and parsed_language(ch.path)
    ]
    if not todo:
        return out
    try:
        reader = BlobReader(root)
    except OSError:
        return out
    with reader:

        def ranges(spec: str, path: str) -> list[Range]:
            got = reader.get(spec)
            if got is None:
                return []
            oid, data = got
            key = f"{oid}:{parsed_language(path)}"
            found = parsed.get(key)
            if found is None:
                if len(parsed) >= CACHE_BLOBS:
                    parsed.clear()
                found = parsed[key] = definitions(path, data)
            return found

        for c, ch in todo:
            new = ranges(f"{c.sha}:{ch.path}", ch.path) if ch.status != "D" else []
            old_path = ch.old_path or ch.path
            parent = c.parents[0] if c.parents else None
            old = ranges(f"{parent}:{old_path}", old_path) if parent and ch.status != "A" else []
            names = touched(ch.hunks, new, old)
            names.discard(extract_mod.MODULE_QN)
            moved = renames(ch.hunks, new, old) if new and old else {}
            out[ch.id] = (sorted(names), [f"{a}{RENAME_SEP}{b}" for a, b in sorted(moved.items())])
    return out
