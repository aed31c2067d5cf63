"""Ruby hooks: require / require_relative, `#` comment docs, mixins as bases, `X.new` and local types.

* `require 'x'` / `require_relative 'x'` / `load 'x'` with a literal string are ImportFacts (kinds
  "require" / "require_relative"); with anything else they are nothing.
* A class's bases are its superclass, then the modules it `include`s / `prepend`s / `extend`s in its own
  body (mixin methods are reachable through the receiver like inherited ones).
* Receivers: `A::B` reads as `A.B`; a local assigned only `Foo.new(...)` in the enclosing method, or an
  instance variable assigned `Foo.new(...)` in any method of the class, reads as `Foo` (the resolver then
  finds the method on Foo, its ancestors and mixins). Anything else keeps its name or is `<expr>`.
* `super` is named after the enclosing method (Ruby's super calls the ancestor's same-named method).
* A bare identifier (`total`, `describe`) is a call on self unless it is a local variable at that point,
  by Ruby's own parse-time rule: a name is a local from the first place it is bound, in the innermost
  scope, onwards (see `BareNames`). Positions that name rather than use (method names, `alias`, `undef`,
  the method of a `call`, `defined?` operands) and pseudo-variables (`__method__`, `__FILE__`, `_1`, `it`
  in a block) are never calls.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from nexusd.parse import grammar
from nexusd.parse.facts import ImportFact
from nexusd.parse.hooks import DOC_MAX, LanguageHooks, squash, string_value, text
from nexusd.parse.lang_java import DeclaredTypes

if TYPE_CHECKING:
    from tree_sitter import Node

_MIXINS = frozenset({"include", "prepend", "extend"})
_TYPES = frozenset({"class", "module", "singleton_class"})
_LOCALS = """
(assignment left: (identifier) @name right: (_) @value)
(operator_assignment left: (identifier) @name right: (_) @value)
(method_parameters (identifier) @name)
(block_parameters (identifier) @name)
"""
# The name `call_name` gives an identifier that is no call (a local, a definition): `special_call` drops it.
NOT_A_CALL = "<not a call>"
# Scopes of local variables: a hard scope sees nothing of its surroundings, a soft one (a block) sees the
# locals bound before it in the enclosing scopes, and its own bindings end with it.
_HARD_SCOPES = frozenset({"program", "method", "singleton_method", "class", "module", "singleton_class"})
_SOFT_SCOPES = frozenset({"block", "do_block", "lambda"})
_SCOPES = _HARD_SCOPES | _SOFT_SCOPES
# Identifiers that read like names but are neither locals nor calls worth an edge.
_PSEUDO = frozenset(
    {"self", "nil", "true", "false", "__method__", "__callee__", "__dir__", "__FILE__", "__LINE__"}
    | {"__ENCODING__", "binding", "block_given?"}
    | {f"_{i}" for i in range(1, 10)}
)
# Every place that binds a local: assignment targets, parameters of every kind (not default values),
# block-locals (`|a; b|`), `rescue => e`, `for x in`, pattern bindings (`in x`, `in [x, *y]`, `in X => x`,
# `in {k: x}`, `in {k:}`; a pinned `^x` is a use).
_BINDINGS = (
    """
    (assignment left: (identifier) @b)
    (operator_assignment left: (identifier) @b)
    (left_assignment_list (identifier) @b)
    (destructured_left_assignment (identifier) @b)
    (rest_assignment (identifier) @b)
    (method_parameters (identifier) @b)
    (block_parameters (identifier) @b)
    (lambda_parameters (identifier) @b)
    (destructured_parameter (identifier) @b)
    (optional_parameter name: (identifier) @b)
    (splat_parameter name: (identifier) @b)
    (hash_splat_parameter name: (identifier) @b)
    (block_parameter name: (identifier) @b)
    (keyword_parameter name: (identifier) @b)
    (exception_variable (identifier) @b)
    (for pattern: (identifier) @b)
    (in_clause pattern: (identifier) @b)
    (match_pattern pattern: (identifier) @b)
    (test_pattern pattern: (identifier) @b)
    (array_pattern (identifier) @b)
    (find_pattern (identifier) @b)
    (as_pattern name: (identifier) @b)
    (keyword_pattern value: (identifier) @b)
    (keyword_pattern key: (hash_key_symbol) @b !value)
    """
)
# The field of a scope node evaluated outside the scope: `class A < x`, `class << x`, `def x.m`.
_HEADER_FIELDS = {"class": "superclass", "singleton_class": "value", "singleton_method": "object"}

_IVARS = "(assignment left: (instance_variable) @name right: (_) @value)"


def const_path(node: Node | None) -> str | None:
    """`Foo` / `A::B` / `::A` as a dotted path, None for anything else."""
    if node is None:
        return None
    if node.type == "constant":
        return text(node)
    if node.type == "scope_resolution":
        name = node.child_by_field_name("name")
        scope = node.child_by_field_name("scope")
        if name is None or name.type != "constant":
            return None
        if scope is None:
            return text(name)
        head = const_path(scope)
        return f"{head}.{text(name)}" if head else None
    return None


def _new_type(node: Node | None) -> str | None:
    """`Foo.new(...)` -> "Foo" (the type of the value), else None."""
    if node is None or node.type != "call":
        return None
    method = node.child_by_field_name("method")
    if method is None or text(method) != "new":
        return None
    return const_path(node.child_by_field_name("receiver"))


def _ivars(decl: Node) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    seen: dict[str, str | None] = {}
    for _, caps in grammar.matches(grammar.query("ruby", _IVARS), decl):
        name = text(caps["name"][0])
        value = _new_type(caps["value"][0])
        seen[name] = value if seen.get(name, value) == value else None
    out.extend(seen.items())
    return out


def _outer_header(scope: Node) -> Node | None:
    """The part of a hard scope's node that is evaluated in the enclosing scope, if any."""
    field = _HEADER_FIELDS.get(scope.type)
    return scope.child_by_field_name(field) if field is not None else None


