"""C and C++ hooks: `#include`, out-of-line members, declarations vs definitions, doc comments, receivers.

One class serves both grammars (`language` differs); C simply never produces the C++-only nodes.

* Includes: `#include "x.h"` is kind "include", `#include <x.h>` kind "system"; the resolver decides which
  of them are repository files (compile_commands.json `-I` flags, conventional include dirs).
* `void ns::Class::m() {}` is captured by its last name; `owner` returns "ns.Class", so the qualified name
  is `ns.Class.m` and the symbol is a method, exactly like `m` written inside the class body.
* Docs: a `/** ... */` block or a run of `//` lines directly above (the LanguageHooks default), above the
  template<> wrapper for templates.
* Receivers: "this", "this.field", path calls keep their scope with a trailing `::` ("Class::", "ns::"),
  and a variable whose type is written at its declaration in the enclosing function (parameter, local,
  `auto p = new T(...)`) is written `p@T` (see lang_go.py for the same convention). An unqualified name
  that is not a local (a member used without `this->`) is left bare; the resolver tries the class's fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nexusd.parse.facts import ImportFact
from nexusd.parse.hooks import DOC_MAX, LanguageHooks, squash, text

if TYPE_CHECKING:
    from tree_sitter import Node

_DECLARATORS = frozenset(
    {
        "pointer_declarator",
        "reference_declarator",
        "array_declarator",
        "init_declarator",
        "function_declarator",
    }
)
_TYPE_NODES = frozenset({"type_identifier", "qualified_identifier", "template_type"})
# What a function declarator may declare, and the symbol kind of each (cpp.scm's `@definition.declarator`).
_DECLARES = {"function_definition": "function", "declaration": "declaration", "field_declaration": "declaration"}
# The declarators allowed between the function declarator and what it declares, innermost first.
_BETWEEN = ((), ("pointer_declarator",), ("pointer_declarator", "pointer_declarator"), ("reference_declarator",))


def type_name(node: Node | None) -> str:
    """`const ns::Foo<T>&` -> "ns::Foo"; primitive and `auto` types -> ""."""
    if node is None:
        return ""
    if node.type == "template_type":
        return type_name(node.child_by_field_name("name"))
    if node.type == "qualified_identifier":
        scope = text(node.child_by_field_name("scope"))
        name = type_name(node.child_by_field_name("name"))
        return f"{scope}::{name}" if scope and name else name
    if node.type == "type_identifier":
        return text(node)
    if node.type in {"struct_specifier", "class_specifier", "union_specifier"}:
        tag = node.child_by_field_name("name")
        return type_name(tag) if tag is not None else ""
    return ""


def _declared_name(node: Node | None) -> str:
    """The variable a declarator declares: `*p`, `&r`, `a[3]`, `x = ...` -> p, r, a, x."""
    while node is not None and node.type in _DECLARATORS:
        node = node.child_by_field_name("declarator") or (
            node.named_children[-1] if node.named_child_count else None
        )
    return text(node) if node is not None and node.type == "identifier" else ""


def _in_field(parent: Node, child: Node) -> bool:
    """Is `child` one of `parent`'s `declarator` fields (`int f(int), g(int);` has two)?"""
    return any(c == child for c in parent.children_by_field_name("declarator"))


