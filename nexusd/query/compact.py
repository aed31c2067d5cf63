"""The query snapshot's resident form: one string table and flat arrays, instead of a Python object per symbol,
edge and index entry; and the file it is saved to, so that a restarted daemon answers without reading the graph.

`build(repo_id, files)` makes them straight from a cold batch's files (no dict form in between);
`freeze(snap)` turns a snapshot's tables (dicts of Python objects, as `Snapshot.build`/`load` make them) into a
`Frozen`: every distinct string once in one UTF-8 blob (`Strings`, with an open-addressing hash table from a
string to its number), the symbols as columns indexed by slot, and every other table as a `Table` — its keys as
string numbers (in the dict's order, plus a sorted copy for lookups by bisection) and its values as CSR ranges
into parallel arrays. `FrozenMap` reads a table as a read-only mapping that makes the same values the dicts held
(`Sym`, lists of `Edge`/`Import`/ids, arrays of slots) when a key is read; `Over` puts a mutable dict over one,
so the snapshot's deltas (`Snapshot.apply_files`) go on writing as they did. ARCHITECTURE.md ("Memory of the code
graph") has the figures.

The file (`save`/`load_file`): a magic line, a JSON header (format number, byte order, the stamp it was made for,
each array's type code, length and offset, a CRC-32 of the payload) and the raw arrays. Loading parses JSON and
maps the file read-only, each array a typed view of it (`_map`; read into arrays where a file cannot be
mapped), nothing else: no pickle, nothing in the file can run. Anything unexpected (magic, format, byte order,
item sizes, stamp, lengths, CRC) raises `BadFile` and the caller reads the graph instead.
"""

from __future__ import annotations

import bisect
import functools
import json
import os
import sys
import zlib
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from ..batch import FileData

    # (group ends, offsets, edge numbers in order): an edge table as `_Edges.grouped` makes it
    _Grouped = tuple[array[int], array[int], array[int]]
    from .snapshot import Snapshot, Sym

MAGIC = b"NEXUS-SNAPSHOT\n"
FORMAT = 1  # bump when the arrays or their meaning change: an older file is then ignored
ENC = "surrogatepass"  # every str round-trips (paths may carry surrogate escapes)
OFF_CODE = "I" if array("I").itemsize == 4 else "L"  # string offsets: 4 bytes (a snapshot's strings stay under 4 GB)

# name -> (value columns, single-valued): the snapshot's tables in the order `freeze` writes them
TABLES: dict[str, tuple[tuple[str, ...], bool]] = {
    "by_id": (("slot",), True),
    "by_key": (("slot",), True),
    "files": (("fid", "role"), True),
    "by_file": (("id",), False),
    "children": (("id",), False),
    "calls_out": (("other", "conf", "how", "line"), False),
    "calls_in": (("other", "conf", "how", "line"), False),
    "inherits_out": (("other", "conf", "how", "line"), False),
    "inherits_in": (("other", "conf", "how", "line"), False),
    "imports_out": (("other", "spec", "line", "how", "conf"), False),
    "imports_in": (("other", "spec", "line", "how", "conf"), False),
    "name_exact": (("slot",), False),
    "name_lower": (("slot",), False),
    "qname_lower": (("slot",), False),
    "name_tokens": (("slot",), False),
    "text_tokens": (("slot",), False),
    "unresolved_by_tail": (("pair",), False),
}
_FLOAT_COLS = {"conf"}
_STR_COLS = {"fid", "role", "id", "other", "how", "spec"}
# the symbol columns, by slot: string numbers, then plain integers
SYM_STR = ("id", "key", "name", "qname", "kind", "path", "signature", "unresolved_text")
SYM_INT = ("start", "end", "unresolved_count", "exported", "parent")


class BadFile(ValueError):
    """A snapshot file that is damaged, of another format, or made for another graph version."""


class Abandoned(Exception):
    """`freeze` stopped because its `stop` said so (a batch waits to change the snapshot)."""


STOP_EVERY = 4096  # items between two `stop` checks in `freeze` (a few milliseconds of work)


class Strings:
    """Every distinct string once: `blob[off[i]:off[i+1]]` is string i in UTF-8; `find` is its number."""

    __slots__ = ("blob", "off", "table")

    def __init__(self, blob: bytes | bytearray, off: array[int], table: array[int]) -> None:
        self.blob, self.off, self.table = blob, off, table

    def __getitem__(self, i: int) -> str:
        off = self.off
        return str(self.blob[off[i] : off[i + 1]], "utf-8", ENC)  # (bytes, bytearray or a mapped file's view)

    def __len__(self) -> int:
        return len(self.off) - 1

    def find(self, s: str) -> int:
        """The number of `s`, or -1 when the table does not hold it."""
        try:
            b = s.encode("utf-8", ENC)
        except (AttributeError, UnicodeEncodeError):
            return -1
        table, blob, off = self.table, self.blob, self.off
        mask = len(table) - 1
        i = zlib.crc32(b) & mask
        n = len(b)
        while True:
            k = table[i]
            if k < 0:
                return -1
            a = off[k]
            if off[k + 1] - a == n and blob[a : a + n] == b:
                return k
            i = (i + 1) & mask

    @staticmethod
    def build(strings: list[str]) -> Strings:
        # One string encoded at a time into the blob (no list of a few hundred thousand bytes objects alive at
        # once: that transient heap stayed fragmented in the daemon after a compaction).
        size = 8
        while size < 2 * len(strings):
            size *= 2
        table = array("i", [-1]) * size
        mask = size - 1
        blob = bytearray()
        off = array(OFF_CODE, [0])
        crc32 = zlib.crc32
        for k, s in enumerate(strings):
            b = s.encode("utf-8", ENC)
            blob += b
            off.append(len(blob))
            i = crc32(b) & mask
            while table[i] >= 0:
                i = (i + 1) & mask
            table[i] = k
        return Strings(blob, off, table)