def _scopes(node: Node) -> Iterator[Node]:
    """The scopes `node` sees, innermost first: blocks, then the nearest def / class / module / file.
    `x` in `class << x`, `class A < x` and `def x.m` belongs to the scope around that class or def."""
    prev = node
    cur = node.parent
    while cur is not None:
        kind = cur.type
        if kind in _SCOPES:
            header = _outer_header(cur) if kind in _HEADER_FIELDS else None
            if header is None or header != prev:
                yield cur
                if kind in _HARD_SCOPES:
                    return
        prev, cur = cur, cur.parent


def _key(scope: Node) -> tuple[int, int, str]:
    return scope.start_byte, scope.end_byte, scope.type


class BareNames:
    """Ruby's rule for a bare identifier: a local variable if bound earlier in its scope, else a call.

    Ruby decides at parse time: an identifier is a local from the first binding of that name onwards
    (`x = ...`, `a, b = ...`, `x ||= ...`, parameters of every kind, block parameters and block-locals,
    `rescue => e`, `for x in`, pattern bindings), searched in the innermost scope and, through blocks, the
    enclosing ones up to the nearest `def` / `class` / `module` / file. One query per file finds every
    binding; each is filed under its innermost scope (name -> first binding's start byte).
    """

    def __init__(self) -> None:
        self._root: Node | None = None  # the tree the tables describe (a node keeps its tree alive)
        self._known: set[Node] = set()  # scopes checked to be in that tree
        self._tables: dict[tuple[int, int, str], dict[str, int]] = {}
        self._names: set[str] = set()

    def is_call(self, node: Node) -> bool:
        """Whether the identifier `node`, read as a value, is a method call on self."""
        parent = node.parent
        if parent is None or _in_defined(parent):
            return False
        name = text(node)
        if name in _PSEUDO:
            return False
        scopes = _scopes(node)
        first = next(scopes, None)
        if first is None:
            return False  # a detached node: nothing is known
        self._load(first)
        if name in self._names:
            start = node.start_byte
            for scope in itertools.chain((first,), scopes):
                bound = self._tables.get(_key(scope), {}).get(name)
                if bound is not None and bound <= start:
                    return False
        # `it` inside a block is its implicit parameter (Ruby 3.4); elsewhere a call like any other
        return name != "it" or first.type in _HARD_SCOPES

    def _load(self, scope: Node) -> None:
        """Tables for the tree `scope` is in: rebuilt when a node of another tree (file) comes."""
        if scope in self._known:
            return
        root = scope
        while root.parent is not None:
            root = root.parent
        if self._root is None or self._root != root:
            self._root = root
            self._known = set()
            self._tables = {}
            self._names = set()
            for _, caps in grammar.matches(grammar.query("ruby", _BINDINGS), root):
                bound = caps["b"][0]
                name = text(bound)
                self._names.add(name)
                home = next(_scopes(bound), None)
                if home is None:
                    continue
                table = self._tables.setdefault(_key(home), {})
                if table.get(name, bound.start_byte + 1) > bound.start_byte:
                    table[name] = bound.start_byte
        self._known.add(scope)


