"""Python hooks: docstrings, `import`/`from` bindings, `super()` receivers, methods inside classes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nexusd.parse.facts import ImportFact, TypeFact
from nexusd.parse.hooks import DOC_MAX, LanguageHooks, dotted, squash, text
from nexusd.parse.typeexpr import MAX_DEPTH, annotation

if TYPE_CHECKING:
    from tree_sitter import Node


class PythonHooks(LanguageHooks):
    language = "python"
    self_names = frozenset({"self", "cls"})

    def definition_kind(self, kind: str, parent_kind: str | None) -> str:
        # The query cannot tell a method from a function; the container can.
        if kind == "function" and parent_kind == "class":
            return "method"
        return kind

    has_stubs = True

    def stubs_possible(self, data: bytes) -> bool:
        return b"overload" in data  # what `is_stub` looks for, as written

    def is_stub(self, node: Node) -> bool:
        """`@overload` / `@typing.overload` / `@t.overload` above the def."""
        parent = node.parent
        if parent is None or parent.type != "decorated_definition":
            return False
        for child in parent.named_children:
            if child.type == "decorator" and child.named_child_count:
                expr = child.named_child(0)
                if expr.type in {"identifier", "attribute"} and (expr.text or b"").rsplit(b".", 1)[-1] == b"overload":
                    return True
        return False

    def signature(self, node: Node, data: bytes) -> str:
        sig = super().signature(node, data)
        return sig.removesuffix(":").rstrip()

    def doc(self, node: Node) -> str:
        """The docstring: the first statement of the body when it is a bare string."""
        body = node.child_by_field_name("body")
        if body is None or body.named_child_count == 0:
            return ""
        # `named_child(0)`, not `named_children[0]`: a class body's list would make a node per member.
        string = body.named_child(0)
        # Depending on the grammar version the string sits in an expression_statement or directly in the block.
        if string.type == "expression_statement" and string.named_child_count:
            string = string.named_child(0)
        if string is None or string.type != "string":
            return ""
        parts = [text(c) for c in string.named_children if c.type == "string_content"]
        return squash(" ".join(parts), DOC_MAX)

    def bases(self, node: Node | None) -> list[str]:
        """Base classes as written (`Base`, `mod.Base`); `Generic[T]` becomes `Generic`, keywords dropped."""
        if node is None:
            return []
        out: list[str] = []
        for child in node.named_children:
            if child.type in {"identifier", "attribute"}:
                out.append(text(child))
            elif child.type == "subscript":
                value = child.child_by_field_name("value")
                if value is not None and value.type in {"identifier", "attribute"}:
                    out.append(text(value))
        return out

    def exported(self, node: Node, name: str) -> bool:
        # Convention, not enforcement: a leading underscore is private, dunders are protocol methods.
        return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))

    special_names = frozenset({"super"})

    def special_call(self, call: Node, name: str) -> tuple[str | None, ImportFact | None, bool]:
        return None, None, False  # super() alone is not a call edge; it is the receiver of super().m()

    def receiver(self, node: Node) -> str:
        kind = node.type
        if kind == "identifier":
            return node.text.decode("utf-8", "replace")  # type: ignore[union-attr]
        if kind == "attribute":  # `self.x.m()`, `os.path.join()`: the commonest receiver after a name
            return dotted(node)
        if kind == "call":
            fn = node.child_by_field_name("function")
            if fn is not None and fn.type == "identifier" and fn.text == b"super":
                return "super"
        return super().receiver(node)

    typed_definitions = True

    def receiver_chain(self, node: Node) -> str | None:
        return py_expr(node) or None

    def type_facts(self, node: Node) -> list[TypeFact]:
        return _py_type_facts(node)

    def imports(self, node: Node) -> list[ImportFact]:
        line = node.start_point[0] + 1
        if node.type == "import_statement":
            out = []
            for child in node.children_by_field_name("name"):
                if child.type == "aliased_import":
                    mod = text(child.child_by_field_name("name"))
                    alias = text(child.child_by_field_name("alias"))
                    out.append(ImportFact(specifier=mod, line=line, kind="import", module_alias=alias))
                else:
                    out.append(ImportFact(specifier=text(child), line=line, kind="import"))
            return out
        if node.type == "import_from_statement":
            module = node.child_by_field_name("module_name")
            spec = text(module).replace(" ", "")
            names: list[tuple[str, str]] = []
            for child in node.children_by_field_name("name"):
                if child.type == "aliased_import":
                    names.append(
                        (text(child.child_by_field_name("name")), text(child.child_by_field_name("alias")))
                    )
                else:
                    names.append((text(child), text(child)))
            if any(c.type == "wildcard_import" for c in node.named_children):
                names.append(("*", "*"))
            return [ImportFact(specifier=spec, names=names, line=line, kind="from")]
        return []


# Decorators that leave a function a function (of the same return type); anything else may replace it.
_TRANSPARENT = frozenset(
    """staticmethod classmethod abstractmethod overload override wraps lru_cache cache final
    abstractproperty no_type_check coroutine""".split()
)
_PROPERTIES = frozenset({"property", "cached_property", "abstractproperty"})
_LITERALS = {
    "string": "{str}",
    "concatenated_string": "{str}",
    "list": "{list}",
    "list_comprehension": "{list}",
    "dictionary": "{dict}",
    "dictionary_comprehension": "{dict}",
    "set": "{set}",
    "set_comprehension": "{set}",
    "tuple": "{tuple}",
    "integer": "{int}",
    "float": "{float}",
    "true": "{bool}",
    "false": "{bool}",
}
_TRANSPARENT_EXPR = frozenset({"parenthesized_expression", "await"})
# Standard-library calls that return an object of their first argument's type (spelt through the module, so
# no repository function of the same bare name is mistaken for them).
_SAME_TYPE_CALLS = frozenset({b"copy.copy", b"copy.deepcopy", b"dataclasses.replace"})


def py_expr(node: Node | None) -> str:
    """An expression as `TypeFact.expr`: names, attributes and calls kept, `cast(T, v)` -> `{T}`, `copy.copy(v)`
    -> v's expression, literals -> their builtin type; anything else `?`. `none` gives "" (no binding worth recording). Iterative over
    the chain's depth, so a long chain cannot overflow the stack."""
    suffix: list[str] = []
    for _ in range(MAX_DEPTH):
        if node is None:
            return "?"
        kind = node.type
        if kind == "identifier":
            return text(node) + "".join(reversed(suffix)) if suffix else text(node)
        if kind == "attribute":
            suffix.append("." + text(node.child_by_field_name("attribute")))
            node = node.child_by_field_name("object")
        elif kind == "call":
            fn = node.child_by_field_name("function")
            fn_kind = fn.type if fn is not None else None
            if fn_kind == "identifier" or fn_kind == "attribute":
                # The function as written, compared as bytes: no decoding for every call (ASCII bytes decode
                # to themselves, and never to part of a replaced invalid sequence).
                written = fn.text or b""  # type: ignore[union-attr]
                if written.rsplit(b".", 1)[-1] == b"cast":
                    args = node.child_by_field_name("arguments")
                    if args is not None and args.named_child_count == 2:
                        return _chain(annotation(text(args.named_child(0))), suffix)
                if fn_kind == "identifier" and written == b"super":
                    return "?"
                if fn_kind == "attribute" and written in _SAME_TYPE_CALLS:
                    args = node.child_by_field_name("arguments")
                    first = args.named_child(0) if args is not None and args.named_child_count else None
                    if first is not None and first.type not in {"keyword_argument", "list_splat", "dictionary_splat"}:
                        node = first  # `copy.copy(x)` is of x's type
                        continue
            suffix.append("()")
            node = fn
        elif kind in _TRANSPARENT_EXPR:
            node = node.named_child(0) if node.named_child_count else None
        elif kind == "none":
            return "" if not suffix else "?"
        else:
            literal = _LITERALS.get(kind)
            return _chain(literal, suffix) if literal else "?"
    return "?"


