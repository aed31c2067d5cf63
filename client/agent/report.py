"""The agent's closing report, built from what the tools returned (not from what the model says about them).

Every caller is cited as path:line with its hop count and how each edge on its path was resolved
(resolution + confidence, as the graph stored them); the report says when the caller list is a lower bound.
The model's own final text rides along as `answer`.
"""

from __future__ import annotations

from typing import Any

from .providers import caller_items


def _edges(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The edges on a caller's path, whatever the impact result calls them, newest shape first."""
    for key in ("edges", "path", "hops_detail", "chain"):
        value = item.get(key)
        if isinstance(value, list) and value and isinstance(value[0], dict):
            return [
                {k: e.get(k) for k in ("from", "to", "src", "dst", "caller", "callee", "resolution", "confidence",
                                        "line", "direction") if e.get(k) is not None}
                for e in value
            ]
    if item.get("resolution") is not None:
        return [{"resolution": item.get("resolution"), "confidence": item.get("confidence")}]
    return []


def normalise_caller(item: dict[str, Any]) -> dict[str, Any]:
    symbol: dict[str, Any] = item["symbol"] if isinstance(item.get("symbol"), dict) else item
    path = symbol.get("path") or symbol.get("file") or item.get("path")
    if isinstance(path, list):
        path = None
    line = symbol.get("line") or symbol.get("startLine") or item.get("line")
    hops = item.get("hops", item.get("depth", item.get("distance")))
    via = item.get("via")
    if isinstance(via, dict):
        via = via.get("qualifiedName") or via.get("name") or via.get("id")
    return {
        "name": symbol.get("qualifiedName") or symbol.get("name") or symbol.get("key") or symbol.get("id"),
        "id": symbol.get("id"),
        "path": path,
        "line": line,
        "hops": hops,
        "via": via,
        "confidence": item.get("confidence", item.get("pathConfidence")),
        "edges": _edges(item),
        "cite": f"{path}:{line}" if path and line else (path or None),
    }


def chain_edges(items: list[dict[str, Any]]) -> None:
    """Label every hop of each caller's call path with how that edge was resolved.

    A caller item carries the resolution of its own first edge and the confidence of its whole path (the product
    of its edges); the later hops are the first edges of the callers it goes through, found by key. An edge's own
    confidence is the caller's path confidence over the next caller's.
    """
    by_key = {i.get("key"): i for i in items if i.get("key")}
    for item in items:
        path = item.get("callPath")
        if not isinstance(path, list) or len(path) < 2:
            continue
        edges = []
        for a, b in zip(path, path[1:], strict=False):
            source = item if a == item.get("key") else by_key.get(a, {})
            conf = source.get("confidence")
            rest = by_key.get(b, {}).get("confidence")
            if isinstance(conf, (int, float)) and isinstance(rest, (int, float)) and rest > 0:
                conf = round(conf / rest, 4)
            edges.append({"from": a, "to": b, "resolution": source.get("resolution"), "confidence": conf})
        item["edges"] = edges


def build_report(config: Any, trace: list[dict[str, Any]], answer: str, error: str | None = None) -> dict[str, Any]:
    """The run's outcome: target, callers, files, hops, edge resolutions, memory written, the tool trace."""
    impact = next((t["structured"] for t in reversed(trace) if t["name"] == "impact" and not t["isError"]), None)
    located = next((t["structured"] for t in trace if t["name"] == "locate" and not t["isError"]), None)
    items = [dict(c) for c in caller_items(impact)]
    chain_edges(items)
    callers = [normalise_caller(c) for c in items]
    files = sorted({c["path"] for c in callers if c["path"]})
    hops = [c["hops"] for c in callers if isinstance(c["hops"], int)]
    graph = next(
        ({k: t["structured"].get(k) for k in ("graphVersion", "indexedAt", "freshness")}
         for t in reversed(trace) if t.get("structured") and "graphVersion" in t["structured"]),
        {},
    )
    written = {
        t["name"]: (t["structured"] or {}).get("id") or (t["structured"] or {}).get("session")
        for t in trace if t["name"] in ("remember", "handoff_write", "session_start") and not t["isError"]
    }
    tests = next((t["structured"] for t in trace if t["name"] == "run_tests"), None)
    report: dict[str, Any] = {
        "symbol": config.symbol,
        "question": config.question,
        "provider": config.provider,
        "target": _target(located),
        "callers": callers,
        "files": files,
        "maxHops": max(hops) if hops else 0,
        "total": (impact or {}).get("total", len(callers)),
        "complete": _complete(impact),
        "unresolved": (impact or {}).get("unresolvedInScope", (impact or {}).get("unresolved")),
        "graph": graph,
        "memory": written,
        "tests": tests,
        "toolCalls": [{"name": t["name"], "arguments": t["arguments"], "isError": t["isError"]} for t in trace],
        "tokensRead": sum(t["chars"] for t in trace) // 4,
        "answer": answer,
    }
    if error:
        report["error"] = error
    return report


def _complete(impact: dict[str, Any] | None) -> bool | None:
    if not impact:
        return None
    if "completeness" in impact:
        return impact["completeness"] == "complete"
    return impact.get("complete")


def _target(located: dict[str, Any] | None) -> dict[str, Any] | None:
    from .providers import _first_item

    item = _first_item(located)
    if not item:
        return None
    return {k: item.get(k) for k in ("id", "name", "qualifiedName", "kind", "path", "line", "startLine", "match")
            if item.get(k) is not None}


def render_report(r: dict[str, Any]) -> str:
    if r.get("error") and not r.get("toolCalls"):
        return f"nexus agent: {r['error']}"
    lines = [f"# Impact of {r['symbol']}" + (f" - {r['question']}" if r.get("question") else "")]
    target = r.get("target")
    if target:
        lines.append(f"target: {target.get('qualifiedName') or target.get('name')} "
                     f"({target.get('path')}:{target.get('line') or target.get('startLine')})")
    bound = "" if r.get("complete") in (True, None) else " (a lower bound"
    if bound and r.get("unresolved"):
        bound += f": {r['unresolved']} unresolved references in scope"
    bound += ")" if bound else ""
    lines.append(f"callers: {len(r['callers'])} of {r.get('total')}{bound} in {len(r['files'])} files, "
                 f"up to {r['maxHops']} hops")
    for c in r["callers"]:
        how = ", ".join(
            f"{e.get('resolution')}@{e.get('confidence')}" for e in c["edges"] if e.get("resolution")
        ) or "resolution not reported"
        via = f" via {c['via']}" if c.get("via") else ""
        lines.append(f"  - {c['name']} [{c['cite']}] hops={c['hops']}{via}; edges: {how}")
    if r.get("files"):
        lines.append("files: " + ", ".join(r["files"]))
    if r.get("tests"):
        t = r["tests"]
        lines.append(f"tests: {'passed' if t.get('passed') else 'failed'} ({', '.join(t.get('paths') or [])})")
    g = r.get("graph") or {}
    lines.append(f"graph: version {g.get('graphVersion')}, indexed at {g.get('indexedAt')}, {g.get('freshness')}")
    if r.get("memory"):
        lines.append("memory: " + ", ".join(f"{k} {v}" for k, v in r["memory"].items()))
    lines.append(f"tool calls: {' -> '.join(t['name'] for t in r['toolCalls'])}; tokens read ~{r['tokensRead']}")
    if r.get("answer"):
        lines += ["", r["answer"]]
    if r.get("error"):
        lines.append(f"error: {r['error']}")
    return "\n".join(lines)