def _in_defined(parent: Node) -> bool:
    """`defined?(x)` / `defined? x` asks about x without calling it."""
    if parent.type == "parenthesized_statements" and parent.parent is not None:
        parent = parent.parent
    keyword = parent.child(0) if parent.type == "unary" else None
    return keyword is not None and keyword.type == "defined?"


class RubyHooks(LanguageHooks):
    language = "ruby"
    self_names = frozenset({"self"})
    has_owners = True

    def __init__(self) -> None:
        self.declared = DeclaredTypes(
            "ruby",
            _LOCALS,
            scopes=frozenset({"method", "singleton_method", "block", "do_block", "lambda"}),
            types=frozenset({"class", "module"}),
            type_of=lambda _node: None,
            value_type=_new_type,
            fields=_ivars,
        )
        self.bare = BareNames()

    def definition_kind(self, kind: str, parent_kind: str | None) -> str:
        if kind == "method" and parent_kind is None:
            return "function"  # a top-level def: a private method of Object, callable from anywhere
        return kind

    def owner(self, node: Node) -> str | None:
        name = node.child_by_field_name("name")
        if name is not None and name.type == "scope_resolution":
            return const_path(name.child_by_field_name("scope"))
        return None

    def signature(self, node: Node, data: bytes) -> str:
        body = node.child_by_field_name("body")
        end = body.start_byte if body is not None else node.end_byte
        params = node.child_by_field_name("parameters")
        if node.type in {"method", "singleton_method"}:
            end = params.end_byte if params is not None else node.child_by_field_name("name").end_byte  # type: ignore[union-attr]
        elif node.type == "assignment":
            right = node.child_by_field_name("right")
            block = right.child_by_field_name("block") if right is not None else None
            end = block.start_byte if block is not None else node.end_byte
        elif node.type == "class":
            sup = node.child_by_field_name("superclass")
            name = node.child_by_field_name("name")
            end = sup.end_byte if sup is not None else name.end_byte if name is not None else end
        else:
            name = node.child_by_field_name("name")
            end = name.end_byte if name is not None else end
        return squash(data[node.start_byte : end].decode("utf-8", "replace").rstrip(), 200)

    def doc(self, node: Node) -> str:
        """The run of `#` comment lines directly above the definition."""
        lines: list[str] = []
        prev = node.prev_named_sibling
        row = node.start_point[0]
        while prev is not None and prev.type == "comment" and prev.end_point[0] >= row - 1:
            raw = text(prev)
            if raw.startswith("=begin"):
                break
            lines.insert(0, raw.lstrip("#").strip())
            row = prev.start_point[0]
            prev = prev.prev_named_sibling
        return squash(" ".join(line for line in lines if line), DOC_MAX)

    def bases(self, node: Node | None) -> list[str]:
        if node is None:
            return []
        out: list[str] = []
        if node.type == "assignment":  # Klass = Class.new(Base) do ... end
            call = node.child_by_field_name("right")
            args = call.child_by_field_name("arguments") if call is not None else None
            maker = text(call.child_by_field_name("receiver")) if call is not None else ""
            if maker == "Class" and args is not None and args.named_child_count:
                path = const_path(args.named_children[0])
                return [path] if path else []
            return []
        sup = node.child_by_field_name("superclass")
        if sup is not None and sup.named_child_count:
            path = const_path(sup.named_children[0])
            if path:
                out.append(path)
        body = node.child_by_field_name("body")
        for child in body.named_children if body is not None else []:
            if child.type != "call" or child.child_by_field_name("receiver") is not None:
                continue
            if text(child.child_by_field_name("method")) not in _MIXINS:
                continue
            args = child.child_by_field_name("arguments")
            for arg in args.named_children if args is not None else []:
                path = const_path(arg)
                if path:
                    out.append(path)
        return out

    def exported(self, node: Node, name: str) -> bool:
        return not name.startswith("_")

    def call_name(self, node: Node) -> str:
        if node.type == "super":
            cur = node.parent
            while cur is not None and cur.type not in {"method", "singleton_method"}:
                cur = cur.parent
            return text(cur.child_by_field_name("name")) if cur is not None else "initialize"
        if node.type == "scope_resolution":
            return text(node.child_by_field_name("name"))
        if node.type == "call":  # `foo(...)` / `x.foo`: the call patterns name the call node
            return text(node.child_by_field_name("method"))
        if node.type == "identifier":  # a bare `foo` where a value is read: see queries/ruby.scm
            return text(node) if self.bare.is_call(node) else NOT_A_CALL
        return text(node)

    def receiver(self, node: Node) -> str:
        kind = node.type
        if kind == "super":
            return "super"
        if kind == "self":
            return "self"
        if kind == "identifier":
            name = text(node)
            declared, type_name = self.declared.lookup(node, name)
            return type_name if declared and type_name else name
        if kind == "instance_variable":
            declared, type_name = self.declared.lookup(node, text(node), fields_only=True)
            return type_name if declared and type_name else "<expr>"
        if kind in {"constant", "scope_resolution"}:
            if kind == "scope_resolution" and node.parent is not None and node.parent.type == "call":
                method = node.parent.child_by_field_name("method")
                if method is not None and text(method) == "new":  # A::B.new: the qualifier of B
                    return const_path(node.child_by_field_name("scope")) or "<expr>"
            return const_path(node) or "<expr>"
        if kind == "call":
            made = _new_type(node)
            return f"{made}()" if made else "<expr>"
        return "<expr>"

    special_names = frozenset({"require", "require_relative", "load", NOT_A_CALL})

    def special_call(self, call: Node, name: str) -> tuple[str | None, ImportFact | None, bool]:
        if name == NOT_A_CALL or call.type != "call":  # a local, or a bare `require` / `load`
            return None, None, False
        args = call.child_by_field_name("arguments")
        first = args.named_children[0] if args is not None and args.named_child_count else None
        spec = _ruby_string(first)
        if spec is None:
            return None, None, False
        kind = "require_relative" if name == "require_relative" else "require"
        return None, ImportFact(specifier=spec, line=call.start_point[0] + 1, kind=kind), False


def _ruby_string(node: Node | None) -> str | None:
    """A string literal without interpolation."""
    if node is None or node.type != "string":
        return None
    if any(c.type == "interpolation" for c in node.named_children):
        return None
    parts = [text(c) for c in node.named_children if c.type == "string_content"]
    return "".join(parts) if parts or text(node) in {"''", '""'} else string_value(node)
