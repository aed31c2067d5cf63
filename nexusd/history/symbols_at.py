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

import queue
import re
import subprocess
import threading
import time
from bisect import bisect_right
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from nexusd.history import git as git_source
from nexusd.history.facts import ChangeFacts, CommitFacts
from nexusd.parse import extract as extract_mod
from nexusd.parse.languages import parsed_language

if TYPE_CHECKING:
    from tree_sitter import Tree

Range = tuple[int, int, str]  # (first line, last line, qualified name), 1-based inclusive

MAX_BLOB_BYTES = 1 << 20  # bigger files are generated or vendored: their changes keep no symbol names
CACHE_BLOBS = 4096
BETWEEN_S = 0.5  # how often `name_changes` lets the writer run queued work (its `between`)
CACHE_TREES = 256  # parsed trees kept for incremental parses of older versions (see Trees)


def definitions(path: str, data: bytes) -> list[Range]:
    """The symbols of one version of a file, as the code graph would name them; [] when it is not parsed."""
    language = _definable(path, data)
    if language is None:
        return []
    try:
        return extract_mod.definition_ranges(language, data)
    except Exception:  # noqa: BLE001 - a version that cannot be parsed names no symbols; the sync goes on
        return []


def _definable(path: str, data: bytes) -> str | None:
    """The language `definitions` parses `data` as, None when it names no symbols in it."""
    language = parsed_language(path)
    if language is None or language not in extract_mod.HOOKS or len(data) > MAX_BLOB_BYTES:
        return None
    if b"\0" in data[: extract_mod.BINARY_PROBE]:
        return None
    return language


class Trees:
    """The latest parsed trees of a sync, by blob id and language (a bounded LRU), so that the version of a file
    at a commit's parent is parsed incrementally from the version at the commit: the change's hunks are applied
    to a copy of the newer tree (`Tree.edit`) and the parser reuses every subtree outside them. The hunks are
    checked first: the newer bytes with the hunks' lines replaced must be exactly the older bytes, else the
    older version is parsed from scratch. Either way the tree is that of the older bytes, so the names are the
    same as a fresh parse's (tests/history/test_symbols_at.py compares them)."""

    def __init__(self, size: int = CACHE_TREES) -> None:
        self.size = size
        self._trees: OrderedDict[str, Tree] = OrderedDict()

    def ranges(self, key: str, path: str, data: bytes, base: tuple[Side, Sequence[Sequence[int]]] | None) -> list[Range]:
        language = _definable(path, data)
        if language is None:
            return []
        try:
            old = self._edited(language, data, base) if base is not None else None
            tree = extract_mod.parse_tree(language, data, old)
            self._trees[key] = tree
            if len(self._trees) > self.size:
                self._trees.popitem(last=False)
            return extract_mod.definition_ranges(language, data, tree)
        except Exception:  # noqa: BLE001 - a version that cannot be parsed names no symbols; the sync goes on
            return []

    def _edited(self, language: str, data: bytes, base: tuple[Side, Sequence[Sequence[int]]]) -> Tree | None:
        """The newer side's tree edited into `data`'s coordinates, or None (no tree kept, hunks that do not
        turn the newer bytes into `data`, a Python coding declaration that re-encodes either side)."""
        newer, hunks = base
        tree = self._trees.get(newer.key)
        if tree is None or not newer.key.endswith(f":{language}") or not hunks:
            return None
        if language == "python" and any(b"coding" in x[:400] and extract_mod.source_as_utf8(x) is not x for x in (data, newer.data)):
            return None  # re-encoded before parsing: the hunks' byte offsets are not the parsed bytes' offsets
        self._trees.move_to_end(newer.key)
        src, dst = newer.data, data
        src_starts, dst_starts = _line_starts(src), _line_starts(dst)
        edits: list[tuple[int, int, int, int]] = []  # (src start, src end, dst start, dst end), in order
        for hunk in sorted(hunks, key=lambda h: int(h[0])):
            ns, nl, os_, ol = (int(x) for x in hunk[:4])
            a = _offset(src_starts, src, ns if nl > 0 else ns + 1)
            b = _offset(src_starts, src, ns + nl) if nl > 0 else a
            c = _offset(dst_starts, dst, os_ if ol > 0 else os_ + 1)
            d = _offset(dst_starts, dst, os_ + ol) if ol > 0 else c
            if edits and (a < edits[-1][1] or c < edits[-1][3]):
                return None
            edits.append((a, b, c, d))
        # The check: outside the hunks the two versions are byte for byte the same.
        pos_src = pos_dst = 0
        for a, b, c, d in edits:
            if a - pos_src != c - pos_dst or src[pos_src:a] != dst[pos_dst:c]:
                return None
            pos_src, pos_dst = b, d
        if len(src) - pos_src != len(dst) - pos_dst or src[pos_src:] != dst[pos_dst:]:
            return None
        tree = tree.copy()
        for a, b, c, d in edits:  # first to last: edit i starts at c (the gaps before it are the same length)
            tree.edit(
                start_byte=c, old_end_byte=c + (b - a), new_end_byte=d, start_point=_point(dst_starts, c),
                old_end_point=_point_after(dst_starts, c, b - a, src, a), new_end_point=_point(dst_starts, d),
            )  # fmt: skip
        return tree


