"""Java hooks: packages and imports, Javadoc, `super(...)`/`this(...)`, and receivers typed by declaration.

Java calls mostly go through variables (`repo.save(order)`), so a receiver spelled as a variable name says
nothing a resolver can use. Java declares the type of every variable, though, so the hook reads it:
a receiver that is a parameter, a local (`Order o = ...`, `var o = new Order()`), a for/catch/resource
variable or a field of an enclosing class (`x` or `this.x`) is reported as its declared type (`Order`,
`a.b.Order`; generics dropped). The resolver then finds the method on that type and its supertypes. A
variable whose type cannot be read (`var x = f()`, a lambda parameter) keeps its name, so it stays an
honest unknown. `DeclaredTypes` is shared with the C# hooks, which differ only in node names.

The package is reported as an `ImportFact` of kind "package" whose names are the file's top-level types:
the resolver builds its package -> types table from those, and same-package names need no import.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from nexusd.parse import grammar
from nexusd.parse.facts import ImportFact
from nexusd.parse.hooks import DOC_MAX, LanguageHooks, squash, text

if TYPE_CHECKING:
    from tree_sitter import Node, Query

_ANNOTATIONS = re.compile(r"^(?:@(?!interface\b)[\w.]+(?:\s*\((?:[^()]|\([^()]*\))*\))?\s*)+")
_TYPE_DECLS = frozenset(
    {
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
    }
)
_NO_METHODS = frozenset({"integral_type", "floating_point_type", "boolean_type", "void_type", "array_type"})

# Declarations whose type a receiver can take, per callable body. Lambda parameters have no written
# type: they are recorded as unknown so that they shadow a same-name field instead of borrowing its type.
_JAVA_LOCALS = """
(local_variable_declaration type: (_) @type
  declarator: (variable_declarator name: (identifier) @name value: (_)? @value))
