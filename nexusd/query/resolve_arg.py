"""A symbol argument -> exactly one symbol, or a clear `ambiguous` / `not_found`: never a silent pick.

Accepted spellings, tried in this order: a symbol id, a semantic key (`py:method:pkg/app.py:Base.run`), a
qualified name (`Base.run`, or a dotted suffix of one), a bare name (`run`), optionally prefixed by a file
(`pkg/app.py:Base.run`); then, when none of those matched, a module-qualified name as Python users write it:
`pkg.app.Base.run`, `pkg.app.main` or `pkg.app:Base.run` (the module is a file's path without its extension,
`/__init__` dropped, dots for slashes; it may be a dotted suffix of that, so `src/` layouts work). When several symbols fit, the error's `data.candidates` lists them ranked: exact
name (case included) first, then kind (class, function, method, ..., module), non-test files first, shorter
path, semantic key.
"""

from __future__ import annotations

from typing import Any

from ..errors import Ambiguous, NotFound
from .snapshot import Snapshot, Sym

MAX_CANDIDATES = 20


def resolve_symbol(snap: Snapshot, arg: str, *, what: str = "symbol") -> Sym:
    text = arg.strip()
    if not text:
        raise NotFound(f"empty {what} argument")
    sym = snap.by_id.get(text) or snap.by_key.get(text)
    if sym is not None:
        return sym
    path_part = None
    name_part = text
    if ":" in text:
        # pkg/app.py:Base.run — a file then a (qualified) name in it.
        path_part, name_part = text.rsplit(":", 1)
    if "." in name_part:
        candidates = _by_qualified(snap, name_part)
        how = "qualified name"
    else:
        # A bare name: every symbol of that name, top-level or member (case decides when it can).
        candidates = list(snap.live(snap.name_exact.get(name_part, ())))
        candidates = [s for s in candidates if s.name == name_part]
        if not candidates:
            low = name_part.lower()
            candidates = [s for s in snap.live(snap.name_lower.get(low, ())) if s.name.lower() == low]
        how = "name"
    if path_part is not None:
        candidates = [s for s in candidates if s.path == path_part.strip("/")]
        if not candidates and path_part.strip("/") not in snap.files:
            candidates = _in_module(snap, path_part.strip(), name_part)  # module:func
            how = "module and name"
    if not candidates and path_part is None and "." in name_part:
        candidates, how = _dotted(snap, name_part), "module-qualified name"
    if not candidates:
        raise NotFound(
            f"no {what} named {text!r}",
            hint="`nexus locate WORDS` searches by name, words and text; pass an id or key to be exact",
        )
    if len(candidates) > 1:
        # overload stubs stand behind their implementation: `parse` means the function, not its signatures
        implemented = {(s.path, s.qname) for s in candidates if s.kind != "overload"}
        candidates = [s for s in candidates if s.kind != "overload" or (s.path, s.qname) not in implemented]
    exact = {s.id for s in candidates if s.qname == name_part or s.name == name_part}
    if len(candidates) == 1:
        return candidates[0]
    ranked = sorted(candidates, key=lambda s: (s.id not in exact, *snap.rank_key(s)))
    raise Ambiguous(
        f"{len(candidates)} symbols match {text!r} by {how}",
        hint="pass one candidate's key, `path:QualifiedName` or `pkg.module.Qualified.name`",
        data={
            "candidates": _candidates(snap, ranked[:MAX_CANDIDATES]),
            "total": len(candidates),
        },
    )


def _by_qualified(snap: Snapshot, name: str) -> list[Sym]:
    low = name.lower()
    found = [s for s in snap.live(snap.qname_lower.get(low, ())) if s.qname.lower() == low]
    exact = [s for s in found if s.qname == name]
    if exact or found:
        return exact or found
    last = low.rsplit(".", 1)[1]
    return [s for s in snap.live(snap.name_lower.get(last, ())) if s.qname.lower().endswith("." + low)]


def module_of(path: str) -> str:
    """`pkg/app.py` -> `pkg.app`; `pkg/__init__.py` -> `pkg`; `src/lib/index.ts` -> `src.lib`."""
    stem = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    for tail in ("/__init__", "/index", "/mod"):
        if stem.endswith(tail):
            stem = stem[: -len(tail)]
            break
    return stem.replace("/", ".")


def _module_matches(path: str, module: str) -> bool:
    m = module_of(path)
    return m == module or m.endswith("." + module)


def _in_module(snap: Snapshot, module: str, qname: str) -> list[Sym]:
    """Symbols named `qname` (qualified, exact case first) in files whose module path ends with `module`."""
    if not module or "/" in module or not qname:
        return []
    low = qname.lower()
    found = [s for s in snap.live(snap.qname_lower.get(low, ())) if s.qname.lower() == low]
    exact = [s for s in found if s.qname == qname]
    return [s for s in (exact or found) if _module_matches(s.path, module)]


def _dotted(snap: Snapshot, text: str) -> list[Sym]:
    """`pkg.app.Base.run`: try every split into a module and a qualified name, longest name first; a bare
    module path (`pkg.app`) names the file's module symbol."""
    parts = text.split(".")
    for i in range(1, len(parts)):
        found = _in_module(snap, ".".join(parts[:i]), ".".join(parts[i:]))
        if found:
            return found
    modules = []
    for path in snap.by_file:  # (the paths only: a compacted snapshot makes a file's ids when they are read)
        if _module_matches(path, text):
            modules += [s for s in (snap.by_id.get(i) for i in snap.by_file[path]) if s is not None and s.kind == "module"]
    return modules


STUB_SUFFIXES = (".pyi", ".d.ts", ".d.mts", ".d.cts")


def _candidates(snap: Snapshot, syms: list[Sym]) -> list[dict[str, Any]]:
    """Candidate rows with their lines; `stub` marks a declaration without the implementation: a stub file
    (.pyi, .d.ts), or an overload of a name defined several times in one file that is not its longest body."""
    longest: dict[tuple[str, str], Sym] = {}
    count: dict[tuple[str, str], int] = {}
    for s in syms:
        k = (s.path, s.qname)
        count[k] = count.get(k, 0) + 1
        best = longest.get(k)
        if best is None or (s.end - s.start, s.start) > (best.end - best.start, best.start):
            longest[k] = s
    rows = []
    for s in syms:
        row = _candidate(snap, s)
        k = (s.path, s.qname)
        if s.path.endswith(STUB_SUFFIXES) or (count[k] > 1 and longest[k] is not s):
            row["stub"] = True
        rows.append(row)
    return rows


def _candidate(snap: Snapshot, sym: Sym) -> dict[str, Any]:
    row = sym.ref()
    row["qualifiedName"] = sym.qname
    row["endLine"] = sym.end
    if snap.is_test(sym.path):
        row["test"] = True
    return row
