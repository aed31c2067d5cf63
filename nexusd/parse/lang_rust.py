"""Rust hooks: `use` trees, `mod foo;`, impl blocks, `///` docs, `pub`, typed receivers.

Imports. Every leaf of a `use` tree becomes one binding: `use crate::a::{b, c as d};` is one ImportFact
with specifier "crate::a" and names [(b, b), (c, d)]; `use a::b::*` binds ("*", "*"); `use a::{self}`
binds `a` from the parent path. `pub use` is kind "reexport". `mod foo;` (no body) is kind "mod": it
declares that foo.rs / foo/mod.rs is a child module, and the resolver links the two files.

Receivers. Path calls keep their path with a trailing `::` ("Self::", "Circle::", "crate::util::"), so
they never read like a variable. Method calls read "self", "self.field", or `x@Type` when the variable's
type is written at its declaration in the enclosing function: a typed parameter (`x: &Circle`), a typed
`let`, a struct literal (`Circle { .. }`) or a path call (`let c = Circle::new()` -> `c@Circle::new()`,
the resolver reads new's return type). Nothing is inferred beyond that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nexusd.parse.facts import ImportFact
from nexusd.parse.hooks import DOC_MAX, LanguageHooks, squash, text

if TYPE_CHECKING:
    from tree_sitter import Node

_TYPE_WRAPPERS = frozenset({"reference_type", "pointer_type", "mutable_specifier"})
_SKIP_BETWEEN_DOC = frozenset({"attribute_item"})


def type_name(node: Node | None) -> str:
    """`&mut crate::a::Circle<T>` -> "crate::a::Circle"; "" for tuples, slices, fn types, `impl T`."""
    while node is not None and node.type in _TYPE_WRAPPERS:
        node = node.child_by_field_name("type")
    if node is None:
        return ""
    if node.type == "generic_type":
        return type_name(node.child_by_field_name("type"))
    if node.type in {"type_identifier", "scoped_type_identifier", "identifier", "scoped_identifier"}:
        return text(node)
    return ""


class RustHooks(LanguageHooks):
    language = "rust"
    self_names = frozenset({"self"})

    def __init__(self) -> None:
        self._scope_key: tuple[int, int, int] | None = None
        self._scope_types: dict[str, str] = {}

    def definition_kind(self, kind: str, parent_kind: str | None) -> str:
        if kind == "function" and parent_kind in {"impl", "trait"}:
            return "method"
        return kind

    def doc(self, node: Node) -> str:
        """`///` lines (or a `/** */` block) directly above, attributes like #[derive] skipped."""
        prev = node.prev_named_sibling
        while prev is not None and prev.type in _SKIP_BETWEEN_DOC:
            prev = prev.prev_named_sibling
        lines: list[str] = []
        while prev is not None and prev.type in {"line_comment", "block_comment"}:
            body = text(prev)
            if body.startswith("///") and not body.startswith("////"):
                lines.insert(0, body[3:].strip())
            elif body.startswith("/**") and not lines:
                inner = body[3:].removesuffix("*/")
                lines.insert(0, " ".join(ln.strip().lstrip("*").strip() for ln in inner.splitlines()))
                break
            else:
                break
            prev = prev.prev_named_sibling
        return squash(" ".join(ln for ln in lines if ln), DOC_MAX)

    def signature(self, node: Node, data: bytes) -> str:
        return super().signature(node, data).removesuffix(";").rstrip()

    def bases(self, node: Node | None) -> list[str]:
        if node is None:
            return []
        if node.type == "trait_bounds":
            return [n for n in (type_name(c) for c in node.named_children) if n]
        name = type_name(node)
        return [name] if name else []

    def exported(self, node: Node, name: str) -> bool:
        if node.type == "impl_item":
            return True
        if any(c.type == "visibility_modifier" for c in node.children):
            return True
        # Trait items and trait-impl methods are as visible as the trait.
        parent = node.parent.parent if node.parent is not None else None
        return parent is not None and (
            parent.type == "trait_item"
            or (parent.type == "impl_item" and parent.child_by_field_name("trait") is not None)
        )

    # ---- imports -----------------------------------------------------------------------------------------
    def imports(self, node: Node) -> list[ImportFact]:
        line = node.start_point[0] + 1
        if node.type == "mod_item":
            return [ImportFact(specifier=text(node.child_by_field_name("name")), line=line, kind="mod")]
        kind = "reexport" if any(c.type == "visibility_modifier" for c in node.children) else "use"
        groups: dict[str, list[tuple[str, str]]] = {}
        arg = node.child_by_field_name("argument")
        if arg is not None:
            _use_tree(arg, "", groups)
        return [
            ImportFact(specifier=spec, names=names, line=line, kind=kind) for spec, names in groups.items()
        ]

    # ---- receivers -----------------------------------------------------------------------------------------
    def receiver(self, node: Node) -> str:
        parent = node.parent
        if parent is not None and parent.type in {"scoped_identifier", "generic_function"}:
            # The path of a path call: `Self::new`, `a::b::f`, `Vec::<T>::new`.
            written = text(node).replace(" ", "")
            if "<" in written:
                written = _strip_generics(written)
            return f"{written}::" if written else "<expr>"
        kind = node.type
        if parent is not None and parent.type == "token_tree":
            return self._macro_receiver(node)
        if kind == "self":
            return "self"
        if kind == "identifier":
            var = text(node)
            typ = self._local_type(node, var)
            return f"{var}@{typ}" if typ else var
        if kind == "field_expression":
            value = node.child_by_field_name("value")
            field = node.child_by_field_name("field")
            if value is not None and field is not None and field.type == "field_identifier":
                head = self.receiver(value)
                if head != "<expr>" and not head.endswith("::"):
                    path, at, typ = head.partition("@")
                    return f"{path}.{text(field)}{at}{typ}"
            return "<expr>"
        if kind == "call_expression":
            fn = node.child_by_field_name("function")
            if fn is not None and fn.type == "scoped_identifier":
                return f"_@{text(fn).replace(' ', '')}()"  # Circle::new().area()
        if kind == "struct_expression":
            name = type_name(node.child_by_field_name("name"))
            return f"_@{name}" if name else "<expr>"
        if kind in {"reference_expression", "parenthesized_expression"} and node.named_child_count:
            return self.receiver(node.named_children[-1])
        return "<expr>"

    def _macro_receiver(self, node: Node) -> str:
        """`a.b` before `.m(...)` inside a macro's token tree, read back over `.`-separated names."""
        parts = [text(node)]
        prev = node.prev_sibling
        while prev is not None and prev.type == ".":
            before = prev.prev_sibling
            if before is None or before.type not in {"identifier", "self"}:
                break
            parts.insert(0, text(before))
            prev = before.prev_sibling
        if prev is not None and prev.type == ".":
            return "<expr>"  # `f().a.m()`: the chain starts with something other than a name
        head = parts[0]
        typ = "" if head == "self" else self._local_type(node, head)
        path = ".".join(parts)
        return f"{path}@{typ}" if typ else path

    def _local_type(self, ident: Node, name: str) -> str:
        fn = ident.parent
        while fn is not None and fn.type != "function_item":
            fn = fn.parent
        if fn is None:
            return ""
        key = (fn.id, fn.start_byte, fn.end_byte)
        if key != self._scope_key:
            self._scope_key = key
            self._scope_types = _declared_types(fn)
        return self._scope_types.get(name, "")


