"""Per-language hooks: the small amount of knowledge a query cannot express.

The query file of a language says *where* definitions, calls and imports are; the generic engine in
extract.py turns captures into facts. What remains language-specific lives here, behind one interface:
how a docstring is written, what an import statement binds, what counts as exported, how a receiver
expression reads. Adding a language means a query file plus a subclass of `LanguageHooks` that overrides
only what differs from these defaults.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nexusd.parse.facts import ImportFact, TypeFact

if TYPE_CHECKING:
    from tree_sitter import Node

SIGNATURE_MAX = 200
DOC_MAX = 500

_CALL_NODES = frozenset({"call", "call_expression", "new_expression"})
_DOTTED = re.compile(r"[A-Za-z_$#][\w$]*(?:\.[A-Za-z_$#][\w$]*)*")


def text(node: Node | None) -> str:
    """Node text as str; invalid UTF-8 is replaced, never raised (real files are not all UTF-8)."""
    if node is None:
        return ""
    raw = node.text
    # `errors` passed by position: a keyword costs every call its parsing, and this is the hottest decode
    return raw.decode("utf-8", "replace") if raw else ""


def dotted(node: Node) -> str:
    """The node's text when it reads as a dotted name (`self`, `a.b`), else "<expr>"."""
    value = text(node)
    return value if _DOTTED.fullmatch(value) else "<expr>"


def squash(value: str, limit: int) -> str:
    """Collapse whitespace and bound the length: signatures and docs are for display and search."""
    value = " ".join(value.split())  # = re.sub(r"\s+", " ").strip(), ~5x faster (every symbol pays it)
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


def string_value(node: Node | None) -> str | None:
    """The literal value of a plain string node (no interpolation), or None."""
    if node is None or node.type not in {"string", "template_string"}:
        return None
    raw = text(node)
    if node.type == "template_string" and "${" in raw:
        return None
    for prefix_len in range(0, 3):
        head = raw[prefix_len:]
        for quote in ('"""', "'''", '"', "'", "`"):
            if head.startswith(quote) and head.endswith(quote) and len(head) >= 2 * len(quote):
                return head[len(quote) : -len(quote)]
    return None