def _chain(head: str, suffix: list[str]) -> str:
    return "?" if head == "?" else head + "".join(reversed(suffix))


def _names(node: Node | None) -> list[str]:
    """Identifiers bound by a target (`a`, `a, b`, `(a, [b, *c])`), without recursion."""
    out: list[str] = []
    todo = [node] if node is not None else []
    while todo and len(out) < 64:
        cur = todo.pop()
        if cur.type == "identifier":
            out.append(text(cur))
        elif cur.type in {"pattern_list", "tuple_pattern", "list_pattern", "tuple", "list", "list_splat_pattern",
                          "parenthesized_expression", "as_pattern_target", "expression_list"}:
            todo.extend(cur.named_children)
    return out


def _shadow(names: list[str]) -> list[TypeFact]:
    return [TypeFact("var", None, n) for n in names]


def _py_type_facts(node: Node) -> list[TypeFact]:
    kind = node.type
    if kind == "assignment":
        left = node.child_by_field_name("left")
        if left is None:
            return []
        declared = node.child_by_field_name("type")
        if declared is not None:
            expr = annotation(text(declared))
        else:
            right = node.child_by_field_name("right")
            while right is not None and right.type == "assignment":  # a = b = Foo()
                right = right.child_by_field_name("right")
            expr = py_expr(right)
        if not expr:
            return []
        if left.type == "identifier":
            return [TypeFact("var", None, text(left), expr)]
        if left.type == "attribute":
            obj = left.child_by_field_name("object")
            if obj is not None and obj.type == "identifier" and obj.text in (b"self", b"cls") and expr != "?":
                return [TypeFact("field", None, text(left.child_by_field_name("attribute")), expr)]
            return []
        return _shadow(_names(left))
    if kind == "function_definition":
        out: list[TypeFact] = []
        params = node.child_by_field_name("parameters")
        for param in params.named_children if params is not None else []:
            ptype = param.type
            if ptype == "identifier":
                if param.text not in (b"self", b"cls"):
                    out.append(TypeFact("var", None, text(param)))
                continue
            name_node = param.child_by_field_name("name")
            if name_node is None and ptype == "typed_parameter" and param.named_child_count:
                name_node = param.named_child(0)
            if name_node is None or name_node.type != "identifier":
                out.extend(_shadow(_names(param)))
                continue
            declared = param.child_by_field_name("type")
            expr = annotation(text(declared)) if declared is not None else "?"
            out.append(TypeFact("var", None, text(name_node), expr))
        returns = node.child_by_field_name("return_type")
        if returns is not None:
            expr = annotation(text(returns))
            if text(returns) != "None":
                out.append(TypeFact("return", None, "", expr))
        return out
    if kind == "return_statement":
        if not node.named_child_count:
            return []
        expr = py_expr(node.named_child(0))
        return [TypeFact("return", None, "", expr)] if expr else []
    if kind == "decorated_definition":
        definition = node.child_by_field_name("definition")
        if definition is None or definition.type != "function_definition":
            return []
        name = text(definition.child_by_field_name("name"))
        for deco in node.named_children:
            if deco.type != "decorator" or not deco.named_child_count:
                continue
            expr = py_expr(deco.named_child(0))
            head = expr.removesuffix("()").rsplit(".", 1)[-1]
            if head in _PROPERTIES:
                return [TypeFact("property", None, name)]
            if head in _TRANSPARENT or expr in ("", "?") or expr.endswith(("setter", "getter", "deleter")):
                continue
            return [TypeFact("decorated", None, name, expr + "()")]
        return []
    if kind == "as_pattern":
        parent = node.parent
        alias = node.child_by_field_name("alias")
        names = _names(alias)
        if parent is None or not node.named_child_count:
            return []
        if parent.type == "with_item" and len(names) == 1 and alias is not None and alias.named_child_count == 1 \
                and alias.named_children[0].type == "identifier":
            expr = py_expr(node.named_children[0])
            return [TypeFact("var", None, names[0], expr or "?")]
        if parent.type == "except_clause" and len(names) == 1:
            value = node.named_children[0]
            expr = "{" + text(value) + "}" if value.type in {"identifier", "attribute"} else "?"
            return [TypeFact("var", None, names[0], expr)]
        return _shadow(names)
    if kind in {"for_statement", "for_in_clause"}:
        return _shadow(_names(node.child_by_field_name("left")))
    if kind == "named_expression":
        expr = py_expr(node.child_by_field_name("value"))
        return [TypeFact("var", None, text(node.child_by_field_name("name")), expr or "?")]
    return []
