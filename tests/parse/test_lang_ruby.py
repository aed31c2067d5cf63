"""Ruby: extraction details the fixture does not show, and resolution on small repositories in tmp_path."""

from __future__ import annotations

from pathlib import Path

from nexusd.parse.extract import extract
from tests.parse.test_resolve import Repo

FIXTURE = Path(__file__).parent / "fixtures" / "ruby" / "basics.rb"


def test_ruby_details() -> None:
    facts = extract("lib/shop/billing.rb", FIXTURE.read_bytes())
    by_qn = {(s.qualified_name, s.occurrence): s for s in facts.symbols}
    shop = by_qn[("Shop", 0)]
    assert shop.kind == "namespace" and shop.doc == "Billing of orders. Second line."
    invoice = by_qn[("Shop.Billing.Invoice", 0)]
    assert invoice.bases == ["Base.Document", "Helpers", "ClassMethods"]  # superclass, then mixins
    assert invoice.signature == "class Invoice < Base::Document"
    total = by_qn[("Shop.Billing.Invoice.total", 0)]
    assert total.doc == "Total due." and total.signature == "def total"
    assert by_qn[("Shop.Billing.Invoice.build", 0)].signature == "def self.build(o)"
    assert by_qn[("Shop.Report", 0)].parent == "Shop"  # class Shop::Report names its owner
    assert by_qn[("top_level", 0)].kind == "function"
    # a bare identifier may be a local variable: only grammar-level calls are calls
    assert [c.line for c in facts.calls if c.name == "compute"] == [24, 25]


RB = {
    "lib/shop.rb": 'require "shop/util"\nrequire "shop/order"\nrequire "json"\n',
    "lib/shop/util.rb": ("module Shop\n  module Util\n    def self.slug(t)\n      t\n    end\n  end\nend\n"),
    "lib/shop/validatable.rb": "module Shop\n  module Validatable\n    def validate!\n      true\n    end\n  end\nend\n",
    "lib/shop/entity.rb": (
        'require_relative "validatable"\n'
        "module Shop\n"
        "  class Entity\n"
        "    include Validatable\n"
        "    def initialize(id)\n"
        "      @id = id\n"
        "    end\n"
        "  end\n"
        "end\n"
    ),
    "lib/shop/order.rb": (
        'require_relative "entity"\n'
        "module Shop\n"
        "  class Order < Entity\n"
        "    def self.empty\n"
        '      new("0")\n'
        "    end\n"
        "    def initialize(id)\n"
        "      super\n"
        "    end\n"
        "    def pay!\n"
        "      validate!\n"
        "      settle(1)\n"
        "    end\n"
        "  end\n"
        "end\n"
    ),
    "lib/shop/order_settle.rb": ("class Shop::Order\n  def settle(amount)\n    amount\n  end\nend\n"),
    "bin/run.rb": (
        'require "shop"\n'
        "def helper\n"
        "end\n"
        "def main\n"
        '  order = Shop::Order.new("1")\n'
        "  order.pay!\n"
        '  Shop::Util.slug("x")\n'
        "  Shop::Order.empty\n"
        "  helper()\n"
        "  has_many(:things)\n"
        "end\n"
    ),
}


def test_ruby_requires(tmp_path: Path) -> None:
    repo = Repo(tmp_path, RB)
    assert repo.imports("lib/shop.rb") == {
        ("lib/shop/util.rb", "import-bound"),  # require "shop/util" through lib/
        ("lib/shop/order.rb", "import-bound"),
    }  # "json" is the stdlib: no edge
    assert repo.imports("lib/shop/order.rb") == {("lib/shop/entity.rb", "import-bound")}
    assert repo.imports("bin/run.rb") == {("lib/shop.rb", "import-bound")}


def test_ruby_calls(tmp_path: Path) -> None:
    repo = Repo(tmp_path, RB)
    assert repo.calls("bin/run.rb") == {
        ("main", "rb:class:lib/shop/order.rb:Shop.Order", "constructor"),
        ("main", "rb:method:lib/shop/order.rb:Shop.Order.pay!", "qualified"),  # local typed by Order.new
        ("main", "rb:method:lib/shop/util.rb:Shop.Util.slug", "qualified"),
        ("main", "rb:method:lib/shop/order.rb:Shop.Order.empty", "qualified"),  # def self.empty
        ("main", "rb:function:bin/run.rb:helper", "same-scope"),
    }
    assert repo.unresolved("bin/run.rb") == ["has_many"]  # a DSL call is kept as a string, never guessed


def test_ruby_mixins_reopened_classes_and_super(tmp_path: Path) -> None:
    repo = Repo(tmp_path, RB)
    assert repo.calls("lib/shop/order.rb") == {
        ("Shop.Order.empty", "rb:class:lib/shop/order.rb:Shop.Order", "constructor"),  # bare new
        ("Shop.Order.initialize", "rb:method:lib/shop/entity.rb:Shop.Entity.initialize", "receiver"),  # super
        (
            "Shop.Order.pay!",
            "rb:method:lib/shop/validatable.rb:Shop.Validatable.validate!",
            "receiver",
        ),  # mixin
        ("Shop.Order.pay!", "rb:method:lib/shop/order_settle.rb:Shop.Order.settle", "same-scope"),  # reopened
    }


def test_ruby_rename_and_insert_line(tmp_path: Path) -> None:
    repo = Repo(tmp_path, RB)
    changed = repo.write("lib/shop/util.rb", RB["lib/shop/util.rb"].replace("slug", "slugify"))
    assert {"slug", "slugify"} <= changed
    assert "bin/run.rb" in repo.index.files_referencing(changed)
    assert "Shop.Util.slug" in repo.unresolved("bin/run.rb")
    path = "lib/shop/order.rb"
    before = {
        s.qualified_name: repo.index.symbol_id(path, s) for s in extract(path, RB[path].encode()).symbols
    }
    edited = "# frozen_string_literal: true\n\n" + RB[path]
    assert repo.write(path, edited) == set()
    after = {s.qualified_name: repo.index.symbol_id(path, s) for s in extract(path, edited.encode()).symbols}
    assert before == after
