"""C# hooks: namespaces and usings, `///` XML docs, `: base(...)`, receivers typed by declaration.

Receivers are typed the way the Java hooks type them (`DeclaredTypes`, see lang_java.py): parameters,
locals (`Order o`, `var o = new Order()`), foreach/catch/using variables, fields and properties of the
enclosing types, record parameters. Namespaces are reported as ImportFacts of kind "package" naming the
types declared in them (block and file-scoped forms), usings as kind "using" (`using X.Y;` -> names
`*`; `using A = X.Y.Z;` -> module_alias "A") and "static" (`using static X.Y.T;`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nexusd.parse.facts import ImportFact
from nexusd.parse.hooks import _DOTTED, DOC_MAX, LanguageHooks, squash, text
from nexusd.parse.lang_java import DeclaredTypes

if TYPE_CHECKING:
    from tree_sitter import Node

_TYPE_DECLS = frozenset(
    {
        "class_declaration",
        "struct_declaration",
        "record_declaration",
        "interface_declaration",
        "enum_declaration",
    }
)
_NO_METHODS = frozenset(
    {"implicit_type", "predefined_type", "array_type", "tuple_type", "pointer_type", "function_pointer_type"}
)
_GENERIC_ARGS = re.compile(r"<[^<>]*>")
_XML_TAG = re.compile(r"<[^>]+>")
_ATTRIBUTES = re.compile(r"^(?:\[[^\]]*\]\s*)+")

_CS_LOCALS = """
(local_declaration_statement (variable_declaration type: (_) @type
  (variable_declarator name: (identifier) @name (_)? @value)))
(using_statement (variable_declaration type: (_) @type
  (variable_declarator name: (identifier) @name (_)? @value)))