class CFamilyHooks(LanguageHooks):
    self_names = frozenset({"this"})
    has_owners = True

    def __init__(self, language: str) -> None:
        self.language = language
        self._scope_key: tuple[int, int, int] | None = None
        self._scope_types: dict[str, str] = {}

    def definition_kind(self, kind: str, parent_kind: str | None) -> str:
        if kind == "function" and parent_kind in {"class", "struct"}:
            return "method"
        return kind

    def declarator_definition(self, node: Node) -> tuple[str, Node] | None:
        """`f(...)` in `T f(...) {}`, `T *f(...);`, `T **C::f(...);`, `T &f(...)` as a member: the definition or
        declaration it declares, as its `declarator` (through a pointer or a reference's own declarator)."""
        child, parent = node, node.parent
        between: list[str] = []
        while parent is not None and parent.type in ("pointer_declarator", "reference_declarator"):
            if parent.type == "pointer_declarator" and not _in_field(parent, child):
                return None  # (a reference declarator names no field: any child)
            between.append(parent.type)
            child, parent = parent, parent.parent
        if parent is None or tuple(between) not in _BETWEEN:
            return None
        kind = _DECLARES.get(parent.type)
        if kind is None or not _in_field(parent, child):
            return None
        return kind, parent

    def owner(self, node: Node) -> str | None:
        if node.type not in {"function_definition", "declaration", "field_declaration"}:
            return None
        decl = node.child_by_field_name("declarator")
        while decl is not None and decl.type in {"pointer_declarator", "reference_declarator"}:
            decl = decl.child_by_field_name("declarator") or (
                decl.named_children[-1] if decl.named_child_count else None
            )
        if decl is None or decl.type != "function_declarator":
            return None
        name = decl.child_by_field_name("declarator")
        if name is None or name.type != "qualified_identifier":
            return None
        parts: list[str] = []
        while name is not None and name.type == "qualified_identifier":
            scope = name.child_by_field_name("scope")
            if scope is not None:
                parts.append(text(scope).split("<", 1)[0])
            name = name.child_by_field_name("name")
        return ".".join(p for p in parts if p) or None

    def doc_anchor(self, node: Node) -> Node:
        parent = node.parent
        if parent is not None and parent.type == "template_declaration":
            return parent
        return node

    def doc(self, node: Node) -> str:
        """`/** */`, `///`, `//!` or plain `//` runs directly above (the default, minus the extra marks)."""
        anchor = self.doc_anchor(node)
        prev = anchor.prev_named_sibling
        chunks: list[str] = []
        expect_row = anchor.start_point[0]
        while prev is not None and prev.type == "comment" and prev.end_point[0] >= expect_row - 1:
            body = text(prev)
            chunks.insert(0, body)
            if body.startswith("/*"):
                break
            expect_row = prev.start_point[0]
            prev = prev.prev_named_sibling
        lines = []
        for chunk in chunks:
            for line in chunk.splitlines():
                line = line.strip()
                for mark in ("/**", "/*!", "/*", "///", "//!", "//"):
                    if line.startswith(mark):
                        line = line[len(mark) :]
                        break
                lines.append(line.removesuffix("*/").strip().removeprefix("*").strip())
        return squash(" ".join(ln for ln in lines if ln), DOC_MAX)

    def signature(self, node: Node, data: bytes) -> str:
        return super().signature(node, data).removesuffix(";").rstrip()

    def bases(self, node: Node | None) -> list[str]:
        if node is None:
            return []
        return [n for n in (type_name(c) for c in node.named_children if c.type in _TYPE_NODES) if n]

    def exported(self, node: Node, name: str) -> bool:
        # `static` at file level is internal linkage; everything else can be reached from elsewhere.
        return (
            not any(c.type == "storage_class_specifier" and c.text == b"static" for c in node.children)
            or node.parent is not None
            and node.parent.type == "field_declaration_list"
        )

    def imports(self, node: Node) -> list[ImportFact]:
        path = node.child_by_field_name("path")
        if path is None:
            return []
        raw = text(path).strip()
        if path.type == "system_lib_string":
            return [ImportFact(specifier=raw.strip("<>"), line=node.start_point[0] + 1, kind="system")]
        spec = raw.strip('"')
        if not spec or path.type not in {"string_literal", "raw_string_literal"}:
            return []  # `#include MACRO`
        return [ImportFact(specifier=spec, line=node.start_point[0] + 1, kind="include")]

    def call_name(self, node: Node) -> str:
        if node.type == "template_function":  # f<T>(): the name without its arguments
            return text(node.child_by_field_name("name"))
        return text(node)

    def receiver(self, node: Node) -> str:
        kind = node.type
        parent = node.parent
        if parent is not None and parent.type == "qualified_identifier":
            # The scope of a path call: `Class::m()`, `ns::f()`, `a::b::f()`.
            scope = text(node).replace(" ", "")
            if "<" in scope:
                scope = "".join(_drop_template_args(scope))
            head = scope
            name = parent.child_by_field_name("name")
            while name is not None and name.type == "qualified_identifier":
                head += "::" + text(name.child_by_field_name("scope"))
                name = name.child_by_field_name("name")
            return f"{head}::"
        if kind == "this":
            return "this"
        if kind == "identifier":
            var = text(node)
            typ = self._local_type(node, var)
            return f"{var}@{typ}" if typ else var
        if kind == "field_expression":
            arg = node.child_by_field_name("argument")
            field = node.child_by_field_name("field")
            if arg is not None and field is not None and field.type == "field_identifier":
                head = self.receiver(arg)
                if head != "<expr>" and not head.endswith("::"):
                    path, at, typ = head.partition("@")
                    return f"{path}.{text(field)}{at}{typ}"
            return "<expr>"
        if kind == "pointer_expression" and node.named_child_count:  # (*p).m()
            return self.receiver(node.named_children[-1])
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self.receiver(node.named_children[0])
        return "<expr>"

    def _local_type(self, ident: Node, name: str) -> str:
        fn = ident.parent
        while fn is not None and fn.type != "function_definition":
            fn = fn.parent
        if fn is None:
            return ""
        key = (fn.id, fn.start_byte, fn.end_byte)
        if key != self._scope_key:
            self._scope_key = key
            self._scope_types = _declared_types(fn)
        return self._scope_types.get(name, "")


def _drop_template_args(value: str) -> list[str]:
    out: list[str] = []
    depth = 0
    for ch in value:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return out


def _declared_types(fn: Node) -> dict[str, str]:
    """name -> written type of the parameters and locals of one function (ambiguous names dropped)."""
    found: dict[str, str] = {}
    dropped: set[str] = set()

    def note(name: str, typ: str) -> None:
        if not name or not typ or name in dropped:
            return
        if found.get(name, typ) != typ:
            dropped.add(name)
            found.pop(name, None)
        else:
            found[name] = typ

    stack = [fn]
    while stack:
        cur = stack.pop()
        kind = cur.type
        if kind in {
            "parameter_declaration",
            "declaration",
            "optional_parameter_declaration",
            "for_range_loop",
        }:
            typ = type_name(cur.child_by_field_name("type"))
            for decl in cur.children_by_field_name("declarator"):
                written = typ
                if not written and decl.type == "init_declarator":  # auto p = new T(...)
                    value = decl.child_by_field_name("value")
                    if value is not None and value.type == "new_expression":
                        written = type_name(value.child_by_field_name("type"))
                note(_declared_name(decl), written)
        if kind in {"lambda_expression", "function_definition"} and cur is not fn:
            continue
        stack.extend(cur.named_children)
    return found
