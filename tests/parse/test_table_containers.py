"""The symbol table's per-name containers (`RepoIndex.definers`, `referencers`) answer the same whatever form they
take: a name defined or referenced by one file, by a few (flat list, tuple) and by more than `REF_TUPLE_MAX` (a
set), as files come, change and go (ARCHITECTURE.md, "Memory of the code graph")."""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.extract import extract
from nexusd.resolve import RepoIndex
from nexusd.resolve.base import REF_TUPLE_MAX


def _caller(i: int, calls: bool = True) -> bytes:
    body = "    return shared()\n" if calls else "    return 1\n"
    return f"def shared():\n    return {i}\n\n\ndef use_{i}():\n{body}".encode()


def test_definers_and_referencers_follow_every_change(tmp_path: Path) -> None:
    index = RepoIndex("t", tmp_path)
    n = REF_TUPLE_MAX + 4
    paths = [f"m{i:02d}.py" for i in range(n)]
    order: list[str] = []  # the files defining it, in the order they were (last) indexed
    calling: set[str] = set()

    def put(i: int, calls: bool = True) -> None:
        index.set_file(extract(paths[i], _caller(i, calls)))
        if paths[i] in order:
            order.remove(paths[i])
        order.append(paths[i])
        (calling.add if calls else calling.discard)(paths[i])

    def check() -> None:
        assert index.files_referencing({"shared"}) == calling
        definers = index.definers_of("shared")
        assert [p for p, _ in definers] == order
        assert all(sym.name == "shared" and sym.kind == "function" for _, sym in definers)
        held = index.referencers.get("shared")
        if len(calling) > REF_TUPLE_MAX:
            assert isinstance(held, set)
        elif len(calling) > 1:
            assert isinstance(held, tuple) and len(held) == len(calling)
        else:
            assert held == (next(iter(calling)) if calling else None)

    for i in range(n):  # one referencing file, then a tuple of them, then a set
        put(i)
        check()
    for i in (3, 7, 11, 15):  # edits that stop calling it: back from a set to a tuple
        put(i, calls=False)
        check()
    put(7)  # and one calls it again
    check()
    for path in list(order):  # removals down to none
        index.remove_file(path)
        order.remove(path)
        calling.discard(path)
        check()
    assert "shared" not in index.definers and "shared" not in index.referencers