def _line_starts(data: bytes) -> list[int]:
    starts = [0]
    find = data.find
    i = find(b"\n")
    while i >= 0:
        starts.append(i + 1)
        i = find(b"\n", i + 1)
    return starts


def _offset(starts: list[int], data: bytes, line: int) -> int:
    """The byte offset of the start of 1-based `line` (the end of `data` past its last line)."""
    if line <= 1:
        return 0
    return starts[line - 1] if line - 1 < len(starts) else len(data)


def _point(starts: list[int], offset: int) -> tuple[int, int]:
    row = bisect_right(starts, offset) - 1
    return row, offset - starts[row]


def _point_after(dst_starts: list[int], start: int, length: int, src: bytes, src_start: int) -> tuple[int, int]:
    """The point, in the document being edited, where the replaced `src[src_start:src_start + length]` ended:
    rows and column counted from `start` (a line start in `dst`'s coordinates)."""
    row, col = _point(dst_starts, start)
    segment = src[src_start : src_start + length]
    lines = segment.count(b"\n")
    if lines:
        return row + lines, len(segment) - segment.rfind(b"\n") - 1
    return row, col + len(segment)


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
    return {name: candidate for _, name, candidate in _best_first(pairs)}


class BlobReader:
    """`git cat-file --batch` kept open for a sync: `rev:path` -> (object id, bytes), or None when absent."""

    def __init__(self, root: Path | str) -> None:
        cmd = ["git", "--no-pager", *git_source.SAFE_CONFIG, "-C", str(root), "cat-file", "--batch"]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=git_source.git_env(),
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

# Lineage by body: see ARCHITECTURE.md, "Function history". A symbol continues another when their bodies, as
# bags of tokens with whitespace and the symbols' own names left out, share at least BODY_MIN of their combined
# mass (weighted Jaccard: sum of min counts over sum of max counts). Bodies of fewer than BODY_MIN_TOKENS tokens
# never link by body: a one-line accessor is like every other one-line accessor.
BODY_MIN = 0.5
BODY_MIN_TOKENS = 16
MAX_BODY_PAIRS = 250_000  # a commit that moves more than this many candidate pairs links none of them by body

_TOKEN = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[^\sA-Za-z0-9_]")


def body_tokens(data: bytes | list[bytes], start: int, end: int, name: str) -> Counter[bytes]:
    """The tokens of lines start..end (1-based, inclusive; `data` a file or its lines), without the symbol's own
    (short) name."""
    lines = (data.split(b"\n") if isinstance(data, bytes) else data)[start - 1 : end]
    own = name.rsplit(".", 1)[-1].encode("utf-8", "surrogateescape")
    return Counter(t for line in lines for t in _TOKEN.findall(line) if t != own)


