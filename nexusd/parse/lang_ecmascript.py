"""JavaScript / TypeScript / TSX hooks: ES imports and re-exports, `require`, `export` wrappers, JSDoc.

The three grammars share node names for everything used here, so one class serves all three; only the
`language` attribute differs.
"""

from __future__ import annotations

from tree_sitter import Node

from nexusd.parse.facts import ImportFact
from nexusd.parse.hooks import LanguageHooks, string_value, text

# Nodes that wrap a definition without changing it: the doc comment sits above the wrapper.
_WRAPPERS = frozenset({"export_statement", "lexical_declaration", "variable_declaration"})


class EcmaHooks(LanguageHooks):
    self_names = frozenset({"this"})

    def __init__(self, language: str) -> None:
        self.language = language

    def doc_anchor(self, node: Node) -> Node:
        anchor = node
        parent = node.parent
        while parent is not None and parent.type in _WRAPPERS:
            anchor = parent
            parent = parent.parent
        return anchor

    def exported(self, node: Node, name: str) -> bool:
        parent = node.parent
        if node.type == "pair" or (node.type == "method_definition" and parent is not None and parent.type == "object"):
            return True  # an object-literal member is as visible as the object holding it (checked by extract)
        return self.doc_anchor(node).type == "export_statement"

    def bases(self, node: Node | None) -> list[str]:
        """`extends` targets only: `implements` adds no inherited bodies, so it cannot resolve a call."""
        if node is None:
            return []
        out: list[str] = []
        children = [node] if node.type == "extends_type_clause" else node.named_children
        for child in children:
            if child.type == "extends_clause":
                value = child.child_by_field_name("value")
                if value is not None:
                    out.append(text(value))
            elif child.type == "extends_type_clause":
                out.extend(text(t) for t in child.children_by_field_name("type"))
            elif child.type in {"identifier", "member_expression"}:  # JS: class_heritage -> expression
                out.append(text(child))
        return [b.split("<", 1)[0] for b in out if b]

    has_stubs = True

    def is_stub(self, node: Node) -> bool:
        return node.type in {"function_signature", "method_signature"}

    def value_bases(self, node: Node) -> list[str]:
        """`const z = {...schemas, ...checks}`: z has the members of schemas and checks (spread order)."""
        value = node.child_by_field_name("value")
        if value is None or value.type != "object":
            return []
        out = []
        for item in value.named_children:
            if item.type == "spread_element" and item.named_child_count:
                inner = item.named_children[0]
                if inner.type in {"identifier", "member_expression"}:
                    out.append(text(inner))
        return out

    def keep_value_definition(self, node: Node) -> bool:
        value = node.child_by_field_name("value")
        if value is not None and value.type == "await_expression" and value.named_child_count:
            value = value.named_children[0]
        if value is None or value.type != "call_expression":
            return True
        fn = value.child_by_field_name("function")
        return not (fn is not None and (fn.type == "import" or (fn.type == "identifier" and fn.text == b"require")))

    def call_name(self, node: Node) -> str:
        if node.type == "super":
            return "constructor"
        return text(node)

    special_names = frozenset({"require", "constructor"})

    def special_call(self, call: Node, name: str) -> tuple[str | None, ImportFact | None, bool]:
        if name == "constructor":  # `super(...)`: call_name renamed it; it calls the base constructor
            return "super", None, True
        return None, self._require(call), False

    def exports(self, node: Node) -> list[tuple[str, str]]:
        if node.type == "assignment_expression":
            return _commonjs_exports(node)
        if node.child_by_field_name("source") is not None:
            return []  # `export ... from` is a re-export: an ImportFact of kind "reexport"
        out: list[tuple[str, str]] = []
        is_default = any(c.type == "default" for c in node.children)
        decl = node.child_by_field_name("declaration")
        value = node.child_by_field_name("value")
        if is_default:
            target = decl if decl is not None else value
            if target is not None:
                name = target if target.type == "identifier" else target.child_by_field_name("name")
                if name is not None:
                    out.append(("default", text(name)))
        for child in node.named_children:
            if child.type == "export_clause":
                for item in child.named_children:
                    if item.type == "export_specifier":
                        local = text(item.child_by_field_name("name"))
                        alias = item.child_by_field_name("alias")
                        out.append((text(alias) if alias is not None else local, local))
        return out

    def imports(self, node: Node) -> list[ImportFact]:
        line = node.start_point[0] + 1
        if node.type == "variable_declarator":
            return _destructure(node, line)
        spec = string_value(node.child_by_field_name("source"))
        if spec is None:
            return []
        if node.type == "export_statement":
            fact = ImportFact(specifier=spec, line=line, kind="reexport")
            for child in node.named_children:
                if child.type == "export_clause":
                    for item in child.named_children:
                        if item.type == "export_specifier":
                            name = text(item.child_by_field_name("name"))
                            alias = item.child_by_field_name("alias")
                            fact.names.append((name, text(alias) if alias is not None else name))
                elif child.type == "namespace_export":
                    fact.module_alias = text(child.named_children[0]) if child.named_child_count else None
            if not fact.names and fact.module_alias is None:
                fact.names.append(("*", "*"))
            return [fact]
        fact = ImportFact(specifier=spec, line=line, kind="import")
        for clause in node.named_children:
            if clause.type != "import_clause":
                continue
            for part in clause.named_children:
                if part.type == "identifier":
                    fact.names.append(("default", text(part)))
                elif part.type == "namespace_import":
                    fact.module_alias = text(part.named_children[0]) if part.named_child_count else None
                elif part.type == "named_imports":
                    for item in part.named_children:
                        if item.type == "import_specifier":
                            name = text(item.child_by_field_name("name"))
                            alias = item.child_by_field_name("alias")
                            fact.names.append((name, text(alias) if alias is not None else name))
        return [fact]

    def _require(self, call: Node) -> ImportFact | None:
        """`require('./x')`, binding whatever the surrounding declarator names."""
        args = call.child_by_field_name("arguments")
        if args is None or args.named_child_count == 0:
            return None
        spec = string_value(args.named_children[0])
        if spec is None:
            return None
        fact = ImportFact(specifier=spec, line=call.start_point[0] + 1, kind="require")
        parent = call.parent
        if parent is not None and parent.type == "variable_declarator":
            target = parent.child_by_field_name("name")
            if target is not None and target.type == "identifier":
                fact.module_alias = text(target)
            elif target is not None and target.type == "object_pattern":
                for item in target.named_children:
                    if item.type == "shorthand_property_identifier_pattern":
                        fact.names.append((text(item), text(item)))
                    elif item.type == "pair_pattern":
                        key = text(item.child_by_field_name("key"))
                        value = item.child_by_field_name("value")
                        if value is not None and value.type == "identifier":
                            fact.names.append((key, text(value)))
        return fact