class LanguageHooks:
    """Defaults that fit C-family grammars; subclasses override what their language does differently."""

    language = ""
    # Receivers that mean "the enclosing class instance" for receiver resolution.
    self_names: frozenset[str] = frozenset({"this"})

    def definition_kind(self, kind: str, parent_kind: str | None) -> str:
        """Adjust a captured kind by its container, e.g. a Python function inside a class is a method."""
        return kind

    def signature(self, node: Node, data: bytes) -> str:
        """Text of the definition up to its body: the part a reader scans to know how to call it."""
        body = self.body_of(node)
        start = node.start_byte
        end = body.start_byte if body is not None and body.start_byte > start else node.end_byte
        raw = data[start : min(end, start + 4 * SIGNATURE_MAX)].decode("utf-8", errors="replace")
        return squash(raw.rstrip().rstrip(":{").rstrip(), SIGNATURE_MAX)

    def body_of(self, node: Node) -> Node | None:
        body = node.child_by_field_name("body")
        if body is None:
            value = node.child_by_field_name("value")
            if value is not None:
                body = value.child_by_field_name("body")
        return body

    def doc(self, node: Node) -> str:
        """A leading block comment (`/** ... */`, `//`-runs) directly above the definition."""
        anchor = self.doc_anchor(node)
        prev = anchor.prev_named_sibling
        lines: list[str] = []
        expect_row = anchor.start_point[0]
        while prev is not None and prev.type == "comment" and prev.end_point[0] >= expect_row - 1:
            body = text(prev)
            lines.insert(0, body)
            if body.startswith("/*"):
                break
            expect_row = prev.start_point[0]
            prev = prev.prev_named_sibling
        if not lines:
            return ""
        cleaned = []
        for chunk in lines:
            for line in chunk.splitlines():
                line = line.strip()
                line = line.removeprefix("/**").removeprefix("/*").removesuffix("*/").removeprefix("//")
                cleaned.append(line.strip().removeprefix("*").strip())
        return squash(" ".join(c for c in cleaned if c), DOC_MAX)

    def repair(self, data: bytes) -> bytes | None:
        """For a file whose parse has errors: the same bytes with a grammar's known blind spot worked around,
        of the same length and line layout (so every position stays true), or None. extract.py keeps the
        repaired parse only when it has no error at all."""
        return None

    # Languages with block-scoped bindings set this and override `scope_end`.
    has_block_scopes = False

    def block_scope(self, node: Node, container: Node | None) -> tuple[int, int]:
        """The first and last lines (1-based) of the block that bounds the binding `node` defines, when that
        block lies inside `container` (the enclosing definition's node, None at file level) rather than being
        its body: a `const f = () => ...` in the body of an anonymous callback. (0, 0) when the binding is
        visible wherever its container's are."""
        return 0, 0

    # Languages whose members can be defined outside the type's body set this and override `owner`.
    has_owners = False

    def declarator_definition(self, node: Node) -> tuple[str, Node] | None:
        """For a `@definition.declarator` capture: (kind, definition node) of what the declarator `node`
        declares, or None when it declares nothing the graph keeps."""
        return None

    def owner(self, node: Node) -> str | None:
        """Dotted name of the type a definition written outside its body belongs to (`T` in Go's
        `func (t *T) m()`, `ns.T` in C++'s `void ns::T::m() {}`), else None."""
        return None

    def doc_anchor(self, node: Node) -> Node:
        """The node whose previous sibling holds the doc comment (wrappers like `export` move it)."""
        return node

    def bases(self, node: Node | None) -> list[str]:
        return []

    def exported(self, node: Node, name: str) -> bool:
        return True

    def receiver(self, node: Node) -> str:
        """Receiver as a dotted path ("self", "a.b"); anything else (calls, subscripts) is "<expr>"."""
        if node.type == "identifier":
            return node.text.decode("utf-8", "replace")  # type: ignore[union-attr]
        if node.type in _CALL_NODES:
            # `Foo().m()` / `new Foo().m()`: keep the constructor-shaped head, so `m` can be found on Foo.
            head = node.child_by_field_name("function") or node.child_by_field_name("constructor")
            if head is not None and head.type != "import" and _DOTTED.fullmatch(value := text(head)):
                return value + "()"
            return "<expr>"
        return dotted(node)

    def receiver_chain(self, node: Node) -> str | None:
        """The receiver as a type expression (`TypeFact.expr`) where `receiver` gives up or is a call."""
        return None

    def type_facts(self, node: Node) -> list[TypeFact]:
        """Bindings of the type environment a `@typing` capture declares (scopes are filled in later);
        with `typed_definitions`, every definition node is passed here too (saves a query match each)."""
        return []

    typed_definitions = False

    def exports(self, node: Node) -> list[tuple[str, str]]:
        """(exported name, local name) pairs an export statement declares; see FileFacts.exports."""
        return []

    def call_name(self, node: Node) -> str:
        return text(node)

    def imports(self, node: Node) -> list[ImportFact]:
        return []

    # Bare call names that need `special_call`: checked by set membership so ordinary calls pay nothing.
    special_names: frozenset[str] = frozenset()

    def special_call(self, call: Node, name: str) -> tuple[str | None, ImportFact | None, bool]:
        """For a bare call in `special_names`: (receiver, import it stands for, keep as a call?)."""
        return None, None, True

    def value_bases(self, node: Node) -> list[str]:
        """For a constant/variable: the names whose members it takes over (`{...schemas, ...checks}`)."""
        return []

    # Languages with overload stubs set this and override `is_stub`.
    has_stubs = False

    def is_stub(self, node: Node) -> bool:
        """Is this function/method definition an overload stub (`@overload`, a TS signature)?"""
        return False

    def stubs_possible(self, data: bytes) -> bool:
        """False when no definition of the file `data` can be a stub, so `is_stub` need not be asked for each
        (Python's looks at the definition's parent, which tree-sitter finds by walking down from the root)."""
        return True

    def keep_value_definition(self, node: Node) -> bool:
        """Is this top-level `name = <call>` a symbol of its own? (No for `const x = require('./x')`: the
        name is an import binding.)"""
        return True

    def dynamic_import(self, call: Node, source: Node) -> ImportFact | None:
        spec = string_value(source)
        if spec is None:
            return None
        return ImportFact(specifier=spec, line=call.start_point[0] + 1, kind="dynamic")