def _strip_generics(value: str) -> str:
    out = []
    depth = 0
    for ch in value:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).replace("::::", "::").strip(":")


def _use_tree(node: Node, prefix: str, groups: dict[str, list[tuple[str, str]]]) -> None:
    """Flatten a `use` tree into specifier -> [(name, alias)] (iterative over lists, shallow recursion)."""
    kind = node.type
    if kind in {"identifier", "crate", "self", "super", "metavariable"}:
        name = text(node)
        if name == "self" and prefix:  # `use a::b::{self}` binds b
            head, _, last = prefix.rpartition("::")
            groups.setdefault(head, []).append((last, last))
        else:
            groups.setdefault(prefix, []).append((name, name))
    elif kind == "scoped_identifier":
        head = text(node.child_by_field_name("path")).replace(" ", "")
        leaf = text(node.child_by_field_name("name"))
        spec = f"{prefix}::{head}" if prefix and head else prefix or head
        groups.setdefault(spec, []).append((leaf, leaf))
    elif kind == "use_as_clause":
        target = node.child_by_field_name("path")
        alias = text(node.child_by_field_name("alias"))
        if target is None:
            return
        if target.type == "scoped_identifier":
            inner = text(target.child_by_field_name("path")).replace(" ", "")
            spec = f"{prefix}::{inner}" if prefix and inner else prefix or inner
            groups.setdefault(spec, []).append((text(target.child_by_field_name("name")), alias))
        else:
            groups.setdefault(prefix, []).append((text(target), alias))
    elif kind == "use_wildcard":
        inner = text(node.named_children[0]).replace(" ", "") if node.named_child_count else ""
        spec = f"{prefix}::{inner}" if prefix and inner else prefix or inner
        groups.setdefault(spec, []).append(("*", "*"))
    elif kind == "scoped_use_list":
        inner = text(node.child_by_field_name("path")).replace(" ", "")
        spec = f"{prefix}::{inner}" if prefix and inner else prefix or inner
        lst = node.child_by_field_name("list")
        if lst is not None:
            for child in lst.named_children:
                _use_tree(child, spec, groups)
    elif kind == "use_list":
        for child in node.named_children:
            _use_tree(child, prefix, groups)


def _declared_types(fn: Node) -> dict[str, str]:
    """name -> written type for the parameters and `let`s of one function (ambiguous names dropped)."""
    found: dict[str, str] = {}
    dropped: set[str] = set()

    def note(name: str, typ: str) -> None:
        if not typ or name in dropped:
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
        if kind == "parameter" or kind == "let_declaration":
            pattern = cur.child_by_field_name("pattern")
            if pattern is not None and pattern.type == "mut_pattern" and pattern.named_child_count:
                pattern = pattern.named_children[-1]
            if pattern is not None and pattern.type == "identifier":
                typ = type_name(cur.child_by_field_name("type"))
                if not typ and kind == "let_declaration":
                    typ = _expr_type(cur.child_by_field_name("value"))
                note(text(pattern), typ)
        if kind in {"function_item", "closure_expression"} and cur is not fn:
            continue
        stack.extend(cur.named_children)
    return found


def _expr_type(node: Node | None) -> str:
    while node is not None and node.type in {"reference_expression", "try_expression"}:
        node = node.named_children[-1] if node.named_child_count else None
    if node is None:
        return ""
    if node.type == "struct_expression":
        return type_name(node.child_by_field_name("name"))
    if node.type == "call_expression":
        fn = node.child_by_field_name("function")
        if fn is not None and fn.type in {"scoped_identifier", "identifier"}:
            return f"{text(fn).replace(' ', '')}()"
    return ""