(parameter type: (_) @type name: (identifier) @name)
(parameter !type name: (identifier) @name)
(foreach_statement type: (_) @type left: (identifier) @name)
(catch_declaration type: (_) @type name: (identifier) @name)
(declaration_expression type: (_) @type name: (identifier) @name)
(lambda_expression parameters: (implicit_parameter) @name)
"""


def cs_type(node: Node | None) -> str | None:
    """A declared type as a dotted name without type arguments, or None (`var`, predefined, arrays)."""
    if node is None or node.type in _NO_METHODS:
        return None
    if node.type == "nullable_type":
        return cs_type(node.named_children[0]) if node.named_child_count else None
    raw = "".join(text(node).split())
    while "<" in raw:
        stripped = _GENERIC_ARGS.sub("", raw)
        if stripped == raw:
            return None
        raw = stripped
    raw = raw.removeprefix("global::")
    if raw in {"var", "dynamic", "object", "string"} or not _DOTTED.fullmatch(raw):
        return None
    return raw


def _cs_value_type(node: Node | None) -> str | None:
    if node is None:
        return None
    if node.type in {"object_creation_expression", "cast_expression"}:
        return cs_type(node.child_by_field_name("type"))
    return None


def _cs_fields(decl: Node) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for child in decl.named_children:
        if child.type == "parameter_list":  # record / primary-constructor parameters
            for param in child.named_children:
                if param.type == "parameter":
                    out.append(
                        (text(param.child_by_field_name("name")), cs_type(param.child_by_field_name("type")))
                    )
    body = decl.child_by_field_name("body")
    if body is None:
        return out
    for member in body.named_children:
        if member.type in {"field_declaration", "event_field_declaration"}:
            for var in member.named_children:
                if var.type != "variable_declaration":
                    continue
                declared = cs_type(var.child_by_field_name("type"))
                for declarator in var.named_children:
                    if declarator.type == "variable_declarator":
                        value = declared
                        if value is None and declarator.named_child_count > 1:
                            value = _cs_value_type(declarator.named_children[-1])
                        out.append((text(declarator.child_by_field_name("name")), value))
        elif member.type == "property_declaration":
            out.append(
                (text(member.child_by_field_name("name")), cs_type(member.child_by_field_name("type")))
            )
    return out


def _name_of(node: Node | None) -> str:
    return "".join(text(node).split()) if node is not None else ""


class CSharpHooks(LanguageHooks):
    language = "csharp"
    self_names = frozenset({"this"})

    def __init__(self) -> None:
        self.declared = DeclaredTypes(
            "csharp",
            _CS_LOCALS,
            scopes=frozenset(
                {
                    "method_declaration",
                    "constructor_declaration",
                    "destructor_declaration",
                    "local_function_statement",
                    "lambda_expression",
                    "accessor_declaration",
                    "operator_declaration",
                }
            ),
            types=_TYPE_DECLS,
            type_of=cs_type,
            value_type=_cs_value_type,
            fields=_cs_fields,
        )

    def signature(self, node: Node, data: bytes) -> str:
        sig = _ATTRIBUTES.sub("", super().signature(node, data)).strip()
        return sig.removesuffix(";").removesuffix("=>").strip()

    def doc(self, node: Node) -> str:
        """`///` XML doc comment lines directly above the declaration, tags removed."""
        lines: list[str] = []
        prev = node.prev_named_sibling
        row = node.start_point[0]
        while prev is not None and prev.type == "comment" and prev.end_point[0] >= row - 1:
            raw = text(prev)
            if not raw.startswith("///"):
                break
            lines.insert(0, raw[3:].strip())
            row = prev.start_point[0]
            prev = prev.prev_named_sibling
        return squash(_XML_TAG.sub(" ", " ".join(lines)), DOC_MAX) if lines else ""

    def bases(self, node: Node | None) -> list[str]:
        if node is None:
            return []
        out: list[str] = []
        for child in node.named_children:
            if child.type != "base_list":
                continue
            for item in child.named_children:
                if item.type == "primary_constructor_base_type":  # class A(int x) : B(x)
                    item = item.named_children[0] if item.named_child_count else item
                name = cs_type(item)
                if name:
                    out.append(name)
        return out

    def exported(self, node: Node, name: str) -> bool:
        return not any(c.type == "modifier" and text(c) == "private" for c in node.children)

    def call_name(self, node: Node) -> str:
        kind = node.type
        if kind == "qualified_name":  # new A.B.Foo<T>(): the type
            return cs_type(node.child_by_field_name("name")) or text(node)
        if kind in {"base", "this"}:
            decl = _enclosing_type(node)
            if decl is None:
                return kind
            if kind == "this":
                return text(decl.child_by_field_name("name"))
            bases = self.bases(decl)
            return bases[0].rsplit(".", 1)[-1] if bases else "Object"
        return text(node)

    def receiver(self, node: Node) -> str:
        kind = node.type
        if kind == "identifier":
            name = text(node)
            declared, type_name = self.declared.lookup(node, name)
            return type_name if declared and type_name else name
        if kind == "this":
            return "this"
        if kind == "base":
            return "base"
        if kind == "qualified_name":
            return cs_type(node.child_by_field_name("qualifier")) or "<expr>"
        if kind == "member_access_expression":
            expr = node.child_by_field_name("expression")
            member = node.child_by_field_name("name")
            if expr is not None and expr.type == "this" and member is not None:
                declared, type_name = self.declared.lookup(node, text(member), fields_only=True)
                return type_name if declared and type_name else f"this.{text(member)}"
        if kind == "object_creation_expression":
            made = cs_type(node.child_by_field_name("type"))
            return f"{made}()" if made else "<expr>"
        if kind in {"invocation_expression", "parenthesized_expression"}:
            return "<expr>"
        return super().receiver(node)

    def imports(self, node: Node) -> list[ImportFact]:
        line = node.start_point[0] + 1
        if node.type == "using_directive":
            alias = node.child_by_field_name("name")
            target = next(
                (c for c in node.named_children if c.type in {"identifier", "qualified_name"} and c != alias),
                None,
            )
            if target is None:
                return []
            spec = _name_of(target).removeprefix("global::")
            if alias is not None:
                return [ImportFact(specifier=spec, line=line, kind="using", module_alias=text(alias))]
            if any(c.type == "static" for c in node.children):
                return [ImportFact(specifier=spec, names=[("*", "*")], line=line, kind="static")]
            return [ImportFact(specifier=spec, names=[("*", "*")], line=line, kind="using")]
        name = _name_of(node.child_by_field_name("name"))
        parts = [name]
        parent = node.parent
        while parent is not None:
            if parent.type == "namespace_declaration":
                parts.insert(0, _name_of(parent.child_by_field_name("name")))
            parent = parent.parent
        if node.type == "file_scoped_namespace_declaration":
            holder: Node | None = node.parent
        else:
            holder = node.child_by_field_name("body")
        types = [
            text(c.child_by_field_name("name"))
            for c in (holder.named_children if holder is not None else [])
            if c.type in _TYPE_DECLS
        ]
        return [
            ImportFact(specifier=".".join(parts), names=[(t, t) for t in types], line=line, kind="package")
        ]


def _enclosing_type(node: Node) -> Node | None:
    cur = node.parent
    while cur is not None and cur.type not in _TYPE_DECLS:
        cur = cur.parent
    return cur
