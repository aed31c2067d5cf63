"""Mermaid and Graphviz DOT text for the subgraph answers (impact, paths, neighbors): pure string work on the
JSON the daemon returned, so a person can look at the graph instead of reading it.

Each answer becomes (nodes, edges): nodes keyed by semantic key or file path, labelled with a short name; edges
labelled with how they were established (resolution and confidence, or the edge kind).
"""

from __future__ import annotations

import re
from typing import Any

Node = tuple[str, str]  # (key, label)
EdgeT = tuple[str, str, str]  # (from key, to key, label)


def subgraph(op: str, result: dict[str, Any]) -> tuple[list[Node], list[EdgeT]]:
    nodes: dict[str, str] = {}
    edges: list[EdgeT] = []

    def node(ref: dict[str, Any] | str) -> str:
        if isinstance(ref, str):
            nodes.setdefault(ref, _label(ref))
            return ref
        key = ref.get("key") or ref.get("path") or ref.get("id") or "?"
        nodes.setdefault(key, ref.get("name") or _label(key))
        return str(key)

    if op == "impact":
        target = node(result["target"])
        for c in result.get("callers", []):
            path = c.get("callPath") or [c["key"], target]
            for a, b in zip(path, path[1:], strict=False):
                node(a)
                node(b)
                if a == c["key"]:
                    edges.append((a, b, f"{c.get('resolution', '')} {c.get('confidence', '')}".strip()))
                else:
                    edges.append((a, b, "calls"))
    elif op == "paths":
        node(result["from"])
        node(result["to"])
        for p in result.get("paths", []):
            for hop in p.get("hops", []):
                a, b = node(hop["from"]), node(hop["to"])
                label = f"{hop.get('resolution', '')} {hop.get('confidence', '')}".strip()
                edges.append((a, b, label) if hop["direction"] == "out" else (b, a, label))
    elif op == "neighbors":
        start = node(result["node"])
        for n in result.get("neighbors", []):
            key = node(n)
            edge = n.get("edge", {})
            src = edge.get("from") or start
            node(src)
            label = edge.get("kind", "")
            if edge.get("confidence") is not None:
                label += f" {edge['confidence']}"
            edges.append((src, key, label) if edge.get("direction") == "out" else (key, src, label))
    labels: dict[tuple[str, str], str] = {}
    for a, b, label in edges:  # one edge per pair; a resolution label beats the plain "calls" of a longer path
        if (a, b) not in labels or labels[(a, b)] == "calls":
            labels[(a, b)] = label
    return sorted(nodes.items()), [(a, b, label) for (a, b), label in labels.items()]


def _label(key: str) -> str:
    """`py:method:pkg/app.py:Base.run` -> `Base.run`; a file path stays as it is."""
    parts = key.split(":")
    return parts[-1] if len(parts) >= 4 else key


def _ident(key: str, ids: dict[str, str]) -> str:
    if key not in ids:
        ids[key] = f"n{len(ids)}"
    return ids[key]


def _quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def mermaid(op: str, result: dict[str, Any]) -> str:
    nodes, edges = subgraph(op, result)
    ids: dict[str, str] = {}
    lines = ["graph LR"]
    for key, label in nodes:
        safe = re.sub(r'["\[\]{}()<>|]', " ", label)
        lines.append(f'  {_ident(key, ids)}["{safe}"]')
    for a, b, label in edges:
        safe = re.sub(r'["|]', " ", label)
        arrow = f"-->|{safe}|" if safe else "-->"
        lines.append(f"  {_ident(a, ids)} {arrow} {_ident(b, ids)}")
    return "\n".join(lines)


def dot(op: str, result: dict[str, Any]) -> str:
    nodes, edges = subgraph(op, result)
    ids: dict[str, str] = {}
    lines = [f"digraph {op} {{", "  rankdir=LR;", "  node [shape=box, fontname=monospace];"]
    for key, label in nodes:
        lines.append(f'  {_ident(key, ids)} [label="{_quote(label)}", tooltip="{_quote(key)}"];')
    for a, b, label in edges:
        lines.append(f'  {_ident(a, ids)} -> {_ident(b, ids)} [label="{_quote(label)}"];')
    lines.append("}")
    return "\n".join(lines)