def similarity(a: Counter[bytes], b: Counter[bytes], na: int | None = None, nb: int | None = None) -> float:
    """Weighted Jaccard of two token bags (`na`, `nb`: their sizes, when known); 0.0 when either is below
    BODY_MIN_TOKENS."""
    na = sum(a.values()) if na is None else na
    nb = sum(b.values()) if nb is None else nb
    if na < BODY_MIN_TOKENS or nb < BODY_MIN_TOKENS or min(na, nb) < BODY_MIN * max(na, nb):
        return 0.0
    common = sum((a & b).values())
    return common / (na + nb - common)


@dataclass(slots=True)
class Side:
    """One version of a file in a change: its symbols and the bytes their bodies are read from."""

    path: str
    ranges: list[Range]
    data: bytes
    key: str = ""  # blob id and language, when read from git (the parsed-tree cache's key)
    _bags: dict[str, Counter[bytes]] = field(default_factory=dict)
    _lines: list[bytes] | None = None
    _sizes: dict[str, int] = field(default_factory=dict)

    def size(self, name: str) -> int:
        got = self._sizes.get(name)
        if got is None:
            got = self._sizes[name] = sum(self.bag(name).values())
        return got

    def bag(self, name: str) -> Counter[bytes]:
        got = self._bags.get(name)
        if got is None:
            got = Counter()
            if self._lines is None:
                self._lines = self.data.split(b"\n")
            for start, end, qn in self.ranges:
                if qn == name:
                    got = body_tokens(self._lines, start, end, qn)
                    break
            self._bags[name] = got
        return got

    def span(self, name: str) -> tuple[int, int]:
        for start, end, qn in self.ranges:
            if qn == name:
                return start, end
        return 0, -1

    def names(self) -> set[str]:
        return {qn for _, _, qn in self.ranges if qn != extract_mod.MODULE_QN}


@dataclass(slots=True)
class Link:
    """`new` (in the change's file at its commit) continues `old` (in `old_path` at the parent, "" for the
    change's own old side). `how`: "lines" (the diff's lines) or "body 0.83" (body similarity)."""

    new: str
    old: str
    how: str
    old_path: str = ""

    def encode(self) -> str:
        return RENAME_SEP.join((self.new, self.old, self.old_path, self.how))


def decode_link(text: str) -> Link | None:
    """A stored link; the first stored form, "new<TAB>old", is a line-based link inside the file."""
    parts = text.split(RENAME_SEP)
    if len(parts) == 2:
        return Link(parts[0], parts[1], "lines")
    if len(parts) == 4:
        return Link(parts[0], parts[1], parts[3], parts[2])
    return None


def kept(hunks: Sequence[Sequence[int]], new: tuple[int, int], old: tuple[int, int]) -> int:
    """How many lines of the new range are unchanged lines that were in the old range."""
    count = 0
    for line in range(new[0], new[1] + 1):
        was = old_line(line, hunks)
        if was is not None and old[0] <= was <= old[1]:
            count += 1
    return count


