"""JavaScript / TypeScript / TSX hooks: ES imports and re-exports, `require`, `export` wrappers, JSDoc.

The three grammars share node names for everything used here, so one class serves all three; only the
`language` attribute differs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nexusd.parse.facts import ImportFact, TypeFact
from nexusd.parse.hooks import LanguageHooks, string_value, text
from nexusd.parse.typeexpr import MAX_DEPTH, annotation

if TYPE_CHECKING:
    from tree_sitter import Node

# Nodes that wrap a definition without changing it: the doc comment sits above the wrapper.
_WRAPPERS = frozenset({"export_statement", "lexical_declaration", "variable_declaration"})
# What bounds a binding: `var` the nearest function; `let`, `const`, `function` and `class` the nearest block
# (modules are strict code, where a function declared in a block is the block's).
_FUNCTIONS = frozenset({
    "arrow_function", "function_expression", "function", "function_declaration", "generator_function",
    "generator_function_declaration", "method_definition", "class_static_block",
})  # fmt: skip
_BLOCKS = _FUNCTIONS | {"statement_block", "switch_body"}


# A generic call signature on its own line after another member (`<T>(v: T): Box<T>` in an interface): the
# TypeScript grammar reads it as type arguments of the previous member's type and fails. The `<` may stand alone
# on its line with the type parameters below it (prettier's layout of a long list). Unrepaired, the rest of the
# file lands in one ERROR block and loses its top-level constants (`export const createSlice = build()`).
_GENERIC_SIGNATURE_LINE = re.compile(rb"(?<=[^\s=(,{\[:?|&])([ \t]*\n(?:[ \t]*\n)*[ \t]*)[ \t](?=<\s*[A-Za-z_])")


class EcmaHooks(LanguageHooks):
    self_names = frozenset({"this"})

    def __init__(self, language: str) -> None:
        self.language = language

    def repair(self, data: bytes) -> bytes | None:
        """TypeScript only (in TSX and JavaScript a line opening with `<` is JSX): the last indentation
        space before such a generic call signature becomes `;`, the member separator the grammar needs."""
        if self.language != "typescript" or b"\n" not in data:
            return None
        fixed = _GENERIC_SIGNATURE_LINE.sub(rb"\1;", data)
        return fixed if fixed != data else None

    has_block_scopes = True

    def block_scope(self, node: Node, container: Node | None) -> tuple[int, int]:
        bounds = _FUNCTIONS if node.parent is not None and node.parent.type == "variable_declaration" else _BLOCKS
        up = node.parent
        while up is not None and up.type != "program" and up != container:
            if up.type in bounds:
                # the body of the container itself (`function f() {...}`, `const f = () => {...}`): the binding
                # is visible wherever the container's members are
                over = up.parent
                while over is not None and over != container and over.type in _FUNCTIONS:
                    over = over.parent
                if over is not None and over == container:
                    return 0, 0
                return up.start_point[0] + 1, up.end_point[0] + 1
            up = up.parent
        return 0, 0

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
                inner = item.named_child(0)
                if inner.type in {"identifier", "member_expression"}:
                    out.append(text(inner))
        return out

    def keep_value_definition(self, node: Node) -> bool:
        value = node.child_by_field_name("value")
        if value is not None and value.type == "await_expression" and value.named_child_count:
            value = value.named_child(0)
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

    typed_definitions = True

    def receiver_chain(self, node: Node) -> str | None:
        return es_expr(node) or None

    def type_facts(self, node: Node) -> list[TypeFact]:
        return _es_type_facts(node)

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
                    fact.module_alias = text(child.named_child(0)) if child.named_child_count else None
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
                    fact.module_alias = text(part.named_child(0)) if part.named_child_count else None
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
        spec = string_value(args.named_child(0))
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


_ES_LITERALS = {
    "string": "{String}",
    "template_string": "{String}",
    "number": "{Number}",
    "array": "{Array}",
    "regex": "{RegExp}",
    "true": "{Boolean}",
    "false": "{Boolean}",
}
_ES_TRANSPARENT = frozenset({"parenthesized_expression", "await_expression", "non_null_expression", "satisfies_expression"})
# Function nodes that are symbols (their returns are the symbol's); an anonymous callback is not one.
_NAMED_FUNCTIONS = frozenset(
    {"function_declaration", "generator_function_declaration", "method_definition", "function_signature"}
)
_ANON_FUNCTIONS = frozenset({"arrow_function", "function_expression", "generator_function", "function"})
_SYMBOL_HOLDERS = frozenset({"variable_declarator", "public_field_definition", "field_definition"})


def es_expr(node: Node | None) -> str:
    """An expression as `TypeFact.expr` (see lang_python.py's `py_expr`): `new X()` -> `X()`,
    `v as T` / `<T>v` -> `{T}`, literals -> their global class; `null`/`undefined` give ""."""
    suffix: list[str] = []
    for _ in range(MAX_DEPTH):
        if node is None:
            return "?"
        kind = node.type
        if kind == "identifier" or kind == "this":
            return text(node) + "".join(reversed(suffix))
        if kind == "member_expression":
            prop = node.child_by_field_name("property")
            if prop is None:
                return "?"
            suffix.append("." + text(prop))
            node = node.child_by_field_name("object")
        elif kind == "call_expression":
            suffix.append("()")
            node = node.child_by_field_name("function")
            if node is not None and node.type in {"import", "super"}:
                return "?"
        elif kind == "new_expression":
            suffix.append("()")
            node = node.child_by_field_name("constructor")
        elif kind in _ES_TRANSPARENT:
            node = node.named_child(0) if node.named_child_count else None
        elif kind == "as_expression":
            if node.named_child_count < 2 or node.named_children[-1].type == "const":
                node = node.named_child(0) if node.named_child_count else None
                continue
            return _es_chain(annotation(text(node.named_children[-1]), "this"), suffix)
        elif kind == "type_assertion":
            args = node.named_child(0) if node.named_child_count else None
            if args is None or args.type != "type_arguments" or not args.named_child_count:
                return "?"
            return _es_chain(annotation(text(args.named_child(0)), "this"), suffix)
        elif kind in {"null", "undefined"}:
            return "" if not suffix else "?"
        else:
            literal = _ES_LITERALS.get(kind)
            return _es_chain(literal, suffix) if literal else "?"
    return "?"


def _es_chain(head: str, suffix: list[str]) -> str:
    return "?" if head == "?" else head + "".join(reversed(suffix))


def _es_names(node: Node | None) -> list[str]:
    """Identifiers a binding pattern binds (`a`, `{a, b: c}`, `[a, ...b]`), without recursion."""
    out: list[str] = []
    todo = [node] if node is not None else []
    while todo and len(out) < 64:
        cur = todo.pop()
        kind = cur.type
        if kind in {"identifier", "shorthand_property_identifier_pattern"}:
            out.append(text(cur))
        elif kind == "pair_pattern":
            value = cur.child_by_field_name("value")
            if value is not None:
                todo.append(value)
        elif kind == "assignment_pattern" or kind == "object_assignment_pattern":
            left = cur.child_by_field_name("left")
            if left is not None:
                todo.append(left)
        elif kind in {"object_pattern", "array_pattern", "rest_pattern"}:
            todo.extend(cur.named_children)
    return out


def _is_symbol_function(fn: Node) -> bool:
    if fn.type in _NAMED_FUNCTIONS:
        return True
    parent = fn.parent
    return parent is not None and parent.type in _SYMBOL_HOLDERS


def _returns(fn: Node, is_symbol: bool) -> list[TypeFact]:
    """The declared return type of `fn` when it is a symbol's (`is_symbol`: `_is_symbol_function(fn)`)."""
    declared = fn.child_by_field_name("return_type")
    if declared is None or not is_symbol or not declared.named_child_count:
        return []
    return [TypeFact("return", None, "", annotation(text(declared.named_child(0)), "this", promise=True))]


def _param_nodes(fn: Node) -> list[Node]:
    """A function's parameters in order, a TS `this` parameter left out (it takes no argument)."""
    params = fn.child_by_field_name("parameters")
    if params is None:
        single = fn.child_by_field_name("parameter")  # `x => ...`
        return [single] if single is not None else []
    out = []
    for param in params.named_children:
        if param.type in {"comment", "decorator"}:
            continue
        pattern = param.child_by_field_name("pattern")
        if pattern is not None and pattern.type == "this":
            continue
        out.append(param)
    return out


def _function_type(declared: Node | None) -> Node | None:
    """The function type an annotation names: `(a: A) => R`, also parenthesised or `| undefined`."""
    node = declared.named_child(0) if declared is not None and declared.named_child_count else None
    for _ in range(4):
        if node is None:
            return None
        if node.type == "function_type":
            return node
        if node.type == "parenthesized_type":
            node = node.named_child(0) if node.named_child_count else None
        elif node.type == "union_type":
            kinds = [c for c in node.named_children if text(c) not in {"undefined", "null", "void"}]
            node = kinds[0] if len(kinds) == 1 else None
        else:
            return None
    return None


def _callback_site(fn: Node) -> str | None:
    """For an anonymous function given as an argument, `callee~i` (the callee as an expression, `i` the
    argument's position), else None: its untyped parameters take the types the callee declares for them."""
    args = fn.parent
    call = args.parent if args is not None and args.type == "arguments" else None
    if args is None or call is None or call.type not in {"call_expression", "new_expression"}:
        return None
    callee = call.child_by_field_name("function" if call.type == "call_expression" else "constructor")
    head = es_expr(callee)
    if not head or head == "?" or "~" in head or "{" in head:
        return None
    position = [c for c in args.named_children if c.type != "comment"].index(fn)
    return f"{head}~{position}"


def _params(fn: Node, is_symbol: bool) -> list[TypeFact]:
    """The parameters of `fn` (`is_symbol`: `_is_symbol_function(fn)`) as bindings of its scope."""
    out: list[TypeFact] = []
    site = _callback_site(fn) if fn.type in _ANON_FUNCTIONS and not is_symbol else None
    for position, param in enumerate(_param_nodes(fn)):
        if param.type in {"required_parameter", "optional_parameter"}:
            pattern = param.child_by_field_name("pattern")
            declared = param.child_by_field_name("type")
        elif param.type == "identifier":
            pattern, declared = param, None
        else:
            out.extend(TypeFact("var", None, n) for n in _es_names(param))
            continue
        if pattern is None or pattern.type != "identifier":
            out.extend(TypeFact("var", None, n) for n in _es_names(pattern))
            continue
        name = text(pattern)
        if declared is not None and declared.named_child_count:
            expr = annotation(text(declared.named_child(0)), "this")
            callback = _function_type(declared)
            if callback is not None:  # what a callback given here receives: `init: (s: Subscriber<R>) => void`
                for inner, cb_param in enumerate(_param_nodes(callback)):
                    cb_type = cb_param.child_by_field_name("type")
                    if cb_type is not None and cb_type.named_child_count:
                        cb_expr = annotation(text(cb_type.named_child(0)), "this")
                        if cb_expr != "?":
                            out.append(TypeFact("callback", None, f"{position}:{inner}", cb_expr))
        elif site is not None and param.type != "optional_parameter":
            expr = f"{site}:{position}"  # typed by the callee's declaration of this callback (types.py)
        else:
            expr = "?"
        out.append(TypeFact("var", None, name, expr))
        if expr != "?" and "~" not in expr and any(c.type in {"accessibility_modifier", "readonly"} for c in param.children):
            out.append(TypeFact("field", None, name, expr))  # a parameter property
    return out


def _es_type_facts(node: Node) -> list[TypeFact]:
    kind = node.type
    if kind == "variable_declarator":
        name = node.child_by_field_name("name")
        declared = node.child_by_field_name("type")
        value = node.child_by_field_name("value")
        if name is None:
            return []
        if value is not None and value.type == "call_expression" and text(value.child_by_field_name("function")) == "require":
            return []  # an import binding (ImportFact), not a value
        if name.type != "identifier":
            return [TypeFact("var", None, n) for n in _es_names(name)]
        if value is not None and value.type in _ANON_FUNCTIONS:
            return []  # a function symbol of its own
        if declared is not None and declared.named_child_count:
            expr = annotation(text(declared.named_child(0)), "this")
        else:
            expr = es_expr(value) if value is not None else "?"
        return [TypeFact("var", None, text(name), expr)] if expr else []
    if kind in _NAMED_FUNCTIONS or kind in _ANON_FUNCTIONS:
        # Asked once: for an anonymous function it looks at the parent, which tree-sitter finds from the root.
        is_symbol = _is_symbol_function(node)
        out = _params(node, is_symbol) + _returns(node, is_symbol)
        body = node.child_by_field_name("body")
        if kind == "arrow_function" and body is not None and body.type != "statement_block" and is_symbol:
            expr = es_expr(body)  # `() => new X()`: the expression is the return value
            if expr:
                out.append(TypeFact("return", None, "", expr))
        if kind == "method_definition" and node.child_count and node.child(0).type == "get":  # type: ignore[union-attr]
            out.append(TypeFact("property", None, text(node.child_by_field_name("name"))))
        return out
    if kind == "return_statement":
        if not node.named_child_count:
            return []
        fn = node.parent
        for _ in range(MAX_DEPTH * 4):
            if fn is None or fn.type in _NAMED_FUNCTIONS or fn.type in _ANON_FUNCTIONS:
                break
            fn = fn.parent
        if fn is None or not _is_symbol_function(fn):
            return []
        expr = es_expr(node.named_child(0))
        return [TypeFact("return", None, "", expr)] if expr else []
    if kind in {"public_field_definition", "field_definition"}:
        name = node.child_by_field_name("name") or node.child_by_field_name("property")
        declared = node.child_by_field_name("type")
        value = node.child_by_field_name("value")
        if name is None or (value is not None and value.type in _ANON_FUNCTIONS):
            return []
        if declared is not None and declared.named_child_count:
            expr = annotation(text(declared.named_child(0)), "this")
        else:
            expr = es_expr(value) if value is not None else "?"
        return [TypeFact("field", None, text(name), expr)] if expr and expr != "?" else []
    if kind == "assignment_expression":
        left = node.child_by_field_name("left")
        expr = es_expr(node.child_by_field_name("right"))
        if left is None or not expr:
            return []
        if left.type == "identifier":
            return [TypeFact("var", None, text(left), expr)]
        if left.type == "member_expression" and expr != "?":
            obj = left.child_by_field_name("object")
            if obj is not None and obj.type == "this":
                return [TypeFact("field", None, text(left.child_by_field_name("property")), expr)]
        return []
    if kind == "for_in_statement":
        return [TypeFact("var", None, n) for n in _es_names(node.child_by_field_name("left"))]
    if kind == "catch_clause":
        return [TypeFact("var", None, n) for n in _es_names(node.child_by_field_name("parameter"))]
    return []
