"""C#: extraction details the fixture does not show, and resolution on small repositories in tmp_path."""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.extract import extract
from tests.parse.test_resolve import Repo

FIXTURE = Path(__file__).parent / "fixtures" / "csharp" / "Basics.cs"


def test_csharp_details() -> None:
    facts = extract("src/App/Shop.cs", FIXTURE.read_bytes())
    by_qn = {(s.qualified_name, s.occurrence): s for s in facts.symbols}
    shop = by_qn[("Shop", 0)]
    assert shop.doc == "Does things . Second line."
    assert shop.signature == "public partial class Shop : BaseShop, IShop"  # attribute dropped
    assert shop.bases == ("BaseShop", "IShop")
    assert by_qn[("Shop.Name", 0)].kind == "property"
    assert by_qn[("Shop.Shop", 1)].signature == "public Shop() : this(null)"
    assert not by_qn[("Shop.Go", 0)].exported
    assert (
        by_qn[("Shop.Point", 0)].signature == "public struct Point"
    )  # structs are classes with their keyword
    assert by_qn[("Shop.Run.Local", 0)].kind == "function"


CS = {
    "src/Models/Entity.cs": (
        "namespace Acme.Models;\n"
        "public abstract class Entity {\n"
        "    protected Entity(string id) { }\n"
        "    public virtual void Validate() { Describe(); }\n"
        "    public string Describe() => Label();\n"
        "    protected abstract string Label();\n"
        "}\n"
    ),
    "src/Models/Order.cs": (
        "namespace Acme.Models {\n"
        "    public partial class Order : Entity {\n"
        '        public Order() : base("o") { }\n'
        '        protected override string Label() => "order";\n'
        "        public static Order Empty() => new Order();\n"
        "    }\n"
        "}\n"
    ),
    "src/Models/Order.Pay.cs": (
        "namespace Acme.Models {\n"
        "    public partial class Order {\n"
        "        public void Pay() { Validate(); Label(); }\n"
        "    }\n"
        "}\n"
    ),
    "src/Util/Text.cs": "namespace Acme.Util;\npublic static class Text {\n    public static string Slug(string s) => s;\n}\n",
    "src/Helpers.cs": "namespace Acme;\npublic static class Helpers {\n    public static void Log(string s) { }\n}\n",
    "src/App/Billing.cs": (
        "using System;\n"
        "using Acme.Models;\n"
        "using static Acme.Util.Text;\n"
        "using T = Acme.Util.Text;\n"
        "namespace Acme.App;\n"
        "public class Billing {\n"
        "    private Order Current { get; set; }\n"
        "    public void Charge(Order order) {\n"
        '        Helpers.Log(Slug("x"));\n'
        '        T.Slug("y");\n'
        "        order.Pay();\n"
        "        Current.Describe();\n"
        "        Console.WriteLine(Order.Empty());\n"
        "        Gadget.Spin();\n"
        "    }\n"
        "}\n"
    ),
}


def test_csharp_resolution(tmp_path: Path) -> None:
    repo = Repo(tmp_path, CS)
    billing = "src/App/Billing.cs"
    assert repo.imports(billing) == {
        ("src/Models/Entity.cs", "import-bound"),  # using Acme.Models: every file of the namespace
        ("src/Models/Order.cs", "import-bound"),
        ("src/Models/Order.Pay.cs", "import-bound"),
        ("src/Util/Text.cs", "import-bound"),  # using static and the alias
    }
    assert repo.calls(billing) == {
        ("Billing.Charge", "cs:method:src/Helpers.cs:Helpers.Log", "qualified"),  # parent namespace Acme
        ("Billing.Charge", "cs:method:src/Util/Text.cs:Text.Slug", "import-bound"),  # using static
        ("Billing.Charge", "cs:method:src/Util/Text.cs:Text.Slug", "qualified"),  # alias T
        (
            "Billing.Charge",
            "cs:method:src/Models/Order.Pay.cs:Order.Pay",
            "qualified",
        ),  # another partial part
        ("Billing.Charge", "cs:method:src/Models/Entity.cs:Entity.Describe", "qualified"),  # property type
        ("Billing.Charge", "cs:method:src/Models/Order.cs:Order.Empty", "qualified"),
    }
    assert repo.unresolved(billing) == ["Gadget.Spin"]  # Console is dropped, Gadget is unknown


def test_csharp_partial_classes_and_base(tmp_path: Path) -> None:
    repo = Repo(tmp_path, CS)
    assert repo.calls("src/Models/Order.Pay.cs") == {
        (
            "Order.Pay",
            "cs:method:src/Models/Entity.cs:Entity.Validate",
            "receiver",
        ),  # through the other part's base
        ("Order.Pay", "cs:method:src/Models/Order.cs:Order.Label", "same-scope"),  # the other part: same type
    }
    assert repo.calls("src/Models/Order.cs") == {
        ("Order.Order", "cs:method:src/Models/Entity.cs:Entity.Entity", "receiver"),  # : base(...)
        ("Order.Empty", "cs:class:src/Models/Order.cs:Order", "constructor"),
    }


def test_csharp_property_named_like_its_type(tmp_path: Path) -> None:
    files = {
        "N.cs": "namespace A;\npublic class Notifier {\n    public void Send() { }\n}\n",
        "B.cs": (
            "namespace A;\n"
            "public class B {\n"
            "    private Notifier Notifier { get; }\n"
            "    public B() { Notifier = new Notifier(); }\n"
            "    public void Go() { Notifier.Send(); }\n"
            "}\n"
        ),
    }
    repo = Repo(tmp_path, files)
    assert repo.calls("B.cs") == {
        ("B.B", "cs:class:N.cs:Notifier", "constructor"),
        ("B.Go", "cs:method:N.cs:Notifier.Send", "qualified"),
    }


def test_csharp_rename_and_insert_line(tmp_path: Path) -> None:
    repo = Repo(tmp_path, CS)
    billing = "src/App/Billing.cs"
    changed = repo.write("src/Util/Text.cs", CS["src/Util/Text.cs"].replace("Slug", "Slugify"))
    assert {"Slug", "Slugify"} <= changed
    assert billing in repo.index.files_referencing(changed)
    assert not any("Text.cs" in dst for _, dst, _ in repo.calls(billing))
    path = "src/Models/Order.cs"
    before = {
        s.qualified_name: repo.index.symbol_id(path, s) for s in extract(path, CS[path].encode()).symbols
    }
    edited = "// header\n\n" + CS[path]
    assert repo.write(path, edited) == set()
    after = {s.qualified_name: repo.index.symbol_id(path, s) for s in extract(path, edited.encode()).symbols}
    assert before == after
