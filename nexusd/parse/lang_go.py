"""Go hooks: receiver methods, import specs, embedded fields, `// Name ...` doc comments, typed receivers.

Typed receivers: Go code calls methods on variables far more than on packages, and a variable's type is
usually written right there (`func (s *Store) Save()`, `u := &User{}`, `var b Buffer`, `st := NewStore()`,
parameters). `receiver` reads the declaration of a receiver identifier inside the enclosing function and
writes the type beside the name: `s@Store`, `st@NewStore()` (the result type of calling NewStore, looked up
by the resolver), `u.owner@models.User` (field `owner` of a `models.User`). The resolver (nexusd/resolve/go.py) strips it again for raw strings.
No inference beyond the declaration itself: no flow, no generics, no multi-value results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nexusd.parse.facts import ImportFact
from nexusd.parse.hooks import SIGNATURE_MAX, LanguageHooks, squash, text

if TYPE_CHECKING:
    from tree_sitter import Node

_FUNCS = frozenset({"function_declaration", "method_declaration", "func_literal"})
_TOP_FUNCS = frozenset({"function_declaration", "method_declaration"})


def type_name(node: Node | None) -> str:
    """`*pkg.T[int]` -> "pkg.T"; "" for types with no single named head (maps, funcs, channels)."""
    while node is not None and node.type in {"pointer_type", "parenthesized_type"}:
        node = node.named_children[-1] if node.named_child_count else None
    if node is None:
        return ""
    if node.type == "generic_type":
        return type_name(node.child_by_field_name("type"))
    if node.type in {"type_identifier", "qualified_type"}:
        return text(node)
    return ""


class GoHooks(LanguageHooks):
    language = "go"
    self_names = frozenset()
    has_owners = True

    def __init__(self) -> None:
        self._scope_key: tuple[int, int, int] | None = None
        self._scope_types: dict[str, str] = {}

    def owner(self, node: Node) -> str | None:
        if node.type != "method_declaration":
            return None
        recv = node.child_by_field_name("receiver")
        if recv is None:
            return None
        for param in recv.named_children:
            if param.type == "parameter_declaration":
                return type_name(param.child_by_field_name("type")) or None
        return None

    def doc_anchor(self, node: Node) -> Node:
        parent = node.parent
        if node.type == "type_spec" and parent is not None and parent.type == "type_declaration":
            return parent
        return node

    def signature(self, node: Node, data: bytes) -> str:
        if node.type == "type_spec":
            kind = node.child_by_field_name("type")
            head = kind.type.removesuffix("_type") if kind is not None else ""
            if head not in {"struct", "interface"}:
                head = text(kind)
            return squash(f"type {text(node.child_by_field_name('name'))} {head}", SIGNATURE_MAX)
        return super().signature(node, data)

    def bases(self, node: Node | None) -> list[str]:
        """Embedded types: struct fields without a name, interface type elements."""
        if node is None:
            return []
        out: list[str] = []
        for child in node.named_children:
            if child.type == "field_declaration" and child.child_by_field_name("name") is None:
                name = type_name(child.child_by_field_name("type"))
            elif child.type == "type_elem" and child.named_child_count == 1:
                name = type_name(child.named_children[0])
            else:
                continue
            if name:
                out.append(name)
        return out

    def exported(self, node: Node, name: str) -> bool:
        return name[:1].isupper()

    def imports(self, node: Node) -> list[ImportFact]:
        out: list[ImportFact] = []
        stack = [node]
        while stack:
            cur = stack.pop()
            if cur.type == "import_spec":
                path = cur.child_by_field_name("path")
                spec = text(path).strip('"`')
                if not spec:
                    continue
                alias_node = cur.child_by_field_name("name")
                alias = text(alias_node) if alias_node is not None else None
                fact = ImportFact(specifier=spec, line=cur.start_point[0] + 1, kind="import")
                if alias == ".":
                    fact.names.append(("*", "*"))
                else:
                    fact.module_alias = alias
                out.append(fact)
            else:
                stack.extend(reversed(cur.named_children))
        return out

    def receiver(self, node: Node) -> str:
        kind = node.type
        if kind == "identifier":
            name = text(node)
            typ = self._local_type(node, name)
            return f"{name}@{typ}" if typ else name
        if kind == "selector_expression":
            operand = node.child_by_field_name("operand")
            field = node.child_by_field_name("field")
            if operand is not None and field is not None:
                head = self.receiver(operand)
                if head != "<expr>":
                    path, at, typ = head.partition("@")
                    return f"{path}.{text(field)}{at}{typ}"
            return "<expr>"
        if kind == "call_expression":
            fn = node.child_by_field_name("function")
            if fn is not None and fn.type in {"identifier", "selector_expression"}:
                value = text(fn)
                if fn.type == "identifier" or value.count(".") == 1:
                    return f"_@{value}()"  # NewStore().Save(): m on the result type of NewStore
            return "<expr>"
        if kind == "parenthesized_expression" and node.named_child_count == 1:
            return self.receiver(node.named_children[0])
        if kind == "composite_literal" or (kind == "unary_expression" and node.named_child_count == 1):
            lit = node if kind == "composite_literal" else node.named_children[0]
            if lit.type == "composite_literal":
                typ = type_name(lit.child_by_field_name("type"))
                return f"_@{typ}" if typ else "<expr>"
        return "<expr>"

    # ---- local declarations ------------------------------------------------------------------------------
    def _local_type(self, ident: Node, name: str) -> str:
        fn = ident.parent
        while fn is not None and fn.type not in _TOP_FUNCS:
            fn = fn.parent
        if fn is None:
            return ""
        key = (fn.id, fn.start_byte, fn.end_byte)
        if key != self._scope_key:
            self._scope_key = key
            self._scope_types = _declared_types(fn)
        return self._scope_types.get(name, "")


def _declared_types(fn: Node) -> dict[str, str]:
    """name -> type written at its declaration, for receiver, parameters and locals of one function.

    A name declared twice with different types (shadowing in two blocks) is dropped: a guess is worse
    than no type, because the resolver trusts a type.
    """
    found: dict[str, str] = {}
    dropped: set[str] = set()

    def note(name: str, typ: str) -> None:
        if not name or name == "_" or not typ or name in dropped:
            return
        if found.get(name, typ) != typ:
            dropped.add(name)
            found.pop(name, None)
            return
        found[name] = typ

    stack = [fn]
    while stack:
        cur = stack.pop()
        kind = cur.type
        if kind == "parameter_declaration" or kind == "var_spec":
            typ = type_name(cur.child_by_field_name("type"))
            names = cur.children_by_field_name("name")
            if typ:
                for n in names:
                    note(text(n), typ)
            elif kind == "var_spec":
                values = cur.child_by_field_name("value")
                if values is not None and len(names) == 1 and values.named_child_count == 1:
                    note(text(names[0]), _expr_type(values.named_children[0]))
        elif kind == "short_var_declaration":
            left = cur.child_by_field_name("left")
            right = cur.child_by_field_name("right")
            if left is not None and right is not None:
                lhs = [c for c in left.named_children]
                rhs = [c for c in right.named_children]
                if len(lhs) == len(rhs):
                    for n, v in zip(lhs, rhs, strict=True):
                        if n.type == "identifier":
                            note(text(n), _expr_type(v))
                elif len(rhs) == 1 and lhs and lhs[0].type == "identifier":
                    note(text(lhs[0]), _expr_type(rhs[0]))  # `v, err := NewX()`: the first result
        if kind in _FUNCS and cur is not fn and kind != "func_literal":
            continue
        stack.extend(cur.named_children)
    return found


def _expr_type(node: Node) -> str:
    if node.type == "unary_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type == "composite_literal":
        return type_name(node.child_by_field_name("type"))
    if node.type == "call_expression":
        fn = node.child_by_field_name("function")
        if fn is not None and fn.type == "identifier":
            name = text(fn)
            if name == "new":
                args = node.child_by_field_name("arguments")
                return (
                    type_name(args.named_children[0]) if args is not None and args.named_child_count else ""
                )
            return f"{name}()"
        if fn is not None and fn.type == "selector_expression":
            operand = fn.child_by_field_name("operand")
            if operand is not None and operand.type == "identifier":
                return f"{text(fn)}()"
    return ""