def body_links(
    hunks: Sequence[Sequence[int]],
    new: Side,
    old: Side,
    claimed_new: set[str],
    claimed_old: set[str],
    touched_names: set[str] | None = None,
) -> list[Link]:
    """Links inside one file that the diff's lines did not make, by body similarity:
    a symbol that appears (its name is not in the old version) continues a symbol that vanished, or one whose
    name stays but whose body and unchanged lines went to the newcomer (a split: `do_groupby`'s body became
    `sync_do_groupby`, and a new `do_groupby` wraps it; the name that stays keeps its own history too).
    Best pairs first; each old symbol continues into one new symbol, each new symbol continues one old one."""
    new_names, old_names = new.names(), old.names()
    appeared = sorted(n for n in new_names - old_names if n not in claimed_new)
    # a name that stays gave its body away only if the change touched it (`touched_names`; None: any)
    sources = sorted(
        n
        for n in old_names
        if n not in claimed_old and (n not in new_names or touched_names is None or n in touched_names)
    )
    if not appeared or not sources or len(appeared) * len(sources) > MAX_BODY_PAIRS:
        return []
    pairs: list[tuple[float, str, str]] = []
    for name in appeared:
        bag, n = new.bag(name), new.size(name)
        if n < BODY_MIN_TOKENS:
            continue
        for source in sources:
            m = old.size(source)
            if m < BODY_MIN_TOKENS or min(n, m) < BODY_MIN * max(n, m):
                continue
            score = similarity(bag, old.bag(source), n, m)
            if score < BODY_MIN:
                continue
            if source in new_names:
                # the old name stays: the newcomer continues it only when both its body and the diff's
                # unchanged lines say so (an extracted helper holds old lines as added ones, not unchanged)
                stays = similarity(new.bag(source), old.bag(source))
                if stays >= score or kept(hunks, new.span(name), old.span(source)) <= kept(
                    hunks, new.span(source), old.span(source)
                ):
                    continue
            pairs.append((score, name, source))
    return [Link(name, source, f"body {score:.2f}") for score, name, source in _best_first(pairs)]


_K = TypeVar("_K", str, int)


def _best_first(pairs: list[tuple[float, _K, _K]]) -> Iterator[tuple[float, _K, _K]]:
    """One-to-one pairs, best score first (ties by the keys): each new and each old side is taken once."""
    taken_new: set[_K] = set()
    taken_old: set[_K] = set()
    for score, a, b in sorted(pairs, key=lambda p: (-p[0], p[1], p[2])):
        if a in taken_new or b in taken_old:
            continue
        taken_new.add(a)
        taken_old.add(b)
        yield score, a, b


def split_links(hunks: Sequence[Sequence[int]], new: Side, old: Side, made: list[Link]) -> list[Link]:
    """A symbol split in two: a newcomer left without a predecessor continues a vanished symbol that another
    newcomer continues when it sits at the same depth (a function from a function, a method from a method),
    most of its lines came from it (carried back through the hunks) and most of its tokens are the old body's
    (containment >= BODY_MIN)."""
    given = {link.old for link in made if link.old}
    continued = {link.new for link in made}
    new_names, old_names = new.names(), old.names()
    gone = [(s, e, n) for s, e, n in old.ranges if n in given and n not in new_names]
    if not gone:
        return []
    out = []
    for start, end, name in new.ranges:
        if name in continued or name in old_names or name == extract_mod.MODULE_QN or new.size(name) < BODY_MIN_TOKENS:
            continue
        lines = old_range(start, end, hunks)
        best: tuple[float, str] | None = None
        for s, e, source in gone:
            if source.count(".") != name.count("."):
                continue  # a split keeps the nesting: two functions from one, two methods from one
            inside = sum(1 for line in lines if s <= line <= e)
            if not lines or inside * 2 < len(lines):
                continue
            share = sum((new.bag(name) & old.bag(source)).values()) / new.size(name)
            if share >= BODY_MIN and (best is None or share > best[0]):
                best = (share, source)
        if best is not None:
            out.append(Link(name, best[1], f"split {best[0]:.2f}"))
    return out


def moved_links(vanished: list[tuple[str, Side]], appeared: list[tuple[str, Side]]) -> dict[str, list[Link]]:
    """Across the files of one commit: a symbol that appeared in one file (not there, by name, at the parent)
    continues one that vanished from another when their bodies are similar (BODY_MIN). Keyed by the new path."""
    if not vanished or not appeared or len(vanished) * len(appeared) > MAX_BODY_PAIRS:
        return {}
    pairs: list[tuple[float, int, int]] = []
    sizes = [old_side.size(source) for source, old_side in vanished]
    for i, (name, side) in enumerate(appeared):
        bag, n = side.bag(name), side.size(name)
        if n < BODY_MIN_TOKENS:
            continue
        short = name.rsplit(".", 1)[-1]
        for j, (source, old_side) in enumerate(vanished):
            m = sizes[j]
            if old_side.path == side.path or m < BODY_MIN_TOKENS or min(n, m) < BODY_MIN * max(n, m):
                continue
            score = similarity(bag, old_side.bag(source), n, m)
            if score >= BODY_MIN:
                pairs.append((score + (1e-6 if source.rsplit(".", 1)[-1] == short else 0.0), i, j))
    out: dict[str, list[Link]] = {}
    for score, i, j in _best_first(pairs):
        (name, side), (source, old_side) = appeared[i], vanished[j]
        out.setdefault(side.path, []).append(Link(name, source, f"body {min(score, 1.0):.2f}", old_side.path))
    return out


