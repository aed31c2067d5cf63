"""A symbol argument -> exactly one symbol, or a clear `ambiguous` / `not_found`: never a silent pick.

Accepted spellings, tried in this order: a symbol id, a semantic key (`py:method:pkg/app.py:Base.run`), a
qualified name (`Base.run`, or a dotted suffix of one), a bare name (`run`), optionally prefixed by a file
(`pkg/app.py:Base.run`). When several symbols fit, the error's `data.candidates` lists them ranked: exact
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
        hint="pass one candidate's id or key (or `path:QualifiedName`)",
        data={
            "candidates": [_candidate(snap, s) for s in ranked[:MAX_CANDIDATES]],
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


def _candidate(snap: Snapshot, sym: Sym) -> dict[str, Any]:
    row = sym.ref()
    row["qualifiedName"] = sym.qname
    if snap.is_test(sym.path):
        row["test"] = True
    return row
