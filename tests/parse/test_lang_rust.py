"""Rust: extraction details and resolution on a small Cargo workspace written to tmp_path."""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.extract import extract
from tests.parse.test_resolve import Repo

FIXTURE = Path(__file__).parent / "fixtures" / "rust" / "basics.rs"


def test_rust_details() -> None:
    facts = extract("src/basics.rs", FIXTURE.read_bytes())
    by_key = {(s.kind, s.qualified_name, s.occurrence): s for s in facts.symbols}
    shape = by_key[("trait", "Shape", 0)]
    assert shape.doc == "A shape. Second line." and shape.bases == ("Named",)
    assert by_key[("method", "Shape.area", 0)].signature == "fn area(&self) -> f64"
    assert by_key[("impl", "Circle", 1)].bases == ("Shape",)  # impl Shape for Circle
    assert by_key[("impl", "Circle", 0)].bases == ()
    new = by_key[("method", "Circle.new", 0)]
    assert new.doc == "Makes one." and new.exported and new.parent == "Circle"
    assert by_key[("struct", "Circle", 0)].exported  # #[derive] between doc and item is skipped
    assert not by_key[("function", "free", 0)].exported


FILES = {
    "Cargo.toml": '[workspace]\nmembers = ["core", "app"]\n',
    "core/Cargo.toml": '[package]\nname = "my-core"\nversion = "0.1.0"\n',
    "core/src/lib.rs": "pub mod shapes;\nmod util;\npub use util::helper;\n",
    "core/src/util.rs": "pub fn helper() -> u32 { 1 }\n",
    "core/src/shapes.rs": (
        "use crate::util;\n"
        "pub trait Shape {\n    fn area(&self) -> u32;\n"
        "    fn twice(&self) -> u32 { self.area() * 2 }\n}\n"
        "pub struct Square { side: u32 }\n"
        "impl Square {\n    pub fn new(side: u32) -> Self { Self::check(side); Square { side } }\n"
        "    fn check(side: u32) { util::helper(); }\n}\n"
        "impl Shape for Square {\n    fn area(&self) -> u32 { self.side * self.side }\n}\n"
    ),
    "app/Cargo.toml": '[package]\nname = "app"\nversion = "0.1.0"\n',
    "app/src/main.rs": (
        "use my_core::shapes::{Shape, Square};\n"
        "use my_core::helper;\n"
        "use std::fmt;\n"
        "fn main() {\n"
        "    let s = Square::new(2);\n"
        "    s.twice();\n"
        "    helper();\n"
        "    report(&s);\n"
        "    fmt::format(None);\n"
        "    Vec::<u8>::new();\n"
        "    missing();\n"
        "}\n"
        'fn report(sq: &Square) { println!("{}", sq.area()); }\n'
    ),
}


def test_rust_resolution(tmp_path: Path) -> None:
    repo = Repo(tmp_path, FILES)
    assert repo.imports("app/src/main.rs") == {
        ("core/src/shapes.rs", "import-bound"),
        ("core/src/lib.rs", "import-bound"),  # `use my_core::helper` names lib.rs's re-export
    }
    assert repo.imports("core/src/lib.rs") == {
        ("core/src/shapes.rs", "import-bound"),  # mod shapes;
        ("core/src/util.rs", "import-bound"),  # mod util; + pub use util::helper
    }
    assert repo.calls("app/src/main.rs") == {
        ("main", "rs:method:core/src/shapes.rs:Square.new", "qualified"),  # Type::f() across crates
        ("main", "rs:method:core/src/shapes.rs:Shape.twice", "receiver"),  # trait default, s typed by new()
        ("main", "rs:function:core/src/util.rs:helper", "import-bound"),  # through the pub use re-export
        ("main", "rs:function:app/src/main.rs:report", "same-scope"),
        ("report", "rs:method:core/src/shapes.rs:Square.area", "receiver"),  # inside println!, sq: &Square
    }
    assert repo.unresolved("app/src/main.rs") == ["fmt::format", "missing"]  # Vec::new dropped
    assert repo.calls("core/src/shapes.rs") == {
        ("Shape.twice", "rs:method:core/src/shapes.rs:Shape.area", "receiver"),
        ("Square.new", "rs:method:core/src/shapes.rs:Square.check", "receiver"),  # Self::check
        ("Square.check", "rs:function:core/src/util.rs:helper", "qualified"),  # util::helper
    }
    twice = [e for e in repo.index.resolve_file("app/src/main.rs").calls if e.resolution == "receiver"]
    assert sorted(e.confidence for e in twice) == [0.9, 0.95]  # trait default body is one step away


def test_rust_edits(tmp_path: Path) -> None:
    repo = Repo(tmp_path, FILES)
    changed = repo.write("core/src/util.rs", "pub fn helper2() -> u32 { 1 }\n")
    assert "helper" in changed
    assert {"core/src/shapes.rs", "app/src/main.rs", "core/src/lib.rs"} <= repo.index.files_referencing(
        changed
    )
    assert "helper" in repo.unresolved("app/src/main.rs")
    assert "util::helper" in repo.unresolved("core/src/shapes.rs")

    # A line inserted above keeps every id: the resolved edges are the same symbols.
    def ids() -> set[tuple[str, str]]:
        return {(e.src_id, e.dst_id) for e in repo.index.resolve_file("core/src/shapes.rs").calls}

    before = ids()
    assert repo.write("core/src/shapes.rs", "// header\n" + FILES["core/src/shapes.rs"]) == set()
    assert ids() == before and len(before) == 2