class Table:
    """A dict frozen: `keys` (string numbers, in the dict's order), `skeys`/`srows` (the keys sorted, and the row
    of each), `off` (row r's values are `cols[c][off[r]:off[r+1]]`; None when single-valued: `cols[c][r]`)."""

    __slots__ = ("keys", "skeys", "srows", "off", "cols")

    def __init__(self, keys: array[int], skeys: array[int], srows: array[int], off: array[int] | None,
                 cols: dict[str, array[Any]]) -> None:  # fmt: skip
        self.keys, self.skeys, self.srows, self.off, self.cols = keys, skeys, srows, off, cols

    def row(self, k: int) -> int:
        if k < 0:
            return -1
        skeys = self.skeys
        i = bisect.bisect_left(skeys, k)
        return self.srows[i] if i < len(skeys) and skeys[i] == k else -1


class Frozen:
    """One snapshot's tables as arrays (see the module docstring)."""

    CACHE = 8192  # symbols made recently, kept for the next reads (a walk meets the same symbols again and again)

    def __init__(self, strings: Strings, syms: dict[str, array[int]], tables: dict[str, Table],
                 names: array[int]) -> None:  # fmt: skip
        self.strings = strings
        self.syms = syms
        self.tables = tables
        self.names = names  # distinct lower(name) as string numbers, sorted by the strings
        self.source: str | None = None  # the file it is a mapping of (`_map`), None in this process's memory
        self.mapping: Any = None  # the mmap itself when mapped (`drop_pages`)
        self._made: dict[int, Sym] = {}
        self._short: dict[int, str] = {}  # strings of few distinct values (kinds, paths, roles, resolutions)
        ids = syms["id"]
        # `freeze` numbers the ids first, in slot order: then an id's string number is its slot.
        self.ids_are_slots = all(ids[i] == i for i in (0, len(ids) // 2, len(ids) - 1)) if len(ids) else True
        if self.ids_are_slots and len(ids) and ids != array(typecode(ids), range(len(ids))):
            self.ids_are_slots = False

    @property
    def size(self) -> int:
        return len(self.syms["id"])

    def sym(self, slot: int) -> Sym:
        made = self._made.get(slot)
        if made is not None:
            return made
        S, c = self.strings, self.syms
        parent = c["parent"][slot]
        made = _sym_class()(
            slot, S[c["id"][slot]], S[c["key"][slot]], S[c["name"][slot]], S[c["qname"][slot]], self.short(c["kind"][slot]),
            self.short(c["path"][slot]), c["start"][slot], c["end"][slot], S[c["signature"][slot]], bool(c["exported"][slot]),
            c["unresolved_count"][slot], S[c["unresolved_text"][slot]], S[parent] if parent >= 0 else None,
        )  # fmt: skip
        if len(self._made) >= self.CACHE:
            self._made.clear()
        self._made[slot] = made
        return made

    def short(self, k: int) -> str:
        """String `k`, kept once made: only for columns of few distinct values (kinds, paths, resolutions)."""
        got = self._short.get(k)
        if got is None:
            got = self._short[k] = self.strings[k]
        return got

    def slot_of(self, sid: str) -> int:
        """The slot of the symbol with id `sid`, or -1."""
        k = self.strings.find(sid)
        if self.ids_are_slots:
            return k if 0 <= k < len(self.syms["id"]) else -1
        r = self.tables["by_id"].row(k)
        return self.tables["by_id"].cols["slot"][r] if r >= 0 else -1

    def field(self, slot: int, name: str) -> str:
        """One string column of one symbol (`SYM_STR`), without making the whole symbol."""
        return self.strings[self.syms[name][slot]]

    def drop_pages(self) -> bool:
        """Hand the mapped file's pages back (`MADV_DONTNEED`): they stay in the page cache, and the next read
        faults them in again at minor-fault cost. A read maps far more than it touches (the kernel faults around
        each page in 64 KB blocks and maps whole large page-cache folios: a `locate` that touched ~15 MB of the
        kernel's file left 229 MB of it mapped), so what a daemon has read piles up in its resident memory.
        Safe beside readers: the mapping is read-only and file-backed. True when pages were handed back."""
        import mmap

        mm = self.mapping
        if mm is None or mm.closed or not hasattr(mmap, "MADV_DONTNEED"):
            return False
        mm.madvise(mmap.MADV_DONTNEED)
        return True

    def nbytes(self) -> int:
        """The bytes its arrays and blob hold."""
        n = len(self.strings.blob) + _nb(self.strings.off) + _nb(self.strings.table) + _nb(self.names)
        n += sum(_nb(a) for a in self.syms.values())
        for t in self.tables.values():
            n += _nb(t.keys) + _nb(t.skeys) + _nb(t.srows) + (_nb(t.off) if t.off is not None else 0)
            n += sum(_nb(a) for a in t.cols.values())
        return n

    def arrays(self) -> Iterator[tuple[str, array[Any]]]:
        yield "s.off", self.strings.off
        yield "s.table", self.strings.table
        yield "names", self.names
        for name in SYM_STR + SYM_INT:
            yield f"sym.{name}", self.syms[name]
        for tname, (cols, single) in TABLES.items():
            t = self.tables[tname]
            yield f"{tname}.keys", t.keys
            yield f"{tname}.skeys", t.skeys
            yield f"{tname}.srows", t.srows
            if not single:
                assert t.off is not None
                yield f"{tname}.off", t.off
            for c in cols:
                yield f"{tname}.{c}", t.cols[c]


def _nb(a: array[Any]) -> int:
    return len(a) * a.itemsize


def typecode(a: array[Any] | memoryview) -> str:
    """The element type of an array, or of a view of a mapped file's (`_map`)."""
    return a.typecode if isinstance(a, array) else a.format


def copy_array(view: memoryview) -> array[Any]:
    """A view of a mapped file's array (`_map`) as an array of its own (one copy of the bytes)."""
    out = array(view.format)
    out.frombytes(view.cast("B") if view.format != "B" else view)
    return out


# -- reading a frozen table as the dict it was ------------------------------------------------------------------


class Rows(Sequence[Any]):
    """One key's edges or imports in a frozen table: made one by one as they are read (`len` costs nothing, so
    counting a symbol's callers reads no edge). Slicing gives a list; a batch being applied works on a list
    (`Over` makes one)."""

    __slots__ = ("make", "lo", "hi")

    def __init__(self, make: Callable[[int], Any], lo: int, hi: int) -> None:
        self.make, self.lo, self.hi = make, lo, hi

    def __len__(self) -> int:
        return self.hi - self.lo

    @overload
    def __getitem__(self, i: int) -> Any: ...
    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self.make(k) for k in range(self.lo, self.hi)[i]]
        n = self.hi - self.lo
        if not -n <= i < n:
            raise IndexError(i)
        return self.make(self.lo + (i if i >= 0 else n + i))

    def __iter__(self) -> Iterator[Any]:
        make = self.make
        for k in range(self.lo, self.hi):
            yield make(k)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Rows, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(list(self))


@functools.lru_cache(maxsize=1)
def _sym_class() -> Any:
    from .snapshot import Sym

    return Sym


class FrozenMap(Mapping[Any, Any]):
    """A `Table` read as a read-only mapping: each read makes the value the dict held."""

    __slots__ = ("fz", "t", "make")

    def __init__(self, fz: Frozen, t: Table, make: Callable[[int], Any]) -> None:
        self.fz, self.t, self.make = fz, t, make

    def __getitem__(self, key: Any) -> Any:
        r = self.t.row(self.fz.strings.find(key)) if isinstance(key, str) else -1
        if r < 0:
            raise KeyError(key)
        return self.make(r)

    def get(self, key: Any, default: Any = None) -> Any:
        r = self.t.row(self.fz.strings.find(key)) if isinstance(key, str) else -1
        return default if r < 0 else self.make(r)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.t.row(self.fz.strings.find(key)) >= 0

    def __iter__(self) -> Iterator[str]:
        S = self.fz.strings
        for k in self.t.keys:
            yield S[k]

    def __len__(self) -> int:
        return len(self.t.keys)


def maps(fz: Frozen) -> dict[str, FrozenMap]:
    """Every table of `fz` as the mapping the snapshot reads."""
    out: dict[str, FrozenMap] = {}
    for name, (_cols, single) in TABLES.items():
        t = fz.tables[name]
        assert single == (t.off is None)
        out[name] = FrozenMap(fz, t, _maker(fz, name, t))
    out["by_id"] = SymsById(fz, fz.tables["by_id"], _maker(fz, "by_id", fz.tables["by_id"]))
    return out


class SymsById(FrozenMap):
    """`by_id`: an id's string number is its slot (`Frozen.slot_of`), no bisection."""

    __slots__ = ()

    def __getitem__(self, key: Any) -> Any:
        slot = self.fz.slot_of(key) if isinstance(key, str) else -1
        if slot < 0:
            raise KeyError(key)
        return self.fz.sym(slot)

    def get(self, key: Any, default: Any = None) -> Any:
        slot = self.fz.slot_of(key) if isinstance(key, str) else -1
        return default if slot < 0 else self.fz.sym(slot)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.fz.slot_of(key) >= 0


def _maker(fz: Frozen, name: str, t: Table) -> Callable[[int], Any]:
    """What makes the value of row r of table `name`."""
    from .snapshot import Edge, Import

    S, c = fz.strings, t.cols
    if t.off is None:
        if name == "files":
            fid, role = c["fid"], c["role"]
            short = fz.short
            return lambda r: (S[fid[r]], short(role[r]))
        slot = c["slot"]  # by_id, by_key
        return lambda r: fz.sym(slot[r])
    off = t.off
    if name in ("by_file", "children"):
        ids = c["id"]
        return lambda r: [S[k] for k in ids[off[r] : off[r + 1]]]
    if name.startswith(("calls_", "inherits_")):
        o, f, h, ln = c["other"], c["conf"], c["how"], c["line"]
        short = fz.short

        def edge(i: int) -> Edge:
            return Edge(S[o[i]], f[i], short(h[i]), ln[i])

        return lambda r: Rows(edge, off[r], off[r + 1])
    if name.startswith("imports_"):
        o, sp, ln, h, f = c["other"], c["spec"], c["line"], c["how"], c["conf"]
        short = fz.short

        def imp(i: int) -> Import:
            return Import(short(o[i]), S[sp[i]], ln[i], short(h[i]), f[i])

        return lambda r: Rows(imp, off[r], off[r + 1])
    col = c["pair" if name == "unresolved_by_tail" else "slot"]  # slot postings: the array slice itself
    if isinstance(col, memoryview):  # (a mapped file's: a copy, an array as the dicts held)
        return lambda r: copy_array(col[off[r] : off[r + 1]])
    return lambda r: col[off[r] : off[r + 1]]


class Over(MutableMapping[Any, Any]):
    """A dict over a read-only base mapping: `top` holds what was set since, `gone` the base keys removed. While
    `writing` (the snapshot applying a batch, under its write lock), a list or array read from the base is copied
    into `top` first, so the caller may change it in place; readers never write."""

    __slots__ = ("base", "top", "gone", "writing")

    def __init__(self, base: Mapping[Any, Any]) -> None:
        self.base = base
        self.top: dict[Any, Any] = {}
        self.gone: set[Any] = set()
        self.writing = False

    def __getitem__(self, key: Any) -> Any:
        top = self.top
        if key in top:
            return top[key]
        if key in self.gone:
            raise KeyError(key)
        value = self.base[key]
        if self.writing and isinstance(value, (list, array, Rows)):
            # A copy, always: the base may hand out its own list (a plain dict's, or a baseline `Over`'s under a
            # view's `Layer`), and the caller changes what it gets in place.
            value = array(value.typecode, value) if isinstance(value, array) else list(value)
            top[key] = value
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        if self.writing:
            try:
                return self[key]
            except KeyError:
                return default
        top = self.top
        if key in top:
            return top[key]
        return default if key in self.gone else self.base.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self.top or (key not in self.gone and key in self.base)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.top[key] = value
        self.gone.discard(key)

    def __delitem__(self, key: Any) -> None:
        if key in self.top:
            del self.top[key]
            if key in self.base:
                self.gone.add(key)
        elif key not in self.gone and key in self.base:
            self.gone.add(key)
        else:
            raise KeyError(key)

    def __iter__(self) -> Iterator[Any]:
        top, gone = self.top, self.gone
        yield from top
        for key in self.base:
            if key not in top and key not in gone:
                yield key

    def __len__(self) -> int:
        base = self.base
        return len(base) - len(self.gone) + sum(1 for key in self.top if key not in base)


class SlotList:
    """The snapshot's slots over a frozen base: base slots (made on read, some freed since), then added ones."""

    __slots__ = ("fz", "n", "extra", "dead")

    def __init__(self, fz: Frozen) -> None:
        self.fz = fz
        self.n = fz.size
        self.extra: list[Any] = []
        self.dead: set[int] = set()

    def __getitem__(self, slot: int) -> Any:
        if slot < self.n:
            return None if slot in self.dead else self.fz.sym(slot)
        return self.extra[slot - self.n]

    def __setitem__(self, slot: int, value: Any) -> None:
        if slot >= self.n:
            self.extra[slot - self.n] = value
        elif value is None:
            self.dead.add(slot)
        else:  # the snapshot only ever frees a slot it did not add
            raise ValueError("a frozen slot is never rewritten")

    def append(self, value: Any) -> None:
        self.extra.append(value)

    def __len__(self) -> int:
        return self.n + len(self.extra)

    def __iter__(self) -> Iterator[Any]:
        for slot in range(len(self)):
            yield self[slot]


class Names:
    """The sorted distinct lower-cased names: the frozen ones (string numbers), with names added since kept as
    strings (negative entries: `extra[-1 - entry]`). Reads like the sorted list of str it replaces (bisect)."""

    __slots__ = ("strings", "ids", "extra")

    def __init__(self, strings: Strings, ids: array[int], extra: list[str] | None = None) -> None:
        self.strings, self.ids, self.extra = strings, ids, extra if extra is not None else []

    def __getitem__(self, i: int) -> str:
        k = self.ids[i]
        return self.strings[k] if k >= 0 else self.extra[-1 - k]

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[str]:
        for i in range(len(self.ids)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (list, Names)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def insert(self, pos: int, name: str) -> None:
        self.extra.append(name)
        self.ids.insert(pos, -len(self.extra))

    def copy(self) -> Names:
        return Names(self.strings, array("i", self.ids), list(self.extra))


# -- freezing ---------------------------------------------------------------------------------------------------


class _Interner(dict[str, int]):
    """A string -> its number (`intern[s]` numbers a new string on first sight); `strings` in number order."""

    def __init__(self) -> None:
        super().__init__()
        self.strings: list[str] = []

    def __missing__(self, s: str) -> int:
        k = self[s] = len(self.strings)
        self.strings.append(s)
        return k

    def __call__(self, s: str) -> int:
        return self[s]


def freeze(snap: Snapshot, stop: Callable[[], bool] | None = None) -> Frozen:
    """The arrays of `snap`'s current state (the caller keeps it from changing meanwhile). Live symbols keep
    their order (slots are renumbered without the freed ones), so every answer ordered by slot stays the same.

    `stop` is asked every `STOP_EVERY` items; when it says so, `Abandoned` is raised and nothing has changed.
    The caller holds the snapshot's read lock throughout, and freezing the kernel's 1.8M symbols took 200 s:
    a batch waiting for the write lock (an edit, and every query behind it) must not wait that long."""

    def check(n: int) -> None:
        if stop is not None and not n % STOP_EVERY and stop():
            raise Abandoned

    intern = _Interner()
    renum: dict[int, int] = {}
    cols: dict[str, array[int]] = {name: array("i") for name in SYM_STR + SYM_INT}
    str_cols = [(cols[name], name) for name in SYM_STR]
    live = []
    for n, sym in enumerate(snap.slots):  # (a frozen base makes each symbol on read: seconds on the kernel)
        check(n)
        if sym is not None:
            live.append(sym)
    for n, sym in enumerate(live):  # ids first, in slot order: an id's string number is then its slot
        check(n)
        intern(sym.id)
    for n, sym in enumerate(live):
        check(n)
        renum[sym.slot] = len(renum)
        for col, name in str_cols:
            col.append(intern(getattr(sym, name)))
        cols["start"].append(sym.start)
        cols["end"].append(sym.end)
        cols["unresolved_count"].append(sym.unresolved_count)
        cols["exported"].append(1 if sym.exported else 0)
        cols["parent"].append(intern(sym.parent) if sym.parent is not None else -1)
    tables: dict[str, Table] = {}
    identity = len(renum) == len(snap.slots) and all(old == new for old, new in renum.items())
    posting_renum: dict[int, int] = _SAME if identity else renum
    for name, (colnames, single) in TABLES.items():
        src: Mapping[str, Any] = getattr(snap, name)
        keys = array("i")
        off = None if single else array("q", [0])
        out: dict[str, array[Any]] = {c: array("d" if c in _FLOAT_COLS else "i") for c in colnames}
        for n, (key, value) in enumerate(src.items()):
            check(n)
            if single:
                if name in ("by_id", "by_key"):
                    slot = renum.get(value.slot)
                    if slot is None:
                        continue
                    out["slot"].append(slot)
                else:  # files: (file id, role)
                    out["fid"].append(intern(value[0]))
                    out["role"].append(intern(value[1]))
            else:
                assert off is not None
                _append_values(name, value, out, intern, posting_renum)
                if len(out[colnames[0]]) == off[-1] and name not in ("by_file", "children"):
                    continue  # nothing live under this key: the dict's empty entry is not kept
                off.append(len(out[colnames[0]]))
            keys.append(intern(key))
        check(0)
        order = sorted(range(len(keys)), key=keys.__getitem__)
        tables[name] = Table(keys, array("i", (keys[r] for r in order)), array("i", order), off, out)
    check(0)
    names_sorted = sorted(snap.sorted_names)
    names = array("i", (intern(n) for n in names_sorted))
    check(0)
    return Frozen(Strings.build(intern.strings), cols, tables, names)


_SAME: dict[int, int] = {}  # (a marker: slots are not renumbered)


def build(repo_id: str, files: Sequence[tuple[str, FileData]]) -> Frozen:
    """The arrays of a snapshot of exactly `files` (every file of the graph, with the facts and resolution the
    engine wrote), made straight from them: the same tables, in the same orders, as `freeze` of a `Snapshot.build`
    of the same files (tests/query/test_snapshot_compact.py holds them equal), without making the dict form (a
    `Sym` per symbol, an `Edge` per call end, a list per key): faster, and no heap of objects left fragmented."""
    from ..batch import edge_rows
    from ..parse.facts import file_id, semantic_key, symbol_id
    from ..resolve.base import MAX_STORED_SITES
    from .snapshot import index_tokens, site_tails, stored_sites

    intern = _Interner()
    known = intern
    # Ids first, in slot order (a repeated id keeps its first symbol): an id's string number is its slot.
    file_ids: list[list[str]] = []
    for _path, (facts, _res) in files:
        path = facts.path
        ids = [symbol_id(repo_id, path, s.kind, s.qualified_name, s.occurrence) for s in facts.symbols]
        for sid in ids:
            if sid not in known:
                intern.__missing__(sid)
        file_ids.append(ids)
    n = len(intern.strings)

    def slot(sid: str) -> int:
        k = known.get(sid)
        return k if k is not None and k < n else -1

    cols: dict[str, array[int]] = {name: array("i") for name in SYM_STR + SYM_INT}
    c_id, c_key, c_name, c_qname, c_kind, c_path, c_sig, c_text = (cols[name] for name in SYM_STR)
    c_start, c_end, c_count, c_exp = cols["start"], cols["end"], cols["unresolved_count"], cols["exported"]
    parent = array("i", [-1]) * n
    cols["parent"] = parent
    files_t: dict[str, tuple[str, str]] = {}
    for _path, (facts, _res) in files:
        files_t[facts.path] = (file_id(repo_id, facts.path), facts.role or "")
    by_file: dict[str, array[int]] = {}
    children: dict[int, list[int]] = {}
    postings = {name: _Postings() for name in ("name_exact", "name_lower", "qname_lower", "name_tokens", "text_tokens")}
    name_exact, name_lower, qname_lower = postings["name_exact"], postings["name_lower"], postings["qname_lower"]
    name_tokens, text_tokens = postings["name_tokens"], postings["text_tokens"]
    by_tail: dict[str, array[int]] = {}
    calls = _Edges(n)
    file_no = {fid: i for i, (fid, _) in enumerate(files_t.values())}  # file id -> its place in `files_t`
    imports = _Edges(len(file_no))
    key_of: list[str] = []  # slot -> key (the edge order)
    start_of = c_start
    for (_path, (facts, res)), ids in zip(files, file_ids, strict=True):
        path, lang = facts.path, facts.language
        unresolved = res.stored_unresolved() if res is not None else {}
        first: dict[str, str] = {}
        mine = array("i")
        for sym, sid in zip(facts.symbols, ids, strict=True):
            first.setdefault(sym.qualified_name, sid)
            k = len(c_id)
            if known[sid] != k:
                continue  # (a repeated id: the first symbol holds it)
            raw = unresolved.get(sid)
            text = stored_sites("\n".join(raw[:MAX_STORED_SITES])) if raw else ""
            key = semantic_key(lang, sym.kind, path, sym.qualified_name, sym.occurrence) or ""
            name, qname, signature = sym.name or "", sym.qualified_name or "", sym.signature[:300] or ""
            c_id.append(k)
            c_key.append(intern[key])
            c_name.append(intern[name])
            c_qname.append(intern[qname])
            c_kind.append(intern[sym.kind or ""])
            c_path.append(intern[path or ""])
            c_sig.append(intern[signature])
            c_text.append(intern[text])
            c_start.append(sym.start_line or 0)
            c_end.append(sym.end_line or 0)
            c_count.append(len(raw) if raw else 0)
            c_exp.append(1 if sym.exported else 0)
            key_of.append(key)
            mine.append(k)
            parts, words = index_tokens(name, qname, path or "", signature, sym.doc[:500] or "")
            name_exact.add(name, k)
            name_lower.add(name.lower(), k)
            qname_lower.add(qname.lower(), k)
            name_tokens.add_each(parts, k)
            text_tokens.add_each(words, k)
            if text:
                for tail, offset in site_tails(text):
                    arr = by_tail.get(tail)
                    if arr is None:
                        by_tail[tail] = array("i", (k, offset))
                    else:
                        arr.append(k)
                        arr.append(offset)
        if mine:
            got = by_file.get(path or "")
            if got is None:
                by_file[path or ""] = mine
            else:
                got.extend(mine)
        for sym, sid in zip(facts.symbols, ids, strict=True):
            up = first.get(sym.parent) if sym.parent else None
            if up is not None and up != sid:
                p, child = slot(up), slot(sid)
                if p >= 0 and child >= 0:
                    parent[child] = p
                    lst = children.setdefault(p, [])
                    if child not in lst:
                        lst.append(child)
        if res is not None:
            imp, call = edge_rows(repo_id, res)
            for a_id, b_id, ln, how, conf in call:
                calls.add(slot(a_id), slot(b_id), ln or 0, how or "", float(conf if conf is not None else 1.0))
            for a, b, spec, ln, how, conf in imp:
                if a in file_no and b in file_no:
                    imports.add(file_no[a], file_no[b], ln or 0, how or "", float(conf if conf is not None else 1.0),
                                spec or "")  # fmt: skip
    for lst in children.values():
        lst.sort(key=lambda c: (start_of[c], key_of[c]))
    calls_out, calls_in = calls.grouped(_ranks(key_of), per_line=False)
    paths = list(files_t)
    imports_out, imports_in = imports.grouped(_ranks(paths), per_line=True)

    tables: dict[str, Table] = {}
    keys = array("i", range(n))
    tables["by_id"] = _table(keys, None, {"slot": array("i", range(n))})
    tables["by_key"] = _by_key(c_key, len(intern.strings))
    tables["files"] = _table(
        array("i", (intern[p] for p in files_t)), None,
        {"fid": array("i", (intern[v[0]] for v in files_t.values())),
         "role": array("i", (intern[v[1]] for v in files_t.values()))},
    )  # fmt: skip
    for name in ("by_file", "children"):
        off = array("q", [0])
        ids_col = array("i")
        groups: Iterable[Sequence[int]] = by_file.values() if name == "by_file" else children.values()
        for lst3 in groups:
            ids_col.extend(lst3)
            off.append(len(ids_col))
        gkeys = array("i", (intern[p] for p in by_file)) if name == "by_file" else array("i", children)
        tables[name] = _table(gkeys, off, {"id": ids_col})
    names_of = list(calls.names)
    for name, (ends, off, order) in (("calls_out", calls_out), ("calls_in", calls_in)):
        other = calls.b if name == "calls_out" else calls.a
        tables[name] = _table(ends, off, {
            "other": array("i", (other[i] for i in order)), "conf": array("d", (calls.conf[i] for i in order)),
            "how": array("i", (intern[names_of[calls.how[i]]] for i in order)),
            "line": array("i", (calls.line[i] for i in order)),
        })  # fmt: skip
    del calls, calls_out, calls_in
    # (a cold batch's files carry no INHERITS rows: graphwrite writes none from them either)
    for name in ("inherits_out", "inherits_in"):
        tables[name] = _table(array("i"), array("q", [0]),
                              {"other": array("i"), "conf": array("d"), "how": array("i"), "line": array("i")})  # fmt: skip
    names_of = list(imports.names)
    for name, (ends, off, order) in (("imports_out", imports_out), ("imports_in", imports_in)):
        ends_other = imports.b if name == "imports_out" else imports.a
        other, spec_col, line, how_col, confs = array("i"), array("i"), array("i"), array("i"), array("d")
        for i in order:  # (strings numbered in this order, as `freeze` numbers them)
            other.append(intern[paths[ends_other[i]]])
            spec_col.append(intern[names_of[imports.spec[i]]])
            line.append(imports.line[i])
            how_col.append(intern[names_of[imports.how[i]]])
            confs.append(imports.conf[i])
        tables[name] = _table(array("i", (intern[paths[e]] for e in ends)), off,
                              {"other": other, "spec": spec_col, "line": line, "how": how_col, "conf": confs})  # fmt: skip
    del imports, imports_out, imports_in
    for name, index in postings.items():
        off, col = index.grouped()
        tables[name] = _table(array("i", (intern[t] for t in index.values)), off, {"slot": col})
    off = array("q", [0])
    col = array("i")
    for arr in by_tail.values():
        col.extend(arr)
        off.append(len(col))
    tables["unresolved_by_tail"] = _table(array("i", (intern[t] for t in by_tail)), off, {"pair": col})
    names = array("i", (intern[x] for x in sorted(name_lower.values)))
    del postings, name_exact, name_lower, qname_lower, name_tokens, text_tokens, by_tail
    return Frozen(Strings.build(intern.strings), cols, {name: tables[name] for name in TABLES}, names)


class _Postings:
    """A token index while `build` makes it: token -> its values, in the order they came. A token seen once holds
    its value as an int, and gets an `array` from its second value on: most tokens of a large repository are seen
    once or twice, and an `array` per token, as before, held the Linux kernel's millions of them at ~90 bytes
    each in the forked build."""

    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: dict[str, int | array[int]] = {}

    def add(self, token: str, value: int) -> None:
        got = self.values.get(token)
        if got is None:
            self.values[token] = value
        elif type(got) is int:
            self.values[token] = array("i", (got, value))
        else:
            got.append(value)  # type: ignore[union-attr]

    def add_each(self, tokens: Collection[str], value: int) -> None:
        """`add` each of `tokens` with the same value."""
        values = self.values
        for token in tokens:
            got = values.get(token)
            if got is None:
                values[token] = value
            elif type(got) is int:
                values[token] = array("i", (got, value))
            else:
                got.append(value)  # type: ignore[union-attr]

    def grouped(self) -> tuple[array[int], array[int]]:
        """(offsets, the values grouped by token, tokens in the order first seen)."""
        off = array("q", [0])
        col = array("i")
        for got in self.values.values():
            if type(got) is int:
                col.append(got)  # type: ignore[arg-type]
            else:
                col.extend(got)  # type: ignore[arg-type]
            off.append(len(col))
        return off, col


def _group(which: array[int], groups: int) -> tuple[array[int], array[int]]:
    """A counting sort: (offsets, the positions of `which` grouped by their value in 0..groups-1, each group's in
    their order). Flat arrays throughout: no object per item."""
    off = array("q", bytes(8 * (groups + 1)))
    for g, count in Counter(which).items():
        off[g + 1] = count
    total = 0
    for g in range(1, groups + 1):
        total += off[g]
        off[g] = total
    place = array("q", off)
    order = array("i", bytes(4 * len(which)))
    for i, g in enumerate(which):
        at = place[g]
        order[at] = i
        place[g] = at + 1
    return off, order


class _Edges:
    """A `build`'s edges of one kind as they come, in flat arrays (ends as numbers: slots, or files), and
    `grouped`: by one end, the way `Snapshot.build` orders its dicts. The lists and sets of tuples this replaced
    held the Linux kernel's 2.6 million call edges three times over in the forked build (~1 GB)."""

    def __init__(self, ends: int) -> None:
        self.a, self.b, self.line, self.how, self.spec = array("i"), array("i"), array("i"), array("i"), array("i")
        self.conf = array("d")
        self.names: dict[str, int] = {}  # resolutions and specifiers -> a number of this build's own
        self.ends = ends

    def _number(self, s: str) -> int:
        n = self.names.get(s)
        if n is None:
            n = self.names[s] = len(self.names)
        return n

    def add(self, a: int, b: int, line: int, how: str, conf: float, spec: str = "") -> None:
        if a < 0 or b < 0:
            return
        self.a.append(a)
        self.b.append(b)
        self.line.append(line)
        self.how.append(self._number(how))
        self.spec.append(self._number(spec))
        self.conf.append(conf)

    def grouped(self, rank: array[int], per_line: bool) -> tuple[_Grouped, _Grouped]:
        """(by the first end, by the second) as (group ends, offsets, edge numbers in order). The groups come in
        the order of the edge that first named their end; a group holds the first edge of each other end (and
        line, `per_line`) in the order of that end's `rank`, then the line, then the order they came."""
        kept = bytearray(len(self.a))
        out = self._by(self.a, self.b, rank, kept, per_line, dedupe=True)
        return out, self._by(self.b, self.a, rank, kept, per_line, dedupe=False)

    def _by(self, this: array[int], other: array[int], rank: array[int], kept: bytearray, per_line: bool,
            dedupe: bool) -> _Grouped:  # fmt: skip
        line = self.line
        off_g, members_of = _group(this, self.ends)
        keys, off, order = array("i"), array("q", [0]), array("i")
        named = bytearray(self.ends)
        for g in this:  # (the groups in the order of the edge that first names their end)
            if named[g]:
                continue
            named[g] = 1
            members = members_of[off_g[g] : off_g[g + 1]]
            if dedupe:  # (the first edge of each other end, or of each other end and line)
                seen: set[int] = set()
                group = []
                for i in members:
                    key = (other[i] << 32) | line[i] if per_line else other[i]
                    if key not in seen:
                        seen.add(key)
                        group.append(i)
                        kept[i] = 1
            else:
                group = [i for i in members if kept[i]]
            group.sort(key=lambda i: (rank[other[i]], line[i], i))
            keys.append(g)
            order.extend(group)
            off.append(len(order))
        return keys, off, order


def _ranks(keys: list[str]) -> array[int]:
    """Each position's string as a number that sorts as the string does (equal strings, equal numbers)."""
    rank = array("i", bytes(4 * len(keys)))
    prev: str | None = None
    r = 0
    for n, i in enumerate(sorted(range(len(keys)), key=keys.__getitem__)):
        if keys[i] != prev:
            prev, r = keys[i], n
        rank[i] = r
    return rank


def _by_key(c_key: array[int], strings: int) -> Table:
    """The by_key table: each distinct key (string number), first seen first, to the last slot that holds it
    (what a dict filled slot by slot holds)."""
    last = array("i", [-1]) * strings
    order = array("i")
    for k, key in enumerate(c_key):
        if last[key] < 0:
            order.append(key)
        last[key] = k
    return _table(order, None, {"slot": array("i", (last[key] for key in order))})


def _table(keys: array[int], off: array[int] | None, cols: dict[str, array[Any]]) -> Table:
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return Table(keys, array("i", (keys[r] for r in order)), array("i", order), off, cols)


def _append_values(name: str, value: Any, out: dict[str, array[Any]], intern: _Interner, renum: dict[int, int]) -> None:
    if name in ("by_file", "children"):
        out["id"].extend(intern(x) for x in value)
    elif name.startswith(("calls_", "inherits_")):
        for e in value:
            out["other"].append(intern(e.other))
            out["conf"].append(e.confidence)
            out["how"].append(intern(e.resolution))
            out["line"].append(e.line)
    elif name.startswith("imports_"):
        for i in value:
            out["other"].append(intern(i.other))
            out["spec"].append(intern(i.specifier))
            out["line"].append(i.line)
            out["how"].append(intern(i.resolution))
            out["conf"].append(i.confidence)
    elif name == "unresolved_by_tail" and renum is _SAME:
        out["pair"].extend(value)
    elif name == "unresolved_by_tail":
        pairs = out["pair"]
        for k in range(0, len(value), 2):
            slot = renum.get(value[k])
            if slot is not None:
                pairs.append(slot)
                pairs.append(value[k + 1])
    elif renum is _SAME:  # no freed slot: the postings as they are
        out["slot"].extend(value)
    else:
        slots = out["slot"]
        for s in value:
            slot = renum.get(s)
            if slot is not None:
                slots.append(slot)


# -- the file ---------------------------------------------------------------------------------------------------


def save(fz: Frozen, path: Path, stamp: dict[str, Any], *, durable: bool = True) -> int:
    """Write `fz` to `path` (through a temporary file and a rename: a reader never sees half a file); the bytes
    written. `durable=False`: no fsync (a file read back at once and deleted, as a prebuild's).

    The arrays go to the file from their own memory (a view of each, read twice: for the CRC the header holds,
    then by the write), never copied: the copies and their join were twice the file in memory for the length of
    the save (the kernel's 940 MB snapshot: ~1.9 GB more, the daemon at 6.2 GB right after its index). A frozen
    array is never changed in place (`Over` copies what a batch changes), so nothing resizes one meanwhile."""
    entries, views, pos, crc = [], [], 0, 0
    for name, arr in [("s.blob", None), *fz.arrays()]:
        data = memoryview(fz.strings.blob if arr is None else arr).cast("B")
        entries.append([name, "B" if arr is None else typecode(arr), 1 if arr is None else arr.itemsize,
                        len(data) if arr is None else len(arr), pos])  # fmt: skip
        pad = b"\0" * (-len(data) % 8)
        crc = zlib.crc32(pad, zlib.crc32(data, crc))
        views.append((data, pad))
        pos += len(data) + len(pad)
    header = json.dumps({"format": FORMAT, "byteorder": sys.byteorder, "stamp": stamp, "arrays": entries,
                         "size": pos, "crc32": crc}).encode()  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC)
            f.write(len(header).to_bytes(4, "little"))
            f.write(header)
            for data, pad in views:
                f.write(data)
                f.write(pad)
            f.flush()
            if durable:
                os.fsync(f.fileno())
    finally:
        for data, _ in views:
            data.release()
    os.replace(tmp, path)
    return len(MAGIC) + 4 + len(header) + pos


def load_file(path: Path, stamp: dict[str, Any]) -> Frozen:
    """The snapshot saved in `path` for exactly `stamp`; `BadFile` if it is missing, damaged, of another format,
    or for another stamp (another graph version). The header is read and checked first (a stale file costs one
    small read); then the file is mapped (`_map`), or, where it cannot be, each array read into its `array`."""
    try:
        with open(path, "rb") as f:
            try:
                fz = _map(f, stamp)
            except _Unmappable:
                f.seek(0)
                return _load(f, stamp)
        fz.source = str(path)
        return fz
    except OSError as e:
        raise BadFile(f"cannot read {path}: {e}") from e


class _Unmappable(Exception):
    """The file system (or the platform) does not map this file: read it instead."""


def _header(f: Any, stamp: dict[str, Any]) -> dict[str, Any]:
    head = f.read(len(MAGIC) + 4)
    if len(head) != len(MAGIC) + 4 or not head.startswith(MAGIC):
        raise BadFile("not a snapshot file")
    n = int.from_bytes(head[len(MAGIC) :], "little")
    if n > 1 << 26:
        raise BadFile("unreadable header")
    try:
        header = json.loads(f.read(n))
    except (UnicodeDecodeError, ValueError) as e:
        raise BadFile("unreadable header") from e
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise BadFile("another format")
    if header.get("byteorder") != sys.byteorder:
        raise BadFile("another byte order")
    if header.get("stamp") != stamp:
        raise BadFile("made for another graph version")
    return header


def _map(f: Any, stamp: dict[str, Any]) -> Frozen:
    """The snapshot as views of the file mapped read-only: its pages are the page cache's, read when a query
    touches them and given back by the kernel under pressure, not the daemon's own memory (the kernel's 940 MB
    snapshot was 940 MB of anonymous memory once read; a query touches a few of its pages). The CRC is checked
    over the whole mapping first, then its pages are dropped from this process (`MADV_DONTNEED`: the next read
    faults them back from the page cache). Safe while the file stays as it is: the daemon never writes a saved
    file in place (a new one is written beside it and renamed over it, and the mapping keeps the old one), and
    the data directory is the user's own (0700)."""
    import mmap

    header = _header(f, stamp)
    start = f.tell()
    try:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as e:  # (an empty file cannot be mapped; some file systems cannot map at all)
        raise _Unmappable(str(e)) from e
    whole = memoryview(mm)
    got: dict[str, Any] = {}
    crc, end = 0, 0
    try:
        for name, code, at, size, pad in _layout(header):
            lo, end = start + at, at + size + pad
            if start + end > len(whole):
                raise BadFile(f"array {name} runs past the end")
            data = whole[lo : lo + size]
            crc = zlib.crc32(whole[lo + size : start + end], zlib.crc32(data, crc))
            got[name] = data if code == "B" else data.cast(code)  # type: ignore[call-overload]
        if start + end != len(whole) or header.get("size") != end or header.get("crc32") != crc:
            raise BadFile("damaged (size or checksum)")
        fz = _frozen_from(got)
    except (KeyError, TypeError, ValueError, OverflowError, MemoryError) as e:
        raise BadFile(f"malformed: {e}") from e
    _check(fz)
    fz.mapping = mm
    fz.drop_pages()  # (read for the CRC: back to the page cache, out of this process)
    return fz


def _layout(header: dict[str, Any]) -> Iterator[tuple[str, str, int, int, int]]:
    """Each array the header lists: (name, type code, offset in the payload, bytes, padding bytes after it),
    checked to follow the one before and to have this platform's item size for its type code."""
    pos = 0
    for name, code, itemsize, count, at in header["arrays"]:
        if at != pos or count < 0:
            raise BadFile(f"array {name} out of place")
        if code != "B" and array(code).itemsize != itemsize:
            raise BadFile(f"array {name}: item size {itemsize}, here {array(code).itemsize}")
        size = count * itemsize
        pad = -size % 8
        yield name, code, pos, size, pad
        pos += size + pad


def _frozen_from(got: dict[str, Any]) -> Frozen:
    strings = Strings(got["s.blob"], got["s.off"], got["s.table"])
    syms = {name: got[f"sym.{name}"] for name in SYM_STR + SYM_INT}
    tables = {}
    for tname, (cols, single) in TABLES.items():
        tables[tname] = Table(got[f"{tname}.keys"], got[f"{tname}.skeys"], got[f"{tname}.srows"],
                              None if single else got[f"{tname}.off"], {c: got[f"{tname}.{c}"] for c in cols})  # fmt: skip
    return Frozen(strings, syms, tables, got["names"])


def _load(f: Any, stamp: dict[str, Any]) -> Frozen:
    header = _header(f, stamp)
    got: dict[str, Any] = {}
    crc, end = 0, 0
    try:
        for name, code, at, size, padding in _layout(header):
            buf: Any = bytearray(size) if code == "B" else array(code, bytes(size))
            view = memoryview(buf).cast("B")
            if f.readinto(view) != size:
                raise BadFile(f"array {name} runs past the end")
            crc = zlib.crc32(view, crc)
            pad = f.read(padding)
            if len(pad) != padding:
                raise BadFile(f"array {name} runs past the end")
            crc = zlib.crc32(pad, crc)
            view.release()
            end = at + size + padding
            got[name] = buf  # (the blob stays a bytearray: no second copy)
        if f.read(1) or header.get("size") != end or header.get("crc32") != crc:
            raise BadFile("damaged (size or checksum)")
        fz = _frozen_from(got)
    except (KeyError, TypeError, ValueError, OverflowError, MemoryError) as e:
        raise BadFile(f"malformed: {e}") from e
    _check(fz)
    return fz


def _check(fz: Frozen) -> None:
    """The arrays fit together (lengths, the string table's ends). Element values are not scanned (a pass over
    millions of entries would cost more than the whole load): every read is an index into a Python array, bounds
    checked, so a file that passed its checksum and still lies gives wrong answers or errors, never a read
    outside its arrays, and never runs anything."""
    nstr, n = len(fz.strings), fz.size
    off, table = fz.strings.off, fz.strings.table
    if not len(off) or off[0] != 0 or off[-1] != len(fz.strings.blob) or not len(table) or len(table) & (len(table) - 1):
        raise BadFile("string table")
    if len(table) < nstr:
        raise BadFile("string hash table too small")
    if any(len(a) != n for a in fz.syms.values()):
        raise BadFile("symbol columns of different lengths")
    for tname, t in fz.tables.items():
        rows = len(t.keys)
        if len(t.skeys) != rows or len(t.srows) != rows or (t.off is not None and len(t.off) != rows + 1):
            raise BadFile(f"table {tname}")
        if t.off is not None and (t.off[0] != 0 if rows else len(t.off) != 1):
            raise BadFile(f"table {tname} offsets")
        width = rows if t.off is None else t.off[-1]
        for cname, col in t.cols.items():
            if len(col) != width:
                raise BadFile(f"table {tname}.{cname}")


def stamp_of(repo_id: str, version: int, indexed_at: float | None) -> dict[str, Any]:
    """What a saved snapshot must match to be used: the repository, its graph version and when that version was
    written (a graph deleted and built again starts its versions over)."""
    return {"repo": repo_id, "version": version, "indexedAt": indexed_at}