(formal_parameter type: (_) @type name: (identifier) @name)
(spread_parameter (_) @type (variable_declarator name: (identifier) @name))
(catch_formal_parameter (catch_type . (_) @type) name: (identifier) @name)
(enhanced_for_statement type: (_) @type name: (identifier) @name)
(resource type: (_) @type name: (identifier) @name value: (_)? @value)
(lambda_expression parameters: (identifier) @name)
(inferred_parameters (identifier) @name)
"""


def _java_type(node: Node | None) -> str | None:
    """A declared type as a dotted name without type arguments, or None (primitive, array, `var`)."""
    if node is None:
        return None
    kind = node.type
    if kind == "type_identifier":
        value = text(node)
        return None if value == "var" else value
    if kind == "scoped_type_identifier":
        return "".join(text(node).split())
    if kind in {"generic_type", "annotated_type"}:
        for child in node.named_children:
            if child.type in {"type_identifier", "scoped_type_identifier", "generic_type"}:
                return _java_type(child)
    return None


def _java_value_type(node: Node | None) -> str | None:
    """The type of an initializer when it says so itself: `new T(...)`, `(T) x`."""
    if node is None:
        return None
    if node.type == "object_creation_expression":
        return _java_type(node.child_by_field_name("type"))
    if node.type == "cast_expression":
        return _java_type(node.child_by_field_name("type"))
    return None


class DeclaredTypes:
    """Name -> declared type for the variables visible at a node: locals of the enclosing callables,
    then fields of the enclosing types. Tables are built once per callable / type node and cached by node
    (a node compares equal only within its own tree), so a file costs one query run per method.

    `None` as a type means "declared, type unknown": the name is a variable, but nothing is known of it.
    """

    def __init__(
        self,
        language: str,
        locals_query: str,
        scopes: frozenset[str],
        types: frozenset[str],
        type_of: Callable[[Node | None], str | None],
        value_type: Callable[[Node | None], str | None],
        fields: Callable[[Node], list[tuple[str, str | None]]],
    ) -> None:
        self.language = language
        self.locals_query = locals_query
        self.scopes = scopes
        self.types = types
        self.type_of = type_of
        self.value_type = value_type
        self.fields = fields
        self._tables: dict[Node, dict[str, str | None]] = {}
        self._compiled: Query | None = None

    def _query(self) -> Query:
        if self._compiled is None:
            self._compiled = grammar.query(self.language, self.locals_query)
        return self._compiled

    def lookup(self, node: Node, name: str, fields_only: bool = False) -> tuple[bool, str | None]:
        """(declared?, type) of `name` as seen from `node`."""
        cur = node.parent
        while cur is not None:
            kind = cur.type
            if kind in self.scopes and not fields_only:
                table = self._table(cur, self._locals)
                if name in table:
                    return True, table[name]
            elif kind in self.types:
                table = self._table(cur, self._fields)
                if name in table:
                    return True, table[name]
            cur = cur.parent
        return False, None

    def _table(self, node: Node, build: Callable[[Node], dict[str, str | None]]) -> dict[str, str | None]:
        table = self._tables.get(node)
        if table is None:
            if len(self._tables) > 256:
                self._tables.clear()  # nodes keep their trees alive: bound what is held
            table = self._tables[node] = build(node)
        return table

    def _locals(self, node: Node) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for _, caps in grammar.matches(self._query(), node):
            name = text(caps["name"][0])
            type_nodes = caps.get("type")
            declared = self.type_of(type_nodes[0]) if type_nodes else None
            if declared is None and "value" in caps:
                declared = self.value_type(caps["value"][0])
            if name in out and out[name] != declared:
                declared = None  # two declarations with different types in one body: unknown
            out[name] = declared
        return out

    def _fields(self, node: Node) -> dict[str, str | None]:
        return dict(self.fields(node))


def _java_fields(decl: Node) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    params = decl.child_by_field_name("parameters")  # record components are fields
    if params is not None:
        for param in params.named_children:
            if param.type == "formal_parameter":
                out.append(
                    (text(param.child_by_field_name("name")), _java_type(param.child_by_field_name("type")))
                )
    body = decl.child_by_field_name("body")
    if body is None:
        return out
    members = list(body.named_children)
    for member in list(members):
        if member.type == "enum_body_declarations":
            members.extend(member.named_children)
    for member in members:
        if member.type in {"field_declaration", "constant_declaration"}:
            declared = _java_type(member.child_by_field_name("type"))
            for declarator in member.children_by_field_name("declarator"):
                value = declared or _java_value_type(declarator.child_by_field_name("value"))
                out.append((text(declarator.child_by_field_name("name")), value))
    return out


def javadoc(node: Node) -> str:
    """The `/** ... */` comment directly above a declaration (annotations sit inside the declaration)."""
    prev = node.prev_named_sibling
    if prev is None or prev.type != "block_comment" or prev.end_point[0] < node.start_point[0] - 1:
        return ""
    raw = text(prev)
    if not raw.startswith("/**"):
        return ""
    lines = []
    for line in raw[3:].removesuffix("*/").splitlines():
        line = line.strip().removeprefix("*").strip()
        if line:
            lines.append(line)
    return squash(" ".join(lines), DOC_MAX)


class JavaHooks(LanguageHooks):
    language = "java"
    self_names = frozenset({"this"})

    def __init__(self) -> None:
        self.declared = DeclaredTypes(
            "java",
            _JAVA_LOCALS,
            scopes=frozenset(
                {
                    "method_declaration",
                    "constructor_declaration",
                    "compact_constructor_declaration",
                    "lambda_expression",
                    "static_initializer",
                }
            ),
            types=_TYPE_DECLS,
            type_of=_java_type,
            value_type=_java_value_type,
            fields=_java_fields,
        )

    def signature(self, node: Node, data: bytes) -> str:
        return _ANNOTATIONS.sub("", super().signature(node, data)).removesuffix(";").strip()

    def doc(self, node: Node) -> str:
        return javadoc(node)

    def bases(self, node: Node | None) -> list[str]:
        """Superclass first, then implemented / extended interfaces, as written without type arguments."""
        if node is None:
            return []
        out: list[str] = []
        for child in node.named_children:
            if child.type == "superclass":
                out.extend(_type_list(child))
            elif child.type in {"super_interfaces", "extends_interfaces"}:
                for item in child.named_children:
                    out.extend(_type_list(item) if item.type == "type_list" else [])
        return out

    def exported(self, node: Node, name: str) -> bool:
        for child in node.children:
            if child.type == "modifiers":
                return "private" not in text(child).split()
        return True

    def call_name(self, node: Node) -> str:
        kind = node.type
        if kind == "scoped_type_identifier":
            return text(node).rsplit(".", 1)[-1].strip()
        if kind in {"super", "this"}:  # super(...) / this(...): the constructor of the base / own class
            decl = _enclosing_type(node)
            if decl is None:
                return kind
            if kind == "this":
                return text(decl.child_by_field_name("name"))
            superclass = decl.child_by_field_name("superclass")
            names = _type_list(superclass) if superclass is not None else []
            return names[0].rsplit(".", 1)[-1] if names else "Object"
        return text(node)

    def receiver(self, node: Node) -> str:
        kind = node.type
        if kind == "identifier":
            name = text(node)
            declared, type_name = self.declared.lookup(node, name)
            return type_name if declared and type_name else name
        if kind in {"this", "super"}:
            return kind
        if kind == "scoped_type_identifier":  # new a.b.Foo(): the qualifier
            return "".join(text(node).split()).rsplit(".", 1)[0]
        if kind == "field_access":
            obj = node.child_by_field_name("object")
            field = node.child_by_field_name("field")
            if obj is not None and field is not None:
                if obj.type == "this" and field.type == "identifier":
                    declared, type_name = self.declared.lookup(node, text(field), fields_only=True)
                    return type_name if declared and type_name else f"this.{text(field)}"
                if field.type == "this":  # Outer.this.m(): a method of the named outer class
                    return text(obj)
        if kind == "object_creation_expression":
            made = _java_type(node.child_by_field_name("type"))
            return f"{made}()" if made else "<expr>"
        if kind == "parenthesized_expression" or kind == "method_invocation":
            return "<expr>"
        return super().receiver(node)

    def imports(self, node: Node) -> list[ImportFact]:
        line = node.start_point[0] + 1
        target = next((c for c in node.named_children if c.type in {"scoped_identifier", "identifier"}), None)
        if target is None:
            return []
        spec = "".join(text(target).split())
        if node.type == "package_declaration":
            names = [(n, n) for n in top_level_types(node.parent)]
            return [ImportFact(specifier=spec, names=names, line=line, kind="package")]
        is_static = any(c.type == "static" for c in node.children)
        if any(c.type == "asterisk" for c in node.children):
            return [
                ImportFact(
                    specifier=spec, names=[("*", "*")], line=line, kind="static" if is_static else "import"
                )
            ]
        head, _, last = spec.rpartition(".")
        if is_static:
            return [ImportFact(specifier=head, names=[(last, last)], line=line, kind="static")]
        return [ImportFact(specifier=spec, names=[(last, last)], line=line, kind="import")]


def top_level_types(root: Node | None) -> list[str]:
    if root is None:
        return []
    return [
        text(child.child_by_field_name("name"))
        for child in root.named_children
        if child.type in _TYPE_DECLS and child.child_by_field_name("name") is not None
    ]


def _type_list(node: Node) -> list[str]:
    out = []
    for child in node.named_children:
        name = _java_type(child)
        if name:
            out.append(name)
    return out


def _enclosing_type(node: Node) -> Node | None:
    cur = node.parent
    while cur is not None and cur.type not in _TYPE_DECLS:
        cur = cur.parent
    return cur