def merge_touched(ch: ChangeFacts, parents: Sequence[str], side: Callable[..., Side]) -> set[str]:
    """The symbols a merge's change touched: those its diff from *each* parent touches (a symbol the merge took
    unchanged from one parent is that parent's history, not the merge's)."""
    if len(ch.parent_hunks) != len(parents) or not parents:
        return set()
    new = side(f"{ch.commit_sha}:{ch.path}", ch.path) if ch.status != "D" else Side(ch.path, [], b"")
    names: set[str] | None = None
    for parent, hunks in zip(parents, ch.parent_hunks, strict=True):
        if not hunks:
            return set()
        old = side(f"{parent}:{ch.path}", ch.path, (new, hunks))
        got = touched(hunks, new.ranges, old.ranges)
        names = got if names is None else names & got
        if not names:
            return set()
    names = names or set()
    names.discard(extract_mod.MODULE_QN)
    return names


def _blob_specs(c: CommitFacts, changes: Sequence[ChangeFacts]) -> list[str]:
    """The `rev:path` blobs `name_changes` reads for one commit's changes (a superset for a merge)."""
    specs: list[str] = []
    for ch in changes:
        if ch.status != "D":
            specs.append(f"{c.sha}:{ch.path}")
        if c.is_merge:
            specs.extend(f"{parent}:{ch.path}" for parent in c.parents)
        elif c.parents and ch.status != "A":
            specs.append(f"{c.parents[0]}:{ch.old_path or ch.path}")
    return specs


