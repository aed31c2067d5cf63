"""Bytes in, `FileFacts` out: the one entry point of parsing, and it never raises.

Capture contract (shared by every `queries/<language>.scm`)
-----------------------------------------------------------
==========================  =====================================================================
capture                     meaning
==========================  =====================================================================
``@definition.<kind>``      a definition node; ``<kind>`` is function, method, class, interface,
                            type, enum, namespace, property_function (an object-literal member
                            holding a function), constant / variable (a top-level name bound to a
                            call, ``new``, an object literal) or overload (a signature or stub
                            with an implementation elsewhere); hooks may refine (Python functions
                            in a class become methods); ARCHITECTURE.md lists the kinds
``@definition.declarator``  a function declarator: the hooks name the definition it declares, and
                            its kind (`LanguageHooks.declarator_definition`; C++, whose declarator
                            shapes would otherwise be one costly pattern each)
``@name``                   the definition's name node (same match)
``@bases``                  optional: the node listing base classes / extended interfaces
``@reference.call``         a call node
``@reference.new``          a constructor call node (``new X()``)
``@call.name``              the called name node (``foo`` in ``a.b.foo()``)
``@call.receiver``          optional: the receiver expression (``a.b``, ``self``, ``super()``)
``@import``                 an import / re-export statement, decoded by the language hook
``@import.dynamic``         ``import('./x')``, with ``@import.source`` the string argument
``@export``                 a statement that exports under another name (``export default X``,
                            ``export {a as b}``, ``module.exports = ...``), decoded by the hook
``@typing``                 a node binding a name of a scope's type environment (an assignment, a
                            return, a decorated definition...), decoded by the hook into
                            ``TypeFact``s; definitions themselves (parameters, return types) are
                            passed to the same hook when it sets ``typed_definitions``
==========================  =====================================================================

Captures whose names start with ``_`` are helpers for predicates and are ignored here.

How the engine works: one query pass collects definitions, calls and imports; definitions are sorted by
byte offset and swept with a stack to find each one's container (qualified names, method-ness), then
calls are swept the same way to find their enclosing symbol. No recursion over the tree anywhere, so a
10,000-deep nesting cannot overflow the Python stack.

Why it never raises: broken code is the normal state of a file being edited. A syntax error is a
`Diagnostic("syntax-error")` next to whatever could be extracted; an internal failure is a
`Diagnostic("extract-failed")` with no symbols, so one bad file never aborts a sync.

Parsers and compiled queries are cached per process (compiling a query costs milliseconds; a daemon
parses thousands of files).
"""

from __future__ import annotations

import codecs
import gc
import importlib
import posixpath
import re
from collections.abc import Iterator
from functools import cache
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from nexusd.parse import grammar
from nexusd.parse.facts import (
    DIGEST_SIZE,
    CallFact,
    Diagnostic,
    FileFacts,
    SymbolFact,
    TypeFact,
    content_digest,
    content_hash,
)
from nexusd.parse.hooks import LanguageHooks, string_value
from nexusd.parse.languages import LANGUAGES, Language, classify_role, language_for, parsed_language

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Query, Tree

QUERY_DIR = Path(__file__).with_name("queries")
MAX_BYTES = 4 * 1024 * 1024  # bigger "source" files are generated or vendored: recorded, not parsed
BINARY_PROBE = 8192
MODULE_QN = "<module>"



def load_hooks(lang: Language) -> LanguageHooks:
    """The hooks a language record names (`module.Class` under nexusd.parse). A class serving several languages
    has no `language` of its own and is built with the record's name (`EcmaHooks("tsx")`)."""
    module, _, name = lang.hooks.rpartition(".")
    cls = getattr(importlib.import_module(f"nexusd.parse.{module}"), name)
    hooks: LanguageHooks = cls() if cls.language else cls(lang.name)
    return hooks


# Built at import, as the explicit table was: a parser process pays for the imports before it reports ready.
HOOKS: dict[str, LanguageHooks] = {lang.name: load_hooks(lang) for lang in LANGUAGES}
_GRAMMAR = {lang.name: lang.grammar_name for lang in LANGUAGES}
_QUERY_FILE = {lang.name: lang.query_file for lang in LANGUAGES}


class _Def(NamedTuple):
    start: int
    end: int
    node: Node
    kind: str
    name: str
    bases: Node | None


