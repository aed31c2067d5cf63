"""Java: extraction details the fixture does not show, and resolution on small repositories in tmp_path."""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.extract import extract
from tests.parse.test_resolve import Repo

FIXTURE = Path(__file__).parent / "fixtures" / "java" / "Basics.java"


def test_java_details() -> None:
    facts = extract("src/com/acme/app/Shape.java", FIXTURE.read_bytes())
    by_qn = {(s.qualified_name, s.occurrence): s for s in facts.symbols}
    shape = by_qn[("Shape", 0)]
    assert shape.doc == "A shape."
    assert shape.signature.startswith("public class Shape<T> extends Base<T>")  # annotation dropped
    assert shape.bases == ("Base", "Runnable", "Comparable")
    ctor = by_qn[("Shape.Shape", 0)]
    assert ctor.doc == "Makes one." and ctor.signature == "public Shape(Repo repo)"
    assert by_qn[("Shape.Shape", 1)].occurrence == 1  # overloads are counted, not merged
    assert not by_qn[("Shape.draw", 0)].exported  # private
    assert by_qn[("Shape.Visitor.leave", 0)].signature == "void leave()"
    assert facts.role == "source"


JAVA = {
    "src/main/java/com/acme/model/Entity.java": (
        "package com.acme.model;\n"
        "public abstract class Entity {\n"
        "    protected Entity(String id) {}\n"
        "    public String getId() { return label(); }\n"
        "    protected abstract String label();\n"
        "}\n"
    ),
    "src/main/java/com/acme/model/Priced.java": (
        "package com.acme.model;\n"
        "public interface Priced {\n"
        "    double total();\n"
        "    default double taxed() { return total() * 2; }\n"
        "}\n"
    ),
    "src/main/java/com/acme/model/Order.java": (
        "package com.acme.model;\n"
        "public class Order extends Entity implements Priced {\n"
        '    public Order() { super("o"); }\n'
        "    public double total() { return 1; }\n"
        "    protected String label() { return getId(); }\n"
        "    public static Order empty() { return new Order(); }\n"
        "}\n"
    ),
    "src/main/java/com/acme/util/Strings.java": (
        "package com.acme.util;\n"
        "public final class Strings {\n"
        "    public static String slug(String s) { return s; }\n"
        "}\n"
    ),
    "src/main/java/com/acme/app/Helper.java": (
        "package com.acme.app;\nclass Helper {\n    static void help() {}\n}\n"
    ),
    "src/main/java/com/acme/app/Billing.java": (
        "package com.acme.app;\n"
        "import com.acme.model.*;\n"
        "import static com.acme.util.Strings.slug;\n"
        "import java.util.List;\n"
        "public class Billing {\n"
        "    private final List<Order> orders;\n"
        "    public double charge(Order order) {\n"
        "        Helper.help();\n"
        "        orders.add(order);\n"
        "        slug(order.getId());\n"
        "        Order fresh = Order.empty();\n"
        "        mystery.launch();\n"
        "        return order.taxed() + this.fee();\n"
        "    }\n"
        "    private double fee() { return 0; }\n"
        "}\n"
    ),
}

P = "src/main/java/com/acme"


def test_java_resolution(tmp_path: Path) -> None:
    repo = Repo(tmp_path, JAVA)
    billing = f"{P}/app/Billing.java"
    assert repo.imports(billing) == {
        (f"{P}/model/Entity.java", "import-bound"),  # import com.acme.model.*: the whole package
        (f"{P}/model/Priced.java", "import-bound"),
        (f"{P}/model/Order.java", "import-bound"),
        (f"{P}/util/Strings.java", "import-bound"),  # static import -> the class's file
    }
    assert repo.calls(billing) == {
        ("Billing.charge", f"java:method:{P}/app/Helper.java:Helper.help", "qualified"),  # same package
        ("Billing.charge", f"java:method:{P}/util/Strings.java:Strings.slug", "import-bound"),
        ("Billing.charge", f"java:method:{P}/model/Entity.java:Entity.getId", "qualified"),  # typed param
        ("Billing.charge", f"java:method:{P}/model/Order.java:Order.empty", "qualified"),
        ("Billing.charge", f"java:method:{P}/model/Priced.java:Priced.taxed", "qualified"),  # default method
        ("Billing.charge", f"java:method:{P}/app/Billing.java:Billing.fee", "receiver"),
    }
    assert repo.unresolved(billing) == ["mystery.launch"]  # List (JDK) is dropped; an unknown name stays


