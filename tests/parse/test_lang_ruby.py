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
    assert invoice.bases == ("Base.Document", "Helpers", "ClassMethods")  # superclass, then mixins
    assert invoice.signature == "class Invoice < Base::Document"
    total = by_qn[("Shop.Billing.Invoice.total", 0)]
    assert total.doc == "Total due." and total.signature == "def total"
    assert by_qn[("Shop.Billing.Invoice.build", 0)].signature == "def self.build(o)"
    assert by_qn[("Shop.Report", 0)].parent == "Shop"  # class Shop::Report names its owner
    assert by_qn[("top_level", 0)].kind == "function"
    # a bare identifier that is no local is a call on self: `compute` alone, `order` (an attr_reader)
    assert [c.line for c in facts.calls if c.name == "compute"] == [23, 24, 25]
    assert [(c.line, c.receiver) for c in facts.calls if c.name == "order"] == [(22, None)]
    assert not [c for c in facts.calls if c.name in {"made", "l", "o"}]  # locals and parameters


def bare_calls(body: str, head: str = "def m(a)") -> list[str]:
    """Names of the receiver-less calls extracted from `body` inside `head ... end` (one per line)."""
    src = f"{head}\n{body}\nend\n"
    return [c.name for c in extract("x.rb", src.encode()).calls if c.receiver is None]


def test_bare_identifiers_are_self_calls_unless_local() -> None:
    assert bare_calls("a\nb\nb.size") == ["b", "b"]  # a parameter vs a method (also as a receiver)
    assert bare_calls('x\nx = 1\nx\n"#{x} #{y}"') == ["x", "y"]  # local only after its assignment
    assert bare_calls("x = x") == []  # Ruby: the left side makes x a local before the right side is read
    assert bare_calls("t if (t = 1)") == ["t"]  # ... and a binding later in the text does not count
    assert bare_calls("p, (q, *r) = 1\nh ||= 2\np\nq\nr\nh\ns") == ["s"]  # multiple, op assignment
    assert bare_calls("puts(v)\nputs v\nputs(v(1))") == ["puts", "v", "puts", "v", "puts", "v"]


def test_every_kind_of_parameter_is_a_local() -> None:
    head = "def m(a, (b, c), d = a, *e, f:, g: f, **h, &i)"
    assert bare_calls("a; b; c; d; e; f; g; h; i; z", head) == ["z"]
    assert bare_calls("v", "def m(v = w)") == ["w"]  # a default value is a use, not a parameter
    assert bare_calls("x", "def self.m(x)") == []
    assert bare_calls("x", "def m(...)") == ["x"]


def test_block_scopes() -> None:
    # block parameters (destructured, splat, block-locals) are locals inside the block only
    body = "[].each { |x, (y, *z); w| x; y; z; w; q = 1; q }\nx\nq\n[].map do |k| k end\nk"
    assert bare_calls(body) == ["x", "q", "k"]
    assert bare_calls("o = 1\n[].each { o; n }\nn = 2") == ["n"]  # outer locals seen, later ones not
    assert bare_calls("f = ->(l) { l + g }\nl") == ["g", "l"]
    assert bare_calls("[].each { it }\nit") == ["it"]  # `it` is the implicit parameter inside a block
    assert bare_calls("[].each { _1 }") == []


def test_nested_definitions_reset_the_scope() -> None:
    body = "v = 1\ndef inner\n  v\nend\nclass K\n  v\nend\nmodule M\n  v\nend\nv"
    assert bare_calls(body) == ["v", "v", "v"]  # a def / class / module body does not see v
    top = "v = 1\nv\ndef f\n  v\nend\n"
    assert [c.name for c in extract("x.rb", top.encode()).calls] == ["v"]  # file-level locals stop at def
    # ... but the header of `class << x` / `def x.m` / `class A < x` is read in the enclosing scope
    head = "o = 1\nclass << o\n  o\nend\ndef o.z\n  o\nend\nclass B < o\nend\nclass << (d = {})\nend\nd"
    assert bare_calls(head) == ["o", "o"]


def test_other_bindings_and_non_calls() -> None:
    assert bare_calls("begin\nrescue Err => e\n  e\nend\ne") == []  # rescue => e
    assert bare_calls("for i, j in []\n  i\nend\nj") == []  # for-loop variables outlive the loop
    body = "case v\nin {k:, n: [a1, *r1]} then k + a1\nin Integer => c1 then c1\nin ^u then 1\nend"
    assert bare_calls(body) == ["v"]  # pattern bindings; a pinned ^u can only name a local
    assert bare_calls("1 => d1\nd1\n2 in d2\nd2") == []
    assert bare_calls("defined?(zz)\ndefined? yy") == []  # asks about the name without calling it
    assert bare_calls("alias new_n old_n\nundef gone") == []
    pseudo = "__method__\n__dir__\n__FILE__\nself\nnil\ntrue\nbinding\nfoo(k: 1)\n{k2: 1}\n:sym"
    assert bare_calls(pseudo) == ["foo"]
    assert bare_calls("x", "def m=(x)") == []  # a setter's name and parameter


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


BARE = {
    "lib/validatable.rb": (
        "module Validatable\n"
        "  def valid?\n"
        "    errors.empty? && check\n"
        "  end\n"
        "  def check\n"
        "    true\n"
        "  end\n"
        "  def self.helper\n"
        "    errors\n"
        "  end\n"
        "end\n"
    ),
    "lib/entity.rb": (
        'require_relative "validatable"\n'
        "class Entity\n"
        "  include Validatable\n"
        "  attr_reader :id\n"
        "  def errors\n"
        "    id.nil? ? [label] : []\n"
        "  end\n"
        "  def label\n"
        "    total = 1\n"
        "    total + tax\n"
        "  end\n"
        "  private\n"
        "end\n"
    ),
}


def test_ruby_bare_self_calls(tmp_path: Path) -> None:
    repo = Repo(tmp_path, BARE)
    assert repo.calls("lib/entity.rb") == {
        ("Entity.errors", "rb:method:lib/entity.rb:Entity.label", "same-scope"),
    }  # `total` is a local; `id` (attr_reader) and `tax` (defined nowhere) stay strings, never guesses
    # `private` and `include` are builtins; `id.nil?` is a common method: never guessed, still counted
    assert repo.unresolved("lib/entity.rb") == ["id", "id.nil?", "tax"]
    assert repo.calls("lib/validatable.rb") == {
        ("Validatable.valid?", "rb:method:lib/entity.rb:Entity.errors", "receiver"),  # self is an includer
        ("Validatable.valid?", "rb:method:lib/validatable.rb:Validatable.check", "same-scope"),
    }
    # in `def self.helper` self is the module; `errors.empty?` is counted, not guessed
    assert repo.unresolved("lib/validatable.rb") == ["errors", "errors.empty?"]


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
