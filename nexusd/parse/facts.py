"""The facts extraction produces and resolution consumes: plain data, no tree-sitter, no Kuzu.

A `FileFacts` is everything NEXUS learns from one file's bytes. It is a pure function of
(path, bytes, language), so it can be cached by content hash and recomputed at will.
Resolution turns the facts of a whole repository into edges with provenance.
"""

from __future__ import annotations

import hashlib
import marshal
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from itertools import starmap
from operator import attrgetter
from typing import Any, Generic, TypeVar, overload

from nexusd.parse.languages import LANGUAGES

DIGEST_SIZE = 16  # bytes of a content hash (`content_digest`; `content_hash` is its 32 hex digits)

# Roles a file can play; every file gets one, even when no symbols are extracted from it.
ROLES = ("source", "test", "document", "manifest", "configuration", "entry_point", "other")

# How an edge was established, from most to least certain. `confidence` travels beside it.
RESOLUTIONS = (
    "same-scope",  # defined in the enclosing scope or the same file
    "block-scope",  # the same, chosen by the block the call is in among same-named block-scoped bindings
    "import-bound",  # bound by an import whose target file is known
    "receiver",  # self.x / this.x / cls.x / super().x, through the class and its bases
    "constructor",  # new X() / X() where X is a class
    "inferred",  # a method on a receiver typed by the scope's type environment (see resolve/types.py)
    "qualified",  # pkg.mod.func through a module alias
    "name-only",  # heuristic: a same-name symbol somewhere in the repository
)


@dataclass(slots=True)
class SymbolFact:
    kind: str  # function | method | class | interface | type | enum | variable | module | namespace ...
    name: str
    qualified_name: str  # dotted within the file: "Class.method", "outer.inner"
    start_line: int  # 1-based, inclusive
    end_line: int
    signature: str = ""
    doc: str = ""
    parent: str | None = None  # qualified_name of the containing symbol, None at file level
    bases: tuple[str, ...] = ()  # for classes: base names as written (most symbols share the one empty tuple)
    exported: bool = True
    # (the hash of the symbol's own source text is its file's: `FileFacts.symbol_hash`)
    occurrence: int = 0  # 0 for the first symbol with this (kind, qualified_name) in the file, 1, 2... after
    # The lines (1-based, inclusive) of the block a block-scoped binding is visible in, when that block is
    # narrower than its container (TS/JS `const f = () => ...` inside a callback's body, which is at file level
    # by qualified name); else 0, 0
    scope_start: int = 0
    scope_end: int = 0


@dataclass(slots=True)
class ImportFact:
    specifier: str  # as written: "os.path", "./util", "@app/core", "..models"
    names: list[tuple[str, str]] = field(
        default_factory=list
    )  # (imported name, local alias); ("*","*") for star
    line: int = 0
    kind: str = "import"  # import | from | require | dynamic | reexport
    module_alias: str | None = None  # `import numpy as np` -> "np"; `import * as ns from` -> "ns"


@dataclass(slots=True)
class CallFact:
    caller: str | None  # qualified_name of the enclosing symbol, None for module level
    name: str  # the called name: "foo" for foo(), "bar" for a.b.bar()
    receiver: str | None = None  # "self", "this", "cls", "super", "a.b", or None for a bare call
    line: int = 0
    is_new: bool = False  # `new X()`
    # The receiver as a type expression (see TypeFact.expr) when `receiver` cannot say it: chains
    # (`a.b().c()` -> "a.b().c()"), casts (`(v as T)` -> "{T}"); None when `receiver` says it all.
    chain: str | None = None


@dataclass(slots=True)
class TypeFact:
    """One binding of a scope's type environment, as written; resolve/types.py evaluates it.

    `expr` is a small value language: a dotted name (`a.b`), a call of one (`make()`, `a.b().c()`: the
    arguments dropped), a declared type in braces (`{Foo}`, `{pkg.Foo}`: an annotation or a cast), or
    `?` (bound to something untyped: it shadows outer bindings and makes same-scope ones ambiguous).
    """

    kind: str  # var | field | return | property | shadow
    scope: str | None  # qualified name of the enclosing symbol where `expr` is evaluated; None = module
    name: str  # var/field/property: the bound name; return: ""; shadow: space-separated names
    expr: str = "?"


@dataclass(slots=True)
class Diagnostic:
    path: str
    severity: str  # error | warning | info
    code: str  # syntax-error, too-large, binary, timeout, extract-failed, ...
    message: str
    line: int = 0


