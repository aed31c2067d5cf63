"""C and C++: extraction details and resolution on small repositories with header/source splits."""

from __future__ import annotations

import json
from pathlib import Path

from nexusd.parse.extract import extract
from tests.parse.test_resolve import Repo

FIXTURES = Path(__file__).parent / "fixtures"


def test_c_details() -> None:
    facts = extract("src/basics.c", (FIXTURES / "c" / "basics.c").read_bytes())
    by_qn = {s.qualified_name: s for s in facts.symbols}
    assert by_qn["add"].doc == "Adds two numbers." and not by_qn["add"].exported  # static
    assert by_qn["add"].signature == "static int add(int a, int b)"
    assert by_qn["make_name"].kind == "declaration"
    assert by_qn["make_name"].doc == "Builds a name. Second line."
    assert by_qn["make_name"].signature == "char *make_name(const char *s)"


def test_cpp_details() -> None:
    facts = extract("src/basics.cpp", (FIXTURES / "cpp" / "basics.cpp").read_bytes())
    by_key = {(s.kind, s.qualified_name): s for s in facts.symbols}
    circle = by_key[("class", "geo.Circle")]
    assert circle.bases == ("Shape", "Named") and circle.doc == "A shape."
    area = by_key[("method", "geo.Circle.area")]  # `double Circle::area()` inside namespace geo
    assert area.parent == "geo.Circle" and area.doc == "Defined outside the class."
    assert by_key[("method", "geo.Circle.unit")].parent == "geo.Circle"  # geo::Circle::unit at file level
    assert by_key[("declaration", "geo.Circle.area")].signature == "double area() const override"


DECLARATOR_SHAPES = b"""int plain(int x) { return x; }
int *ptr(void) { return 0; }
char **ptr_ptr(void) { return 0; }
int ***too_deep(void);
int one(int), two(int);
void ns::C::out_of_line() const {}
int &a::b::Deep::ref_member();
int w::a::b::c::too_qualified();
struct S {
    int &ref_field();
    void (*callback)(int);
    static S *make();
};
void takes(int fn(int));
int (*returns_fn(void))(int);
"""


def test_cpp_function_declarator_shapes() -> None:
    # cpp.scm finds a function's name from its function_declarator (one pattern per name shape) and the hooks
    # walk up to what it declares; these are the shapes the 48 spelled-out patterns took, and those they did not.
    facts = extract("src/shapes.cpp", DECLARATOR_SHAPES)
    got = {(s.kind, s.qualified_name, s.start_line) for s in facts.symbols if s.kind != "module"}
    assert got == {
        ("function", "plain", 1),
        ("function", "ptr", 2),
        ("function", "ptr_ptr", 3),
        ("declaration", "one", 5),  # (the second declarator of one declaration: its node is the first's)
        ("method", "ns.C.out_of_line", 6),
        ("declaration", "a.b.Deep.ref_member", 7),
        ("struct", "S", 9),
        ("declaration", "S.ref_field", 10),
        ("declaration", "S.make", 12),
        ("declaration", "takes", 14),  # (not its parameter `fn`)
    }, got
    # Not definitions: a third pointer, four scopes, a function pointer field, a parameter declared as a function,
    # a function returning a function pointer (its declarator is parenthesized): as the patterns before.


C_FILES = {
    "compile_commands.json": json.dumps(
        [{"directory": ".", "file": "src/app.c", "command": "cc -Iinclude -c src/app.c"}]
    ),
    "include/lib/math.h": "/** Adds. */\nint add(int a, int b);\nint twice(int a);\n#define SQ(x) ((x) * (x))\n",
    "src/math.c": '#include "lib/math.h"\nint add(int a, int b) { return a + b; }\nint twice(int a) { return add(a, a); }\n',
    "other/math.c": "int twice(int a) { return a * 2; }\n",
    "src/app.c": (
        '#include <stdio.h>\n#include <lib/math.h>\n#include "local.h"\n'
        "static int local(int v) { return v; }\n"
        'int main(void) {\n    printf("%d", add(1, 2));\n    twice(SQ(3));\n    local(1);\n'
        "    undeclared();\n    return 0;\n}\n"
    ),
    "src/local.h": "void noop(void);\n",
}