class Prefetch:
    """A sync's blobs read ahead by a thread (one `git cat-file --batch`, commit by commit, at most AHEAD
    commits ahead), so git inflates the next commit's blobs while this one's are parsed. `next()` moves to the
    next commit of the plan; `get` answers from its blobs (a spec outside them is read by a second reader)."""

    AHEAD = 16

    def __init__(self, root: Path | str, plan: list[list[str]]) -> None:
        self.root = root
        self.reader = BlobReader(root)
        self._queue: queue.Queue[dict[str, tuple[str, bytes] | None] | BaseException] = queue.Queue(self.AHEAD)
        self._stop = threading.Event()
        self._current: dict[str, tuple[str, bytes] | None] = {}
        self._other: BlobReader | None = None
        self._thread = threading.Thread(target=self._run, args=(plan,), name="history-blobs", daemon=True)
        self._thread.start()

    def _run(self, plan: list[list[str]]) -> None:
        item: dict[str, tuple[str, bytes] | None] | BaseException
        for specs in plan:
            try:
                item = {spec: self.reader.get(spec) for spec in specs}
            except Exception as exc:  # noqa: BLE001 - handed to the reader of the queue, which raises it
                item = exc
            while not self._stop.is_set():
                try:
                    self._queue.put(item, timeout=0.2)
                    break
                except queue.Full:
                    continue
            if self._stop.is_set() or isinstance(item, BaseException):
                return

    def next(self) -> None:
        item = self._queue.get()
        if isinstance(item, BaseException):
            raise item
        self._current = item

    def get(self, spec: str) -> tuple[str, bytes] | None:
        if spec in self._current:
            return self._current[spec]
        if self._other is None:
            self._other = BlobReader(self.root)
        return self._other.get(spec)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.reader.close()
        if self._other is not None:
            self._other.close()

    def __enter__(self) -> Prefetch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def name_changes(
    root: Path | str, commits: Iterable[CommitFacts], between: Callable[[], Any] | None = None
) -> dict[str, tuple[list[str], list[str]]]:
    """Change id -> (the qualified names its hunks touched, on the file as it was at its commit and at its parent;
    the lineage links it made, `Link.encode`d: symbols renamed or moved inside the file, by the diff's lines or
    by body, and symbols moved in from another file of the commit, by body). Changes of unparsed languages,
    skipped or binary patches get none. `between` is called every BETWEEN_S of this work (no transaction is
    open here): a first sync of a whole history parses for ~10 s (black), and the writer runs the daemon's
    queued work there (an edit saved meanwhile) instead of after it."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    parsed: dict[str, list[Range]] = {}
    trees = Trees(CACHE_TREES)
    todo: dict[str, list[ChangeFacts]] = {}
    order: list[CommitFacts] = []
    for c in commits:
        parsed_changes = [
            ch
            for ch in c.changes
            if ch.hunks and ch.skipped not in ("binary", "lockfile", "generated") and parsed_language(ch.path)
        ]
        if parsed_changes:
            todo[c.sha] = parsed_changes
            order.append(c)
    if not todo:
        return out
    try:
        reader = Prefetch(root, [_blob_specs(c, todo[c.sha]) for c in order])
    except OSError:
        return out
    with reader:

        def side(spec: str, path: str, base: tuple[Side, Sequence[Sequence[int]]] | None = None) -> Side:
            """`path` at `spec`; `base`: the newer version and the hunks from this one to it (incremental parse)."""
            got = reader.get(spec)
            if got is None:
                return Side(path, [], b"")
            oid, data = got
            key = f"{oid}:{parsed_language(path)}"
            found = parsed.get(key)
            if found is None:
                if len(parsed) >= CACHE_BLOBS:
                    parsed.clear()
                found = parsed[key] = trees.ranges(key, path, data, base)
            return Side(path, found, data, key)

        pause = time.monotonic() + BETWEEN_S
        for c in order:
            if between is not None and time.monotonic() >= pause:
                between()
                pause = time.monotonic() + BETWEEN_S
            reader.next()  # this commit's blobs
            if c.is_merge:  # touched: differs from every parent there (as `git log -L` lists a merge); no links
                for ch in todo[c.sha]:
                    out[ch.id] = (sorted(merge_touched(ch, c.parents, side)), [])
                continue
            parent = c.parents[0] if c.parents else None
            vanished: list[tuple[str, Side]] = []
            appeared: list[tuple[str, Side]] = []
            links: dict[str, list[Link]] = {}
            for ch in todo[c.sha]:
                new = side(f"{c.sha}:{ch.path}", ch.path) if ch.status != "D" else Side(ch.path, [], b"")
                old_path = ch.old_path or ch.path
                old = (
                    side(f"{parent}:{old_path}", old_path, (new, ch.hunks))
                    if parent and ch.status != "A"
                    else Side(old_path, [], b"")
                )
                names = touched(ch.hunks, new.ranges, old.ranges)
                names.discard(extract_mod.MODULE_QN)
                moved = renames(ch.hunks, new.ranges, old.ranges) if new.ranges and old.ranges else {}
                mine = [Link(a, b, "lines") for a, b in sorted(moved.items())]
                mine += body_links(ch.hunks, new, old, set(moved), set(moved.values()), names)
                mine += split_links(ch.hunks, new, old, mine)
                links[ch.id] = mine
                continued = {link.new for link in mine if link.old}
                gave = {link.old for link in mine if link.old}
                new_names, old_names = new.names(), old.names()
                vanished += [(n, old) for n in sorted(old_names - new_names - gave)]
                appeared += [(n, new) for n in sorted(new_names - old_names - continued)]
                out[ch.id] = (sorted(names), [])
            across = moved_links(vanished, appeared)
            for ch in todo[c.sha]:
                made = links[ch.id] + across.get(ch.path, [])
                out[ch.id] = (out[ch.id][0], [link.encode() for link in made])
    return out