@dataclass(slots=True)
class FileFacts:
    path: str  # repository-relative, forward slashes
    language: str  # python | javascript | typescript | tsx | ... | "" for unknown
    role: str
    hash: str
    line_count: int
    symbols: list[SymbolFact] = field(default_factory=list)
    imports: list[ImportFact] = field(default_factory=list)
    # What the engine keeps of these two is a `Packed` (one blob per file, records made on each read): they are
    # the bulk of a repository's facts and read only when their file is resolved. Extraction makes lists.
    calls: Sequence[CallFact] = field(default_factory=list)
    types: Sequence[TypeFact] = field(default_factory=list)  # the scopes' type environments, see TypeFact
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Exported name -> local name, only where they differ from "a top-level symbol exported under its own
    # name": ES `export default Foo` ("default" -> "Foo"), `export { a as b }` ("b" -> "a").
    exports: dict[str, str] = field(default_factory=dict)
    # The hash of each symbol's own source text (memory staleness), 16 bytes each in `symbols` order, b"" when
    # none was made: one bytes object per file instead of a 32-digit string per symbol (81 bytes each, ~8 % of
    # what the engine keeps of the facts).
    symbol_hashes: bytes = b""

    def symbol_hash(self, i: int) -> str:
        """The content hash of `symbols[i]` as 32 hex digits (`content_hash`'s form), "" when none was made."""
        return self.symbol_hashes[i * DIGEST_SIZE : (i + 1) * DIGEST_SIZE].hex()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle the per-symbol/call/... records as plain tuples: facts cross a process boundary (parser
        pool) and go to the facts cache per file, and default pickling of slotted dataclasses costs ~3x
        more (the standard library's facts: seconds of a cold index)."""
        state = {}
        for name in _FACTS_FIELDS:
            value = getattr(self, name)
            getter = _FLAT.get(name)
            state[name] = list(_record_rows(value, getter[1])) if getter is not None else value
        return _restore_facts, (state,)


def _getter(cls: type) -> attrgetter[Any]:
    return attrgetter(*(f.name for f in fields(cls)))


_FACTS_FIELDS = tuple(f.name for f in fields(FileFacts))
# list field -> (record class, its fields as a tuple in declaration order: `cls(*t)` rebuilds it)
_FLAT: dict[str, tuple[type, attrgetter[Any]]] = {
    name: (cls, _getter(cls))
    for name, cls in (
        ("symbols", SymbolFact),
        ("imports", ImportFact),
        ("calls", CallFact),
        ("types", TypeFact),
        ("diagnostics", Diagnostic),
    )
}


R = TypeVar("R")  # CallFact, TypeFact; resolution's CallEdge (resolve/base.py)
# A blob this long or longer is deflated. A marshal blob of rows starts with a tuple's type code ("(" or ")",
# maybe with marshal's reference flag), a zlib stream with 0x78 ("x"): the first byte says which one it is.
_DEFLATE_FROM = 96
_DEFLATED = b"x"


class Packed(Sequence[R], Generic[R]):
    """A file's call sites or type facts as the engine keeps them: their field tuples in one `marshal` blob,
    deflated (zlib, level 1) when it is not tiny, a record made for each on every read (`CallFact(*row)`). These
    are most of a repository's records (the standard library: 330,000 calls and 153,000 type facts, ~49 MB as
    objects, ~14.5 MB as marshal blobs, ~4 MB deflated) and they are read only when their own file is indexed or
    resolved, where inflating them all costs ~0.05 s. Read-only: code that changes facts gives the field a new
    list (`intern_facts` packs it again).

    The blob never leaves the process that made it or a parser process of the same interpreter (marshal's
    format is the interpreter's own): the facts cache on disk is JSON (`facts_to_plain`)."""

    __slots__ = ("_cls", "_blob", "_len")

    def __init__(self, cls: type[R], blob: bytes, length: int) -> None:
        self._cls: type[R] = cls
        self._blob = blob
        self._len = length

    @classmethod
    def of(cls, record: type[R], items: Sequence[R]) -> Packed[R]:
        return cls.from_rows(record, _record_rows(items, _ROW_OF[record]))

    @classmethod
    def from_rows(cls, record: type[R], rows: tuple[tuple[Any, ...], ...]) -> Packed[R]:
        blob = marshal.dumps(rows)
        if len(blob) >= _DEFLATE_FROM:
            blob = zlib.compress(blob, 1)
        return cls(record, blob, len(rows))

    def rows(self) -> tuple[tuple[Any, ...], ...]:
        """The field tuples, in declaration order (what `facts_to_plain` writes)."""
        blob = self._blob
        if blob[:1] == _DEFLATED:
            blob = zlib.decompress(blob)
        rows: tuple[tuple[Any, ...], ...] = marshal.loads(blob)
        return rows

    @property
    def blob(self) -> bytes:
        return self._blob

    def __iter__(self) -> Iterator[R]:
        return starmap(self._cls, self.rows())

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> R: ...
    @overload
    def __getitem__(self, i: slice) -> list[R]: ...
    def __getitem__(self, i: int | slice) -> R | list[R]:
        rows = self.rows()
        if isinstance(i, slice):
            return [self._cls(*row) for row in rows[i]]
        return self._cls(*rows[i])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Packed):
            return self._cls is other._cls and self._blob == other._blob or list(self) == list(other)
        if isinstance(other, list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Packed({self._cls.__name__}, {self._len} records, {len(self._blob)} bytes)"


_ROW_OF: dict[type, attrgetter[Any]] = {cls: getter for cls, getter in _FLAT.values()}


def _record_rows(items: Sequence[Any], row: attrgetter[Any]) -> tuple[tuple[Any, ...], ...]:
    """The field tuples of a list of records (`row` is the record class's getter), or of a `Packed` as stored."""
    return items.rows() if isinstance(items, Packed) else tuple(map(row, items))


def pack_facts(facts: FileFacts) -> FileFacts:
    """Give `facts` its calls and type facts as `Packed` (what the engine keeps); already packed ones stay."""
    if not isinstance(facts.calls, Packed):
        facts.calls = Packed.of(CallFact, facts.calls)
    if not isinstance(facts.types, Packed):
        facts.types = Packed.of(TypeFact, facts.types)
    return facts


def _restore_facts(state: dict[str, Any]) -> FileFacts:
    for name, (cls, _) in _FLAT.items():
        if name in state:
            state[name] = [cls(*t) for t in state[name]]
    return FileFacts(**state)


def content_hash(data: bytes) -> str:
    return content_digest(data).hex()


def content_digest(data: bytes) -> bytes:
    """`content_hash` as its 16 bytes (`FileFacts.symbol_hashes`)."""
    return hashlib.blake2b(data, digest_size=DIGEST_SIZE).digest()


def symbol_id(repo_id: str, path: str, kind: str, qualified_name: str, occurrence: int) -> str:
    """Stable id: never the line, so an edit above a symbol keeps its id (and the memory attached to it)."""
    key = f"{repo_id}\0{path}\0{kind}\0{qualified_name}\0{occurrence}"
    return hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


def file_id(repo_id: str, path: str) -> str:
    return hashlib.blake2b(
        f"{repo_id}\0{path}".encode("utf-8", "surrogateescape"), digest_size=12
    ).hexdigest()


LANG_PREFIX = {lang.name: lang.key_prefix for lang in LANGUAGES}


def semantic_key(language: str, kind: str, path: str, qualified_name: str, occurrence: int = 0) -> str:
    """Readable key beside the id, e.g. `py:method:src/pkg/mod.py:Class.method`."""
    key = f"{LANG_PREFIX.get(language, language or 'file')}:{kind}:{path}:{qualified_name}"
    return key if occurrence == 0 else f"{key}#{occurrence}"


# -- plain encoding (the facts cache) ----------------------------------------------------------------------
# Facts as nested JSON arrays: a format that can only ever decode to data (the cache directory is writable by
# anything running as the user; a pickle there would run code in the daemon). `facts_from_plain` checks every
# field's type and raises ValueError on anything else, so a damaged or forged entry is just a cache miss.


def facts_to_plain(f: FileFacts) -> list[Any]:
    """A file's facts as nested arrays, each record's fields in declaration order (`facts_from_plain` reads them
    back). Records are tuples made by `attrgetter`, which JSON writes as the same arrays as lists, at a fraction
    of the cost of building a list per record (~0.7 CPU-s per 600 standard-library files before)."""
    return [
        f.path, f.language, f.role, f.hash, f.line_count,
        list(map(_SYMBOL_ROW, f.symbols)), list(map(_IMPORT_ROW, f.imports)), list(_record_rows(f.calls, _CALL_ROW)),
        list(_record_rows(f.types, _TYPE_ROW)), list(map(_DIAG_ROW, f.diagnostics)), dict(f.exports),
        f.symbol_hashes.hex(),
    ]  # fmt: skip


_SYMBOL_ROW, _IMPORT_ROW, _CALL_ROW, _TYPE_ROW, _DIAG_ROW = (
    _FLAT[name][1] for name in ("symbols", "imports", "calls", "types", "diagnostics")
)


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError("expected a string")
    return v


def _opt(v: Any) -> str | None:
    return None if v is None else _str(v)


def _int(v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError("expected an integer")
    return v


def _list(v: Any) -> list[Any]:
    if not isinstance(v, list | tuple):  # JSON gives lists; `facts_to_plain` itself makes tuples
        raise ValueError("expected a list")
    return v  # type: ignore[return-value]


def _symbols(items: Any) -> list[SymbolFact]:
    """Symbol rows as `SymbolFact`s, each field checked (written out, as `_call_rows`)."""
    out = []
    for k, n, q, a, b, sig, doc, par, bs, ex, occ, ss, se in map(_list, _list(items)):
        bases = tuple(_list(bs))
        if (type(k) is not str or type(n) is not str or type(q) is not str or type(a) is not int
                or type(b) is not int or type(sig) is not str or type(doc) is not str
                or (par is not None and type(par) is not str) or type(ex) is not bool
                or type(occ) is not int or type(ss) is not int or type(se) is not int
                or any(type(x) is not str for x in bases)):  # fmt: skip
            raise ValueError("not a symbol row")
        out.append(SymbolFact(k, n, q, a, b, sig, doc, par, bases, ex, occ, ss, se))
    return out


def _call_rows(items: Any) -> tuple[tuple[Any, ...], ...]:
    """Call rows as `CallFact`'s fields, each checked. The checks are written out rather than made by `_str` and
    the like: a restarted daemon reads ~330,000 of them for the standard library, and a call per field cost
    0.26 s of its first edit, against 0.09 s."""
    rows = tuple(map(tuple, _list(items)))
    for caller, name, receiver, line, is_new, chain in rows:
        if (type(name) is not str or type(line) is not int or type(is_new) is not bool
                or (caller is not None and type(caller) is not str) or (receiver is not None and type(receiver) is not str)
                or (chain is not None and type(chain) is not str)):  # fmt: skip
            raise ValueError("not a call row")
    return rows


def _type_rows(items: Any) -> tuple[tuple[Any, ...], ...]:
    """Type fact rows as `TypeFact`'s fields, each checked (written out, as `_call_rows`)."""
    rows = tuple(map(tuple, _list(items)))
    for kind, scope, name, expr in rows:
        if (type(kind) is not str or type(name) is not str or type(expr) is not str
                or (scope is not None and type(scope) is not str)):  # fmt: skip
            raise ValueError("not a type fact row")
    return rows


def facts_from_plain(data: Any) -> FileFacts:
    try:
        path, language, role, digest, lines, symbols, imports, calls, types, diags, exports, hashes = _list(data)
        if not isinstance(exports, dict):
            raise ValueError("expected a map of exports")
        rows = _symbols(symbols)
        hashed = bytes.fromhex(_str(hashes))
        if hashed and len(hashed) != DIGEST_SIZE * len(rows):
            raise ValueError("not a hash per symbol")
        return FileFacts(
            path=_str(path), language=_str(language), role=_str(role), hash=_str(digest), line_count=_int(lines),
            symbols=rows,
            imports=[
                ImportFact(specifier=_str(sp), names=[(_str(x), _str(y)) for x, y in map(_list, _list(names))],
                           line=_int(ln), kind=_str(kd), module_alias=_opt(al))
                for sp, names, ln, kd, al in map(_list, _list(imports))
            ],
            # (packed as checked: rows in CallFact's and TypeFact's field order)
            calls=Packed.from_rows(CallFact, _call_rows(calls)),
            types=Packed.from_rows(TypeFact, _type_rows(types)),
            diagnostics=[
                Diagnostic(path=_str(p), severity=_str(sv), code=_str(cd), message=_str(msg), line=_int(ln))
                for p, sv, cd, msg, ln in map(_list, _list(diags))
            ],
            exports={_str(k): _str(v) for k, v in exports.items()},
            symbol_hashes=hashed,
        )  # fmt: skip
    except (TypeError, ValueError) as exc:  # wrong arity unpacks raise ValueError/TypeError too
        raise ValueError(f"not a facts record: {exc}") from None
