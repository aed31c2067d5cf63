"""Go: extraction details and resolution on small multi-package repositories written to tmp_path."""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.extract import extract
from nexusd.parse.facts import symbol_id
from tests.parse.test_resolve import Repo

FIXTURE = Path(__file__).parent / "fixtures" / "go" / "basics.go"


def test_go_details() -> None:
    facts = extract("pkg/basics.go", FIXTURE.read_bytes())
    by_qn = {s.qualified_name: s for s in facts.symbols}
    save = by_qn["Store.Save"]
    assert save.kind == "method" and save.parent == "Store"
    assert save.signature == "func (s *Store) Save(u User) error"
    assert save.doc == "Save saves."
    store = by_qn["Store"]
    assert store.kind == "struct" and store.doc == "Store keeps users."
    assert store.bases == ("Base", "log.Logger")  # embedded fields, pointer stripped
    assert store.signature == "type Store struct"
    assert by_qn["Saver"].bases == ("io.Reader",)
    assert not by_qn["Store.plain"].exported and by_qn["NewStore"].exported


FILES = {
    "go.mod": "module example.com/app\n\ngo 1.21\n",
    "store/store.go": (
        "package store\n\n"
        'import "database/sql"\n\n'
        "type Base struct{}\n\n"
        "func (b *Base) Touch() {}\n\n"
        "type Store struct {\n\tBase\n\tdb *sql.DB\n\tj  *Journal\n}\n\n"
        "func New() *Store { return &Store{j: newJournal()} }\n\n"
        "func (s *Store) Save(id string) {\n\ts.Touch()\n\ts.j.Record(id)\n\ts.db.Exec(id)\n\tcheck(id)\n}\n"
    ),
    "store/journal.go": (
        "package store\n\n"
        "type Journal struct{}\n\n"
        "func newJournal() *Journal { return &Journal{} }\n\n"
        "func (j *Journal) Record(id string) {}\n\n"
        "func check(id string) {}\n"
    ),
    "other/check.go": "package other\n\nfunc check(id string) {}\n\ntype T struct{}\n\nfunc (T) Unique() {}\n",
    "main.go": (
        "package main\n\n"
        'import (\n\t"fmt"\n\tdb "example.com/app/store"\n)\n\n'
        'func main() {\n\ts := db.New()\n\ts.Save("x")\n\tdb.New().Touch()\n'
        '\tfmt.Println(len("x"))\n\tmystery()\n\tvar v Thing\n\tv.Unique()\n'
        "\tfor _, it := range s.All() {\n\t\tit.Unique()\n\t}\n}\n"
    ),
}


def test_go_resolution(tmp_path: Path) -> None:
    repo = Repo(tmp_path, FILES)
    assert repo.imports("main.go") == {
        ("store/store.go", "import-bound"),
        ("store/journal.go", "import-bound"),
    }
    assert repo.calls("main.go") == {
        ("main", "go:function:store/store.go:New", "qualified"),  # through the import alias `db`
        ("main", "go:method:store/store.go:Store.Save", "receiver"),  # s := db.New(): New's result type
        ("main", "go:method:store/store.go:Base.Touch", "receiver"),  # promoted from the embedded Base
        ("main", "go:method:other/check.go:T.Unique", "name-only"),  # `it` is untyped: the one candidate
    }
    # `len` is a builtin; Thing is not in the repository, so v.Unique() is not guessed
    assert repo.unresolved("main.go") == ["fmt.Println", "mystery", "s.All", "v.Unique"]
    assert repo.calls("store/store.go") == {
        ("New", "go:function:store/journal.go:newJournal", "same-scope"),  # same package, other file
        ("Store.Save", "go:method:store/store.go:Base.Touch", "receiver"),
        ("Store.Save", "go:method:store/journal.go:Journal.Record", "receiver"),  # field j *Journal
        ("Store.Save", "go:function:store/journal.go:check", "same-scope"),  # not other/check.go
    }
    assert repo.unresolved("store/store.go") == ["s.db.Exec"]  # *sql.DB is outside the repository
    edges = {(e.resolution, e.confidence) for e in repo.index.resolve_file("main.go").calls}
    assert ("receiver", 0.9) in edges and ("qualified", 0.95) in edges
    assert all(c <= 0.35 for r, c in edges if r == "name-only")


def test_go_edits(tmp_path: Path) -> None:
    repo = Repo(tmp_path, FILES)
    # Rename a function: the callers in other files of the package re-resolve through files_referencing.
    text = FILES["store/journal.go"].replace("func check(", "func verify(")
    changed = repo.write("store/journal.go", text)
    assert {"check", "verify"} <= changed
    assert "store/store.go" in repo.index.files_referencing(changed)
    assert ("Store.Save", "go:function:store/journal.go:check", "same-scope") not in repo.calls(
        "store/store.go"
    )
    assert "check" in repo.unresolved("store/store.go")
    # Insert a line above a method: every symbol id stays the same.
    before = {
        symbol_id("test", "store/store.go", s.kind, s.qualified_name, s.occurrence)
        for s in extract("store/store.go", FILES["store/store.go"].encode()).symbols
    }
    shifted = FILES["store/store.go"].replace("package store\n", "package store\n\n// moved down\n", 1)
    assert repo.write("store/store.go", shifted) == set()
    after = {
        symbol_id("test", "store/store.go", s.kind, s.qualified_name, s.occurrence)
        for s in extract("store/store.go", shifted.encode()).symbols
    }
    assert before == after
    assert ("main", "go:method:store/store.go:Store.Save", "receiver") in repo.calls("main.go")
