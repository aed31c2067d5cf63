"""Python hooks: docstrings, `import`/`from` bindings, `super()` receivers, methods inside classes."""

from __future__ import annotations

from tree_sitter import Node

from nexusd.parse.facts import ImportFact
from nexusd.parse.hooks import DOC_MAX, LanguageHooks, squash, text


class PythonHooks(LanguageHooks):
    language = "python"
    self_names = frozenset({"self", "cls"})

    def definition_kind(self, kind: str, parent_kind: str | None) -> str:
        # The query cannot tell a method from a function; the container can.
        if kind == "function" and parent_kind == "class":
            return "method"
        return kind

    has_stubs = True

    def is_stub(self, node: Node) -> bool:
        """`@overload` / `@typing.overload` / `@t.overload` above the def."""
        parent = node.parent
        if parent is None or parent.type != "decorated_definition":
            return False
        for child in parent.named_children:
            if child.type == "decorator" and child.named_child_count:
                expr = child.named_children[0]
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
        string = body.named_children[0]
        # Depending on the grammar version the string sits in an expression_statement or directly in the block.
        if string.type == "expression_statement" and string.named_child_count:
            string = string.named_children[0]
        if string.type != "string":
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
        if kind == "call":
            fn = node.child_by_field_name("function")
            if fn is not None and fn.type == "identifier" and fn.text == b"super":
                return "super"
        return super().receiver(node)

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
