"""The C-family lookups follow an edit instead of being rebuilt for it, and what they hold is the same.

`CFamilyRules._refresh` rebuilt every whole-repository lookup (definitions, classes, include suffixes, holders of
each qualified name) on every change to the index: on the kernel's 78k files that was most of a one-file edit's
11-13 s to queryable. It now applies the files changed since its last refresh; this compares the result, after
random edits, adds and removals, with a rebuild from nothing, and the resolution of every file with a fresh index.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from nexusd.parse.extract import extract
from nexusd.resolve import RepoIndex
from nexusd.resolve.cfamily import CFamilyRules


def _source(n: int, version: int, rng: random.Random) -> tuple[str, str]:
    """A header and a .c/.cpp file defining and calling functions and classes shared with other files."""
    names = [f"fn_{(n + k) % 7}_{version % 3}" for k in range(3)] + [f"shared_{n % 4}"]
    header = "".join(f"int {name}(int x);\n" for name in names)
    body = [f'#include "inc/h{n % 5}.h"', f"#include <inc/h{(n + 1) % 5}.h>", ""]
    for name in names:
        callee = rng.choice(names)
        body += [f"int {name}(int x) {{ return x ? {callee}(x - 1) : 0; }}", ""]
    body += [f"struct Box{n % 3} {{ int v; }};", f"class Thing{n % 4} {{ public: int run(); }};",
             f"int Thing{n % 4}::run() {{ return {names[0]}(1); }}", ""]  # fmt: skip
    return header, "\n".join(body)


def _state(rules: CFamilyRules) -> dict[str, Any]:
    def keyed(lookup: dict[str, list[tuple[str, Any]]]) -> dict[str, list[tuple[str, str, int]]]:
        return {k: [(p, s.qualified_name, s.start_line) for p, s in v] for k, v in lookup.items()}

    return {
        "defs": keyed(rules._defs),
        "classes": keyed(rules._classes),
        "tails": {k: sorted(v) for k, v in keyed(rules._class_tail).items()},  # order unused (unique or none)
        "suffix": dict(rules._by_suffix),
        "qn_files": dict(rules._qn_files),
        "qn_sets": dict(rules._qn_sets),
    }


def _put(index: RepoIndex, root: Path, path: str, text: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)
    index.set_file(extract(path, text.encode()))


def test_c_lookups_follow_edits_and_equal_a_rebuild(tmp_path: Path) -> None:
    rng = random.Random(15)
    index = RepoIndex("t", tmp_path)
    live: dict[str, str] = {}
    for n in range(40):
        header, body = _source(n, 0, rng)
        ext = "cpp" if n % 3 == 0 else "c"
        for path, text in ((f"inc/h{n % 5}.h", header), (f"src/d{n % 6}/f{n}.{ext}", body)):
            _put(index, tmp_path, path, text)
            live[path] = text
    rules = index.rules["c"]
    assert isinstance(rules, CFamilyRules)
    rules._refresh()  # built whole once
    for round_no in range(60):
        for _ in range(rng.randint(1, 4)):
            path = rng.choice(sorted(live))
            action = rng.random()
            if action < 0.2 and path.startswith("src/"):
                index.remove_file(path)
                (tmp_path / path).unlink()
                del live[path]
            else:
                n = rng.randint(0, 60)
                header, body = _source(n, round_no + 1, rng)
                target = path if action < 0.7 else f"src/d{n % 6}/f{n}_{round_no}.c"
                text = header if target.endswith(".h") else body
                _put(index, tmp_path, target, text)
                live[target] = text
        followed = index.touched_since(rules._mark)
        assert followed is not None and 0 < len(followed) <= 8  # this round's changes only: the path followed
        rules._refresh()
        got = _state(rules)
        rules._rebuild()
        assert got == _state(rules), round_no
    fresh = RepoIndex("t", tmp_path)
    for path, text in live.items():
        fresh.set_file(extract(path, text.encode()))
    for path in sorted(live):
        a, b = index.resolve_file(path), fresh.resolve_file(path)
        assert sorted((c.src_id, c.dst_id, c.resolution) for c in a.calls) == sorted(
            (c.src_id, c.dst_id, c.resolution) for c in b.calls
        ), path
        assert sorted((e.dst_path, e.resolution) for e in a.imports) == sorted(
            (e.dst_path, e.resolution) for e in b.imports
        ), path


def test_prepare_builds_the_c_lookups_before_any_resolution(tmp_path: Path) -> None:
    # A table rebuilt after a restart in place prepares them (`RepoSync.warm`): the kernel's took ~6 s, which the
    # first edit waited for. A repository without C files builds none.
    rng = random.Random(16)
    index = RepoIndex("t", tmp_path)
    for n in range(12):
        header, body = _source(n, 0, rng)
        _put(index, tmp_path, f"inc/h{n % 5}.h", header)
        _put(index, tmp_path, f"src/f{n}.c", body)
    rules = index.rules["c"]
    assert isinstance(rules, CFamilyRules) and rules._generation == -1 and not rules._qn_files
    index.prepare()
    assert rules._generation == index.generation
    got = _state(rules)
    assert got["defs"] and got["qn_files"] and got["suffix"]
    rules._generation = -1
    rules._refresh()
    assert _state(rules) == got
    only_python = RepoIndex("p", tmp_path / "py")
    _put(only_python, tmp_path / "py", "app.py", "def run():\n    return 1\n")
    only_python.prepare()
    c_rules = only_python.rules["c"]
    assert isinstance(c_rules, CFamilyRules) and c_rules._generation == -1 and not c_rules._by_suffix


def _header(n: int, version: int, rng: random.Random) -> str:
    """Header n: includes a few other headers (which ones changes with the version), declares two functions."""
    others = sorted(rng.sample(range(14), 2))  # (h12.h and h13.h appear later: an include found at last)
    lines = [f'#include "h{k}.h"' if version % 2 else f"#include <inc/h{k}.h>" for k in others if k != n]
    return "\n".join([*lines, f"int decl_{n}_a(int x);", f"int decl_{n}_b(int x);", ""])


def _unit(n: int, rng: random.Random) -> str:
    """A .c file including one or two headers and calling functions declared anywhere (near or far)."""
    incs = "\n".join(f'#include "../inc/h{k}.h"' for k in sorted(rng.sample(range(12), rng.randint(1, 2))))
    calls = " + ".join(f"decl_{rng.randrange(12)}_{rng.choice('ab')}(x)" for _ in range(4))
    return f"{incs}\nint unit_{n}(int x) {{ return {calls}; }}\nint decl_{n % 12}_a(int x) {{ return x; }}\n"


def _resolved(index: RepoIndex, path: str) -> tuple[list[Any], list[Any], list[str]]:
    got = index.resolve_file(path)
    rules = index.rules["c"]
    assert isinstance(rules, CFamilyRules)
    return (
        sorted((c.src_id, c.dst_id, c.resolution, c.confidence) for c in got.calls),
        sorted((e.dst_path, e.resolution, e.confidence) for e in got.imports),
        rules.visible(path),
    )


def test_kept_include_closures_follow_edits_of_includes(tmp_path: Path) -> None:
    """Include closures and include answers are kept across edits that change no path (a kernel edit rebuilt
    ~400-file closures each time). An edit that changes a file's own `#include` lines must drop every kept
    closure through that file: after each round of random edits (include lines rewritten, calls changed, now and
    then a file added), every file resolves exactly as in an index built from nothing."""
    rng = random.Random(1515)
    index = RepoIndex("t", tmp_path)
    live: dict[str, str] = {}
    for n in range(12):
        live[f"inc/h{n}.h"] = _header(n, 0, rng)
    for n in range(16):
        live[f"src/u{n}.c"] = _unit(n, rng)
    for path, text in live.items():
        _put(index, tmp_path, path, text)
    rules = index.rules["c"]
    assert isinstance(rules, CFamilyRules)
    units = [p for p in live if p.endswith(".c")]
    for path in units:
        index.resolve_file(path)
    kept_after_edits = 0
    for round_no in range(40):
        added = rng.random() < 0.1
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.6:
                n = rng.randrange(12)
                path, text = f"inc/h{n}.h", _header(n, round_no + 1, rng)
            else:
                path = rng.choice(units)
                text = _unit(int(path[5:-2]), rng)
            _put(index, tmp_path, path, text)
            live[path] = text
        if added and "inc/h13.h" not in live:
            path = "inc/h12.h" if "inc/h12.h" not in live else "inc/h13.h"
            live[path] = _header(int(path[5:-2]), round_no, rng)
            _put(index, tmp_path, path, live[path])
        elif added:
            path = f"src/u{len(units)}.c"
            units.append(path)
            live[path] = _unit(len(units) - 1, rng)
            _put(index, tmp_path, path, live[path])
        kept_before = len(rules._kept)
        ours = {path: _resolved(index, path) for path in units}
        if not added and kept_before:
            rules._follow_kept()
            kept_after_edits += len(rules._kept) > 0
        fresh = RepoIndex("t", tmp_path)
        for path, text in live.items():
            fresh.set_file(extract(path, text.encode()))
        assert ours == {path: _resolved(fresh, path) for path in units}, round_no
    assert kept_after_edits > 0  # the kept answers were really used across content-only edits
