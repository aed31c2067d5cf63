"""A Python file declaring its encoding (PEP 263) keeps its non-ASCII identifiers."""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.extract import extract, source_as_utf8
from tests.parse.test_resolve import Repo

LATIN1 = '# -*- coding: latin-1 -*-\ndef café_helper():\n    return "é"\n\n\ndef use():\n    return café_helper()\n'


def test_a_latin1_file_keeps_its_identifiers_and_lines() -> None:
    data = LATIN1.encode("latin-1")
    assert b"caf\xe9_helper" in data  # not UTF-8
    facts = extract("pkg/legacy.py", data)
    assert [(s.name, s.start_line, s.end_line) for s in facts.symbols[1:]] == [("café_helper", 2, 3), ("use", 6, 7)]
    assert [(c.caller, c.name, c.line) for c in facts.calls] == [("use", "café_helper", 7)]
    assert not facts.diagnostics


def test_only_a_declared_decodable_coding_is_applied() -> None:
    utf8 = LATIN1.replace("latin-1", "utf-8").encode()
    assert source_as_utf8(utf8) is utf8
    undeclared = "def café(): pass\n".encode()
    assert source_as_utf8(undeclared) is undeclared
    bogus = b"# coding: no-such-codec\ndef f(): pass\n"
    assert source_as_utf8(bogus) is bogus
    on_line_two = b"#!/usr/bin/env python\n# vim: set fileencoding=latin-1 :\nx = '\xe9'\n"
    assert source_as_utf8(on_line_two) == on_line_two.decode("latin-1").encode()


def test_calls_bind_across_files(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {"pkg/__init__.py": "", "pkg/use.py": "from pkg.legacy import café_helper\n\n\ndef go():\n    café_helper()\n"})
    facts = extract("pkg/legacy.py", LATIN1.encode("latin-1"))
    for sym in facts.symbols:
        repo.keys[repo.index.symbol_id("pkg/legacy.py", sym)] = f"py:{sym.kind}:pkg/legacy.py:{sym.qualified_name}"
    repo.index.set_file(facts)
    assert repo.calls("pkg/use.py") == {("go", "py:function:pkg/legacy.py:café_helper", "import-bound")}
