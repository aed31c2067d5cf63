"""Extraction: data-driven fixtures per language, plus inputs that must never make `extract` raise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexusd.parse.extract import extract, supported_languages
from nexusd.parse.facts import FileFacts, content_hash

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted(
    p
    for p in FIXTURES.glob("*/*")
    if not p.parent.name.startswith(".") and not p.name.endswith(".expected.json")
)


def summarize(facts: FileFacts) -> dict[str, object]:
    """The compared view of facts: the same shape as the `<case>.expected.json` files."""
    return {
        "language": facts.language,
        "symbols": [[s.kind, s.qualified_name, s.start_line, s.end_line] for s in facts.symbols],
        "imports": [
            [i.kind, i.specifier, [list(n) for n in i.names], i.module_alias, i.line] for i in facts.imports
        ],
        "calls": [[c.caller, c.receiver, c.name, c.line, c.is_new] for c in facts.calls],
        "exports": facts.exports,
        "diagnostics": [d.code for d in facts.diagnostics],
    }


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture(case: Path) -> None:
    expected = json.loads(case.with_name(case.stem + ".expected.json").read_text())
    assert summarize(extract(case.name, case.read_bytes())) == expected


def test_every_parsed_language_has_a_fixture() -> None:
    assert {p.parent.name for p in CASES} == set(supported_languages())


def test_python_details() -> None:
    facts = extract("pkg/basics.py", (FIXTURES / "python" / "basics.py").read_bytes())
    by_qn = {(s.qualified_name, s.occurrence): s for s in facts.symbols}
    top = by_qn[("top", 0)]
    assert top.signature == "def top(a, b=1)"
    assert top.doc == "Top doc."
    thing = by_qn[("Thing", 0)]
    assert thing.bases == ("B",)  # metaclass keyword dropped
    assert thing.doc == "A thing."
    assert by_qn[("Thing.run", 1)].occurrence == 1  # redefinition counted, not merged
    assert by_qn[("Thing.run.inner", 0)].parent == "Thing.run"
    assert facts.symbols[0].qualified_name == "<module>" and facts.symbols[0].kind == "module"
    # Each symbol's content hash is its own text's; the module symbol's is the file's.
    lines = (FIXTURES / "python" / "basics.py").read_bytes().split(b"\n")
    hashes = {s.qualified_name: facts.symbol_hash(i) for i, s in enumerate(facts.symbols) if s.occurrence == 0}
    assert hashes["<module>"] == facts.hash
    assert hashes["top"] == content_hash(b"\n".join(lines[top.start_line - 1 : top.end_line]))
    assert len(facts.symbol_hashes) == 16 * len(facts.symbols) and len(set(hashes.values())) == len(hashes)


def test_ecmascript_details() -> None:
    facts = extract("src/module.js", (FIXTURES / "javascript" / "module.js").read_bytes())
    add = next(s for s in facts.symbols if s.name == "add")
    assert add.doc == "Adds."
    assert add.signature == "function add(x, y)"
    counter = next(s for s in facts.symbols if s.name == "Counter")
    assert counter.bases == ("Base",) and counter.exported
    ts = extract("types.ts", (FIXTURES / "typescript" / "types.ts").read_bytes())
    shape = next(s for s in ts.symbols if s.name == "Shape")
    assert shape.bases == ("Base", "Other")
    # two overload signatures, then the implementation: the signatures are `overload` symbols
    assert [(s.kind, s.occurrence) for s in ts.symbols if s.name == "parse"] == [
        ("overload", 0), ("overload", 1), ("function", 0),
    ]  # fmt: skip


def test_signature_and_doc_are_bounded() -> None:
    params = ", ".join(f"p{i}" for i in range(200))
    src = f'def f({params}):\n    """{"word " * 400}"""\n'.encode()
    sym = extract("a.py", src).symbols[1]
    assert len(sym.signature) <= 200 and len(sym.doc) <= 500


@pytest.mark.parametrize(
    "path,data",
    [
        ("empty.py", b""),
        ("empty.ts", b""),
        ("garbage.py", bytes(range(256)) * 40),
        ("garbage.js", b"\xff\xfe\x00\x01" * 1000),
        ("latin1.py", "def caf\xe9():\n    return '\xe9'\n".encode("latin-1")),
        ("deep.py", b"x = " + b"(" * 10_000 + b"1" + b")" * 10_000 + b"\n"),
        ("deep_open.ts", b"f(" * 10_000),
        (
            "nested.py",
            b"".join(b"    " * i + b"def f%d():\n" % i for i in range(300)) + b"    " * 300 + b"pass\n",
        ),
        ("weird.tsx", b"<<<<>>>> export class { ( } ] "),
        ("crlf.py", b"def f():\r\n    return g()\r\n"),
    ],
)
def test_never_raises(path: str, data: bytes) -> None:
    facts = extract(path, data)
    assert facts.path == path
    assert all(d.code in {"syntax-error", "binary", "too-large"} for d in facts.diagnostics)


def test_internal_failure_becomes_a_diagnostic(monkeypatch: pytest.MonkeyPatch) -> None:
    from nexusd.parse import extract as mod

    def boom(*_args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(mod, "_build_symbols", boom)
    facts = mod.extract("a.py", b"def f():\n    pass\n")
    assert [d.code for d in facts.diagnostics] == ["extract-failed"]
    assert facts.symbols == [] and facts.calls == []


def test_unparsed_languages_get_file_facts_only() -> None:
    facts = extract("docs/guide.md", b"# Title\n\ntext\n")
    assert facts.language == "markdown" and facts.role == "document"
    assert facts.symbols == [] and facts.line_count == 3
    kt = extract("src/Main.kt", b"fun main() {}\n")
    assert kt.language == "kotlin" and kt.symbols == []