def test_java_inheritance_and_constructors(tmp_path: Path) -> None:
    repo = Repo(tmp_path, JAVA)
    order = f"{P}/model/Order.java"
    assert repo.calls(order) == {
        ("Order.Order", f"java:method:{P}/model/Entity.java:Entity.Entity", "receiver"),  # super(...)
        ("Order.label", f"java:method:{P}/model/Entity.java:Entity.getId", "receiver"),  # inherited, bare
        ("Order.empty", f"java:class:{order}:Order", "constructor"),  # new Order() inside Order
    }
    assert repo.calls(f"{P}/model/Priced.java") == {
        ("Priced.taxed", f"java:method:{P}/model/Priced.java:Priced.total", "same-scope"),
    }
    assert repo.calls(f"{P}/model/Entity.java") == {
        ("Entity.getId", f"java:method:{P}/model/Entity.java:Entity.label", "same-scope"),
    }


def test_java_super_without_constructor_points_at_the_class(tmp_path: Path) -> None:
    files = {
        "a/Base.java": "package a;\npublic class Base {\n    void m() {}\n}\n",
        "a/Sub.java": "package a;\npublic class Sub extends Base {\n    Sub() { super(); }\n}\n",
    }
    repo = Repo(tmp_path, files)
    assert repo.calls("a/Sub.java") == {("Sub.Sub", "java:class:a/Base.java:Base", "constructor")}


def test_java_nested_types_and_layout_fallback(tmp_path: Path) -> None:
    files = {
        # no package declaration (a syntax slip): the import still finds it by directory layout
        "src/x/y/Tool.java": "public class Tool {\n    public static void use() {}\n}\n",
        "src/x/Outer.java": (
            "package x;\npublic class Outer {\n    public static class In {\n        public void go() {}\n    }\n}\n"
        ),
        "src/z/Main.java": (
            "package z;\n"
            "import x.y.Tool;\n"
            "import x.Outer;\n"
            "class Main {\n"
            "    void run(Outer.In inner) {\n"
            "        Tool.use();\n"
            "        inner.go();\n"
            "        new Outer.In().go();\n"
            "        x.Outer.In made = null;\n"
            "    }\n"
            "}\n"
        ),
    }
    repo = Repo(tmp_path, files)
    edges = repo.index.resolve_file("src/z/Main.java").imports
    assert {(e.dst_path, e.confidence) for e in edges} == {
        ("src/x/y/Tool.java", 0.9),
        ("src/x/Outer.java", 1.0),
    }
    assert repo.calls("src/z/Main.java") == {
        ("Main.run", "java:method:src/x/y/Tool.java:Tool.use", "qualified"),
        ("Main.run", "java:method:src/x/Outer.java:Outer.In.go", "qualified"),
        ("Main.run", "java:class:src/x/Outer.java:Outer.In", "constructor"),
        ("Main.run", "java:method:src/x/Outer.java:Outer.In.go", "receiver"),
    }


def test_java_same_name_methods_are_not_guessed_as_certain(tmp_path: Path) -> None:
    files = {
        "p/A.java": "package p;\nclass A {\n    void save() {}\n    void only() {}\n}\n",
        "p/B.java": "package p;\nclass B {\n    void save() {}\n}\n",
        "p/C.java": "package p;\nclass C {\n    void use() {\n        make().save();\n        make().only();\n    }\n}\n",
    }
    repo = Repo(tmp_path, files)
    assert repo.calls("p/C.java") == {("C.use", "java:method:p/A.java:A.only", "name-only")}
    (edge,) = repo.index.resolve_file("p/C.java").calls
    assert edge.confidence <= 0.5
    assert repo.unresolved("p/C.java") == ["<expr>.save", "make", "make"]


def test_java_rename_method_re_resolves_callers(tmp_path: Path) -> None:
    repo = Repo(tmp_path, JAVA)
    billing = f"{P}/app/Billing.java"
    strings = f"{P}/util/Strings.java"
    changed = repo.write(
        strings,
        "package com.acme.util;\npublic final class Strings {\n    public static String slugify(String s) { return s; }\n}\n",
    )
    assert {"slug", "slugify"} <= changed
    assert billing in repo.index.files_referencing(changed)
    assert "slug" in repo.unresolved(billing)
    assert not any("Strings" in dst for _, dst, _ in repo.calls(billing))


def test_java_insert_line_above_keeps_ids(tmp_path: Path) -> None:
    repo = Repo(tmp_path, JAVA)
    path = f"{P}/model/Order.java"
    before = {
        s.qualified_name: repo.index.symbol_id(path, s) for s in extract(path, JAVA[path].encode()).symbols
    }
    edited = JAVA[path].replace("public class Order", "// a comment\n\npublic class Order")
    assert repo.write(path, edited) == set()
    after = {s.qualified_name: repo.index.symbol_id(path, s) for s in extract(path, edited.encode()).symbols}
    assert before == after
    assert ("Order.empty", f"java:class:{path}:Order", "constructor") in repo.calls(path)