def supported_languages() -> list[str]:
    """Languages with both a query file and hooks: the parse allow-list."""
    return sorted(lang for lang in HOOKS if (QUERY_DIR / _QUERY_FILE[lang]).is_file())


@cache
def _parser(language: str) -> Parser:
    return grammar.parser(_GRAMMAR[language])


@cache
def _query_source(name: str) -> str:
    """A query file's text, with `; include: other.scm` lines replaced by that file (tsx reuses typescript)."""
    lines = []
    for line in (QUERY_DIR / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("; include:"):
            lines.append(_query_source(line.split(":", 1)[1].strip()))
        else:
            lines.append(line)
    return "\n".join(lines)


@cache
def _query(language: str) -> Query:
    return grammar.query(_GRAMMAR[language], _query_source(_QUERY_FILE[language]))


def definition_query(language: str) -> Query:
    """The language's query with only its definition patterns (what a file's symbols need, without calls,
    imports or type facts): the history layer names the symbols of old file versions with it."""
    return grammar.query_subset(_GRAMMAR[language], _query_source(_QUERY_FILE[language]), "@definition.")


def warm(languages: list[str] | None = None) -> None:
    """Build parsers and compile queries up front, so the first real file does not pay for it."""
    for language in languages or supported_languages():
        _parser(language)
        _query(language)


def _redact_symbols(facts: FileFacts) -> None:
    """Secrets in signatures (a key as a default argument) and docs (a token in a docstring) never reach the
    graph, the facts cache or an agent: the history layer's rules (history/redact.py), applied at extraction."""
    from ..history.redact import anchored, redact

    # One regex pass over the file's signatures and docs finds the strings that hold an anchor (the common
    # case: none); only those go through `redact`, which tests each detector's anchors in turn (~14 % of the
    # standard library's extraction when every signature and doc went through it).
    texts = [text or "" for sym in facts.symbols for text in (sym.signature, sym.doc)]
    for index in anchored(texts):
        sym = facts.symbols[index // 2]
        if index % 2 == 0:
            sym.signature = redact(sym.signature)[0]
        else:
            sym.doc = redact(sym.doc)[0]


def extract(path: str, data: bytes, digest: str | None = None) -> FileFacts:
    """Facts for one file (`digest`: its `content_hash`, when the caller has it). Never raises; problems become
    diagnostics on the returned facts."""
    path = path.replace("\\", "/")
    facts = FileFacts(
        path=path,
        language=language_for(path),
        role=classify_role(path),
        hash=digest or content_hash(data),
        line_count=_line_count(data),
    )
    language = parsed_language(path)
    if language is None or language not in HOOKS:
        return facts
    if len(data) > MAX_BYTES:
        facts.diagnostics.append(Diagnostic(path, "warning", "too-large", f"{len(data)} bytes, not parsed"))
        return facts
    if b"\0" in data[:BINARY_PROBE]:
        facts.diagnostics.append(
            Diagnostic(path, "warning", "binary", "NUL bytes in a source file, not parsed")
        )
        return facts
    # Extraction allocates ~10^5 small, acyclic objects per MB. When a caller retains every file's facts
    # (a cold index), cyclic-GC passes over the growing heap are costly (stdlib, all facts retained:
    # 3.1 MB/s with GC on vs 4.3 MB/s off). Nothing here makes cycles that outlive the call, so
    # collection is paused for its duration and resumed as it was.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        _extract_into(facts, language, data)
        _redact_symbols(facts)
    except Exception as exc:  # noqa: BLE001 - the crash barrier of parsing: report, never propagate
        facts.symbols.clear()
        facts.symbol_hashes = b""
        facts.imports.clear()
        facts.calls = []
        facts.diagnostics.append(
            Diagnostic(path, "error", "extract-failed", f"{type(exc).__name__}: {exc}"[:300])
        )
    finally:
        if gc_was_enabled:
            gc.enable()
    return facts


def _line_count(data: bytes) -> int:
    if not data:
        return 0
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


# PEP 263: a coding declaration in a comment on line 1 or 2.
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def source_as_utf8(data: bytes) -> bytes:
    """A Python file in the encoding its PEP 263 declaration names (`# coding: latin-1`), re-encoded as UTF-8,
    which is what tree-sitter reads: otherwise `café_helper` in latin-1 is parsed as `_helper`. Anything that is
    already UTF-8, declares it, or cannot be decoded as declared is returned unchanged. Lines do not move."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data
    for line in data.split(b"\n", 2)[:2]:
        match = _CODING.match(line)
        if match is None:
            continue
        name = match.group(1).decode("ascii", "replace")
        try:
            if codecs.lookup(name).name == "utf-8":
                return data
            return data.decode(name).encode("utf-8")
        except (LookupError, UnicodeError):
            return data
    return data


def _extract_into(facts: FileFacts, language: str, data: bytes) -> None:
    hooks = HOOKS[language]
    if language == "python" and b"coding" in data[:400]:
        data = source_as_utf8(data)
    tree = _parser(language).parse(data)
    root = tree.root_node
    # The bytes `tree` was parsed from: a node's text is `source[node.start_byte : node.end_byte]`, the same
    # bytes as `node.text` at a third of its cost (the binding builds a memoryview and a slice per call).
    source = data
    if root.has_error:
        fixed = hooks.repair(data)
        if fixed is not None and len(fixed) == len(data):
            retry = _parser(language).parse(fixed)
            if not retry.root_node.has_error:  # same offsets: content hashes still read the file's own bytes
                tree, root, source = retry, retry.root_node, fixed
    if root.has_error:
        line, what = _first_error(root)
        facts.diagnostics.append(Diagnostic(facts.path, "error", "syntax-error", what, line))

    defs: list[_Def] = []
    calls: list[tuple[int, CallFact]] = []
    types: list[tuple[int, list[TypeFact]]] = []  # (start byte of the binding node, the facts it declares)
    roles = _ROLES.setdefault(language, {})
    special = hooks.special_names
    receiver_of = hooks.receiver
    type_facts = hooks.type_facts
    typed_definitions = hooks.typed_definitions
    call_name = hooks.call_name if type(hooks).call_name is not LanguageHooks.call_name else None
    for pattern, caps in grammar.matches(_query(language), root):
        role = roles.get(pattern)
        if role is None:
            role = roles[pattern] = _role(caps)
        kind, main = role
        node = caps[main][0]
        if kind == "call" or kind == "new":
            name_node = caps["call.name"][0]
            if call_name:
                name = call_name(name_node)
            else:
                name = source[name_node.start_byte : name_node.end_byte].decode("utf-8", "replace")
            recv_nodes = caps.get("call.receiver")
            receiver = receiver_of(recv_nodes[0]) if recv_nodes else None
            chain = None
            if receiver is not None and (receiver == "<expr>" or receiver.endswith(")")):
                chain = hooks.receiver_chain(recv_nodes[0])  # type: ignore[index]
                if chain == receiver or chain == "?":
                    chain = None
            if receiver is None and name in special:
                receiver, imp, keep = hooks.special_call(node, name)
                if imp is not None:
                    facts.imports.append(imp)
                if not keep:
                    continue
            calls.append(
                (node.start_byte, CallFact(None, name, receiver, node.start_point[0] + 1, kind == "new", chain))
            )
        elif kind == "typing":
            declared = type_facts(node)
            if declared:
                types.append((node.start_byte, declared))
        elif kind == "import":
            facts.imports.extend(hooks.imports(node))
        elif kind == "export":
            facts.exports.update(hooks.exports(node))
        elif kind == "import.dynamic":
            fact = hooks.dynamic_import(node, caps["import.source"][0])
            if fact is not None:
                facts.imports.append(fact)
        elif kind:
            definition = _definition(hooks, kind, node, caps)
            if definition is None:
                continue
            if typed_definitions and definition.kind not in _VALUE_KINDS:  # (a value's binding: its @typing node)
                declared = type_facts(definition.node)
                if declared:
                    types.append((definition.start, declared))
            defs.append(definition)

    facts.symbols.append(_module_symbol(facts, data))
    spans = _build_symbols(facts, hooks, data, defs)
    spans = _drop_rebindings(facts, spans)
    # (`spans` follow the symbols after the module's one for one, and a definition's own bytes are its hash's)
    facts.symbol_hashes = b"".join([_file_digest(facts, data), *(content_digest(data[a:b]) for a, b, _ in spans)])
    _attach_calls(facts, calls, spans)
    if types:
        # A name bound to a value (`x = A()`, `const c = new Client()`) is a symbol, but not a scope of the type
        # environment: the binding belongs to the scope around it, where `x.m()` looks it up.
        values = {s.qualified_name for s in facts.symbols if s.kind in _VALUE_KINDS}
        _attach_types(facts, types, [sp for sp in spans if sp[2] not in values] if values else spans)
    facts.imports.sort(key=lambda i: i.line)


def _definition(hooks: LanguageHooks, kind: str, node: Node, caps: dict[str, list[Node]]) -> _Def | None:
    """One definition match as a `_Def`, or None when it has no name or is a value binding the hooks drop."""
    name_nodes = caps.get("name")
    if not name_nodes:
        return None
    if kind == "declarator":  # (C++: a function declarator, whose definition the hooks find)
        lifted = hooks.declarator_definition(node)
        if lifted is None:
            return None
        kind, node = lifted
    if kind in _VALUE_KINDS and not hooks.keep_value_definition(node):
        return None
    name_node = name_nodes[0]
    name = (name_node.text or b"").decode("utf-8", "replace")
    if name_node.type == "string":  # `{'on-click'() {}}`: the key's value, not its quotes
        name = string_value(name_node) or name
    bases = caps.get("bases")
    return _Def(node.start_byte, node.end_byte, node, kind, name, bases[0] if bases else None)


def definition_symbols(path: str, language: str, data: bytes) -> list[SymbolFact]:
    """The symbols of one file from its definition patterns only (no calls, imports or type facts), named as
    `extract` names them. May raise."""
    hooks, data, defs = _definitions_of(language, data)
    facts = FileFacts(path=path, language=language, role="", hash="", line_count=0)
    _build_symbols(facts, hooks, data, defs)
    return facts.symbols


def definition_ranges(language: str, data: bytes, tree: Tree | None = None) -> list[tuple[int, int, str]]:
    """(first line, last line, qualified name) of each symbol `definition_symbols` would return, in its order,
    without building the symbols (signature, doc, bases, hash): the history layer names the symbols of every
    old version of a changed file with it. `tree`: `data` already parsed (by `parse_tree`). May raise."""
    hooks, data, defs = _definitions_of(language, data, tree)
    return [(d.node.start_point[0] + 1, d.node.end_point[0] + 1, qn) for d, _, _, _, qn in _sweep(hooks, defs)]


def parse_tree(language: str, data: bytes, old: Tree | None = None) -> Tree:
    """`data` parsed as `definition_ranges` parses it; `old`: an earlier version's tree, already `edit`ed to
    `data`'s coordinates, whose unchanged subtrees the parser reuses."""
    if language == "python" and b"coding" in data[:400]:
        data = source_as_utf8(data)
    parser = _parser(language)
    return parser.parse(data, old) if old is not None else parser.parse(data)


def _definitions_of(language: str, data: bytes, tree: Tree | None = None) -> tuple[LanguageHooks, bytes, list[_Def]]:
    hooks = HOOKS[language]
    if language == "python" and b"coding" in data[:400]:
        data = source_as_utf8(data)
    root = (tree or _parser(language).parse(data)).root_node
    defs: list[_Def] = []
    roles = _ROLES.setdefault(language, {})
    for pattern, caps in grammar.matches(definition_query(language), root):
        role = roles.get(pattern)
        if role is None:
            role = roles[pattern] = _role(caps)
        kind, main = role
        if not kind or kind in ("call", "new", "typing", "import", "export", "import.dynamic"):
            continue
        definition = _definition(hooks, kind, caps[main][0], caps)
        if definition is not None:
            defs.append(definition)
    return hooks, data, defs


# Definitions that are a name bound to a value (see `LanguageHooks.keep_value_definition`).
_VALUE_KINDS = frozenset({"constant", "variable"})

# Per language: query pattern index -> (role, main capture name), learnt from the first match of a pattern.
_ROLES: dict[str, dict[int, tuple[str, str]]] = {}


def _role(caps: dict[str, list[Node]]) -> tuple[str, str]:
    """What a pattern produces, read from its capture names (the contract in this module's docstring)."""
    for cap_name in caps:
        if cap_name.startswith("definition."):
            return cap_name[11:], cap_name
        if cap_name == "reference.call":
            return "call", cap_name
        if cap_name == "reference.new":
            return "new", cap_name
        if cap_name in ("import", "import.dynamic", "export", "typing"):
            return cap_name, cap_name
    return "", next(iter(caps))


def _file_digest(facts: FileFacts, data: bytes) -> bytes:
    """The module symbol's content hash: its file's (`facts.hash`, as the caller gave it or made here)."""
    try:
        digest = bytes.fromhex(facts.hash)
    except ValueError:
        digest = b""
    return digest if len(digest) == DIGEST_SIZE else content_digest(data)


def _module_symbol(facts: FileFacts, data: bytes) -> SymbolFact:
    stem = posixpath.splitext(posixpath.basename(facts.path))[0]
    if stem in {"__init__", "index"}:
        stem = posixpath.basename(posixpath.dirname(facts.path)) or stem
    return SymbolFact(
        kind="module",
        name=stem,
        qualified_name=MODULE_QN,
        start_line=1,
        end_line=max(1, facts.line_count),
    )


def _build_symbols(
    facts: FileFacts, hooks: LanguageHooks, data: bytes, defs: list[_Def]
) -> list[tuple[int, int, str]]:
    """The symbols of `defs`, in `_sweep`'s order: their parents, kinds, occurrences and block scopes.

    Returns (start byte, end byte, qualified name) per symbol, in document order, for `_attach_calls`.
    """
    spans: list[tuple[int, int, str]] = []
    made: list[tuple[SymbolFact, Node]] = []  # in the sweep's order: what `_sweep`'s container positions index
    seen: dict[tuple[str, str], int] = {}
    has_stubs = hooks.has_stubs and hooks.stubs_possible(data)
    has_scopes = hooks.has_block_scopes
    stubs: list[SymbolFact] = []
    for d, up, parent_qn, owned, qn in _sweep(hooks, defs):
        parent, container = made[up] if up >= 0 else (None, None)
        kind = hooks.definition_kind(d.kind, "class" if owned else parent.kind if parent else None)
        key = (kind, qn)
        occurrence = seen.get(key, 0)
        seen[key] = occurrence + 1
        node = d.node
        sym = SymbolFact(
            kind=kind,
            name=d.name,
            qualified_name=qn,
            start_line=node.start_point[0] + 1,
            end_line=node.end_point[0] + 1,
            signature=hooks.signature(node, data),
            doc=hooks.doc(node),
            parent=parent_qn,
            bases=tuple(hooks.bases(d.bases)) if d.bases is not None else (
                tuple(hooks.value_bases(node)) if kind in _VALUE_KINDS else ()
            ),
            exported=hooks.exported(node, d.name) and (parent is None or parent.exported),
            occurrence=occurrence,
        )
        if has_scopes:
            sym.scope_start, sym.scope_end = hooks.block_scope(node, container)
        facts.symbols.append(sym)
        made.append((sym, node))
        spans.append((d.start, d.end, qn))
        if has_stubs and kind in _STUB_KINDS and hooks.is_stub(node):
            stubs.append(sym)
    if stubs:
        _mark_overloads(facts, stubs)
    return spans


def _sweep(hooks: LanguageHooks, defs: list[_Def]) -> Iterator[tuple[_Def, int, str | None, bool, str]]:
    """The definitions in document order, one per node, with a stack of open containers: each with the position
    of its innermost container among those yielded before it (-1: the file), the qualified name it is qualified
    by, whether it names an owner, and its own qualified name. A member defined outside its type's body (Go
    `func (t *T) m()`, C++ `void T::m() {}`) names its owner itself; the owner is qualified by the enclosing
    container like any nested definition. `_build_symbols` and `definition_ranges` name symbols by it alike."""
    defs.sort(key=lambda d: (d.start, -d.end))
    stack: list[tuple[int, int, str]] = []  # (end byte, position, qualified name)
    last_key: tuple[int, int] | None = None
    position = 0
    for d in defs:
        if (d.start, d.end) == last_key:
            continue  # two patterns matched one node (e.g. a generic and a specific one)
        last_key = (d.start, d.end)
        while stack and stack[-1][0] <= d.start:
            stack.pop()
        up, parent_qn = (stack[-1][1], stack[-1][2]) if stack else (-1, None)
        owner = hooks.owner(d.node) if hooks.has_owners else None
        if owner:
            parent_qn = f"{parent_qn}.{owner}" if parent_qn else owner
        qn = f"{parent_qn}.{d.name}" if parent_qn else d.name
        yield d, up, parent_qn, bool(owner), qn
        stack.append((d.end, position, qn))
        position += 1


_STUB_KINDS = frozenset({"function", "method"})
_REBOUND_KINDS = frozenset({"class", "function"})


def _drop_rebindings(facts: FileFacts, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """`Attribute = _add_hash(Attribute)`, `f = wraps(g)(f)`: a value binding that rebinds a class or function
    of the same file and name is that definition, decorated by hand, not a new symbol. Left as a symbol it
    would share the definition's qualified name (and take its calls and callers); dropped, its initialiser's
    calls belong to the scope around it, like any module-level statement. `spans` follow `facts.symbols`
    after the module symbol, one for one (`_build_symbols`)."""
    defined = {s.qualified_name for s in facts.symbols if s.kind in _REBOUND_KINDS}
    if not any(s.kind in _VALUE_KINDS and s.qualified_name in defined for s in facts.symbols):
        return spans
    module, defs = facts.symbols[:1], facts.symbols[1:]
    if len(defs) != len(spans):
        return spans
    kept = [(sym, sp) for sym, sp in zip(defs, spans, strict=True) if not (sym.kind in _VALUE_KINDS and sym.qualified_name in defined)]
    facts.symbols[:] = module + [sym for sym, _ in kept]
    return [sp for _, sp in kept]


def _mark_overloads(facts: FileFacts, stubs: list[SymbolFact]) -> None:
    """Overload stubs (Python `@overload`, TS signatures) that have an implementation beside them become kind
    `overload`: symbols with their lines, never callees, so calls land on the implementation. A stub with no
    implementation (a .pyi, a `declare function`) is the declaration itself and keeps its kind. Occurrences
    are counted again since kinds changed."""
    stub_ids = {id(s) for s in stubs}
    implemented = {
        (s.parent, s.name) for s in facts.symbols if s.kind in _STUB_KINDS and id(s) not in stub_ids
    }
    for stub in stubs:
        if (stub.parent, stub.name) in implemented:
            stub.kind = "overload"
    seen: dict[tuple[str, str], int] = {}
    for sym in facts.symbols:
        key = (sym.kind, sym.qualified_name)
        sym.occurrence = seen.get(key, 0)
        seen[key] = sym.occurrence + 1


_T = TypeVar("_T")


def _innermost(
    items: list[tuple[int, _T]], spans: list[tuple[int, int, str]]
) -> Iterator[tuple[_T, str | None]]:
    """Each item (by start byte) with the qualified name of its innermost enclosing span, None at file level: one
    merged sweep over the symbol spans (document order) and the sorted items."""
    items.sort(key=itemgetter(0))
    stack: list[tuple[int, str]] = []
    i = 0
    n = len(spans)
    for start, item in items:
        while i < n and spans[i][0] <= start:
            s_start, s_end, qn = spans[i]
            while stack and stack[-1][0] <= s_start:
                stack.pop()
            stack.append((s_end, qn))
            i += 1
        while stack and stack[-1][0] <= start:
            stack.pop()
        yield item, (stack[-1][1] if stack else None)


def _attach_calls(
    facts: FileFacts, calls: list[tuple[int, CallFact]], spans: list[tuple[int, int, str]]
) -> None:
    """Give each call its innermost enclosing symbol."""
    out = list(facts.calls)
    for call, caller in _innermost(calls, spans):
        if caller is not None:
            call.caller = caller
        out.append(call)
    facts.calls = out


def _attach_types(
    facts: FileFacts, types: list[tuple[int, list[TypeFact]]], spans: list[tuple[int, int, str]]
) -> None:
    """Give each type fact its scope like `_attach_calls`; untyped names (`?`) become one `shadow` fact per
    scope (they only need to be known as bound, and there is one per parameter). `types` holds the facts of
    each binding node together: they share its start, and `_innermost`'s stable sort keeps them in order."""
    shadows: dict[str | None, set[str]] = {}
    out = list(facts.types)
    for declared, scope in _innermost(types, spans):
        for fact in declared:
            if fact.kind == "var" and fact.expr == "?":
                shadows.setdefault(scope, set()).add(fact.name)
                continue
            fact.scope = scope
            out.append(fact)
    for scope, names in shadows.items():
        out.append(TypeFact("shadow", scope, " ".join(sorted(names))))
    facts.types = out


def _first_error(root: Node) -> tuple[int, str]:
    """Line and description of the first ERROR or MISSING node, found without recursion."""
    node = root
    for _ in range(100_000):
        if node.is_missing:
            return node.start_point[0] + 1, f"missing {node.type}"
        if node.type == "ERROR" and node is not root:
            return node.start_point[0] + 1, "syntax error"
        nxt = None
        for child in node.children:
            if child.has_error or child.is_missing:
                nxt = child
                break
        if nxt is None:
            break
        node = nxt
    return node.start_point[0] + 1, "syntax error"
