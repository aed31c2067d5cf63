"""The one run-time importer of tree-sitter and its grammar pack: parsers, compiled queries, query matches.

Every other module names tree-sitter's types (`Node`, `Query`) under `TYPE_CHECKING` only, so the binding and
the pack it is pinned with (docs/dependencies.md) have one owner: a version bump that changes an API is read
and fixed here. The import-linter contract `tree_sitter-one-importer` (.importlinter) checks it.

Parsers and compiled queries are cached per process (compiling a query costs milliseconds, the C++ query
~0.07 s; a daemon's parser processes parse thousands of files).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from tree_sitter import Node, Parser, Query, QueryCursor
from tree_sitter_language_pack import get_language, get_parser

__all__ = ["matches", "parser", "query", "query_subset"]


@cache
def parser(grammar: str) -> Parser:
    """The (cached) parser of a grammar of the pack, e.g. "python", "tsx"."""
    return get_parser(grammar)  # type: ignore[arg-type]


@cache
def query(grammar: str, source: str) -> Query:
    """`source` compiled against a grammar, cached by both (a query is immutable once compiled)."""
    return Query(get_language(grammar), source)  # type: ignore[arg-type]


@cache
def query_subset(grammar: str, source: str, marker: str) -> Query:
    """`source` compiled with only the patterns whose text holds `marker` enabled (e.g. "@definition."):
    matching skips the disabled patterns' work."""
    compiled = Query(get_language(grammar), source)  # type: ignore[arg-type]
    raw = source.encode("utf-8")
    needle = marker.encode("utf-8")
    for index in range(compiled.pattern_count):
        if needle not in raw[compiled.start_byte_for_pattern(index) : compiled.end_byte_for_pattern(index)]:
            compiled.disable_pattern(index)
    return compiled


def matches(compiled: Query, node: Node) -> Iterable[tuple[int, dict[str, list[Node]]]]:
    """(pattern index, captures) of every match of `compiled` under `node`, in document order."""
    return QueryCursor(compiled).matches(node)