def test_c_resolution(tmp_path: Path) -> None:
    repo = Repo(tmp_path, C_FILES)
    assert repo.imports("src/app.c") == {
        ("include/lib/math.h", "import-bound"),  # <lib/math.h> through -Iinclude
        ("src/local.h", "import-bound"),  # "local.h" next to the including file
    }
    assert repo.calls("src/app.c") == {
        ("main", "c:function:src/math.c:add", "import-bound"),  # header declaration -> definition
        # two definitions of twice: the one whose file matches the header's stem, at lower confidence
        ("main", "c:function:src/math.c:twice", "import-bound"),
        ("main", "cpp:macro:include/lib/math.h:SQ", "import-bound"),
        ("main", "c:function:src/app.c:local", "same-scope"),
    }
    assert repo.unresolved("src/app.c") == ["undeclared"]  # printf is libc
    edges = {repo.keys[e.dst_id]: e.confidence for e in repo.index.resolve_file("src/app.c").calls}
    assert edges["c:function:src/math.c:add"] == 1.0 and edges["c:function:src/math.c:twice"] < 1.0
    assert repo.calls("src/math.c") == {("twice", "c:function:src/math.c:add", "same-scope")}


CPP_FILES = {
    "include/shape.hpp": (
        "#pragma once\nnamespace geo {\nclass Logger { public: void write(const char* s); };\n"
        "class Shape {\npublic:\n    virtual double area() const = 0;\n    double twice() const;\n"
        "    static Shape* make();\nprotected:\n    Logger log_;\n};\n"
        "class Square : public Shape {\npublic:\n    double area() const override;\n};\n}\n"
    ),
    "src/shape.cpp": (
        '#include "shape.hpp"\nnamespace geo {\n'
        "void Logger::write(const char* s) {}\n"
        'double Shape::twice() const { log_.write("x"); return 2 * area(); }\n'
        "Shape* Shape::make() { return new Square(); }\n"
        'double Square::area() const { this->log_.write("a"); return twice(); }\n}\n'
    ),
    "app/main.cpp": (
        '#include "../include/shape.hpp"\n#include <memory>\n'
        "int main() {\n    geo::Shape* s = geo::Shape::make();\n    s->twice();\n"
        "    geo::Square sq;\n    sq.area();\n    std::make_unique<int>(1);\n    unknown->frob();\n}\n"
    ),
}


def test_cpp_resolution(tmp_path: Path) -> None:
    repo = Repo(tmp_path, CPP_FILES)
    assert repo.imports("app/main.cpp") == {("include/shape.hpp", "import-bound")}
    assert repo.imports("src/shape.cpp") == {("include/shape.hpp", "import-bound")}  # via include/ dir
    assert repo.calls("src/shape.cpp") == {
        ("geo.Shape.twice", "cpp:method:src/shape.cpp:geo.Logger.write", "receiver"),  # member field
        ("geo.Shape.twice", "cpp:declaration:include/shape.hpp:geo.Shape.area", "receiver"),  # pure virtual
        ("geo.Shape.make", "cpp:class:include/shape.hpp:geo.Square", "constructor"),
        ("geo.Square.area", "cpp:method:src/shape.cpp:geo.Logger.write", "receiver"),  # this->log_
        ("geo.Square.area", "cpp:method:src/shape.cpp:geo.Shape.twice", "receiver"),  # inherited
    }
    assert repo.calls("app/main.cpp") == {
        ("main", "cpp:method:src/shape.cpp:geo.Shape.make", "qualified"),
        ("main", "cpp:method:src/shape.cpp:geo.Shape.twice", "receiver"),
        ("main", "cpp:method:src/shape.cpp:geo.Square.area", "receiver"),
    }
    assert repo.unresolved("app/main.cpp") == ["std::make_unique", "unknown.frob"]


def test_c_edits(tmp_path: Path) -> None:
    repo = Repo(tmp_path, C_FILES)
    # Rename the definition: the caller (which includes only the header) re-resolves to the declaration.
    changed = repo.write("src/math.c", C_FILES["src/math.c"].replace("int add(", "int plus("))
    assert "add" in changed and "src/app.c" in repo.index.files_referencing(changed)
    assert ("main", "cpp:declaration:include/lib/math.h:add", "import-bound") in repo.calls("src/app.c")

    def ids() -> set[tuple[str, str]]:
        return {(e.src_id, e.dst_id) for e in repo.index.resolve_file("src/app.c").calls}

    before = ids()
    assert repo.write("src/app.c", "/* header */\n" + C_FILES["src/app.c"]) == set()
    assert ids() == before