def _destructure(node: Node, line: int) -> list[ImportFact]:
    """`const { a, b: c } = ns`: names taken out of another binding; when `ns` is an imported namespace they
    are that module's members (kind "destructure", the specifier is the source binding's name)."""
    value = node.child_by_field_name("value")
    target = node.child_by_field_name("name")
    if value is None or target is None or value.type != "identifier" or target.type != "object_pattern":
        return []
    fact = ImportFact(specifier=text(value), line=line, kind="destructure")
    for item in target.named_children:
        if item.type == "shorthand_property_identifier_pattern":
            fact.names.append((text(item), text(item)))
        elif item.type == "pair_pattern":
            key = item.child_by_field_name("key")
            local = item.child_by_field_name("value")
            if key is not None and local is not None and local.type == "identifier":
                fact.names.append((text(key), text(local)))
    return [fact] if fact.names else []


def _commonjs_exports(node: Node) -> list[tuple[str, str]]:
    """`module.exports = {a, b: c}` / `module.exports = X` / `exports.x = y` as (exported, local) pairs."""
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if left is None or right is None:
        return []
    obj = text(left.child_by_field_name("object"))
    prop = text(left.child_by_field_name("property"))
    if obj == "module" and prop == "exports":
        if right.type == "identifier":
            return [("default", text(right))]
        if right.type == "object":
            out = []
            for item in right.named_children:
                if item.type == "shorthand_property_identifier":
                    out.append((text(item), text(item)))
                elif item.type == "pair":
                    value = item.child_by_field_name("value")
                    if value is not None and value.type == "identifier":
                        out.append((text(item.child_by_field_name("key")), text(value)))
            return out
        return []
    if obj == "exports" and right.type == "identifier":
        return [(prop, text(right))]
    return []
