"""Navigation accuracy: call and import edges against hand-written truth, per language.

Each folder of tests/fixtures/nav/ with a `truth.json` is a small labelled repository. This runs the real
pipeline (extract every file, fill a RepoIndex, resolve every file) and scores every emitted edge,
name-only guesses included, against the truth: precision = right / emitted, recall = right / true.
Misses and wrong edges are listed so a regression is explained, not just counted.

Writes bench/results/nav_accuracy.json; always exits 0 (it measures, CI decides).
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nexusd.parse.extract import extract  # noqa: E402
from nexusd.parse.facts import semantic_key  # noqa: E402
from nexusd.resolve import RepoIndex  # noqa: E402

NAV = REPO / "tests" / "fixtures" / "nav"
SKIP = {"node_modules", ".git", "__pycache__"}


def run_fixture(root: Path) -> dict[str, Any]:
    """Emitted call and import edges of one fixture repository, as semantic keys."""
    index = RepoIndex(root.name, root)
    keys: dict[str, str] = {}
    languages: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP)
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if rel == "truth.json":
                continue
            facts = extract(rel, full.read_bytes())
            index.set_file(facts)
            languages[rel] = facts.language
            for sym in facts.symbols:
                sid = index.symbol_id(rel, sym)
                keys[sid] = semantic_key(facts.language, sym.kind, rel, sym.qualified_name, sym.occurrence)
    calls: list[dict[str, Any]] = []
    imports: list[dict[str, Any]] = []
    for rel in sorted(languages):
        res = index.resolve_file(rel)
        for edge in res.calls:
            calls.append(
                {
                    "edge": (keys[edge.src_id], keys[edge.dst_id]),
                    "resolution": edge.resolution,
                    "confidence": edge.confidence,
                    "lang": languages[rel],
                }
            )
        for imp in res.imports:
            imports.append(
                {"edge": (imp.src_path, imp.dst_path), "resolution": imp.resolution, "lang": languages[rel]}
            )
    return {"calls": calls, "imports": imports}


def score(emitted: set[tuple[str, str]], truth: set[tuple[str, str]]) -> dict[str, Any]:
    right = emitted & truth
    return {
        "emitted": len(emitted),
        "true": len(truth),
        "correct": len(right),
        "precision": round(len(right) / len(emitted), 4) if emitted else 1.0,
        "recall": round(len(right) / len(truth), 4) if truth else 1.0,
        "wrong": sorted(" -> ".join(e) for e in emitted - truth),
        "missed": sorted(" -> ".join(e) for e in truth - emitted),
    }


def main() -> int:
    per_lang: dict[str, dict[str, set[tuple[str, str]]]] = defaultdict(lambda: defaultdict(set))
    fixtures: dict[str, Any] = {}
    for root in sorted(p for p in NAV.iterdir() if (p / "truth.json").is_file()):
        truth = json.loads((root / "truth.json").read_text())
        out = run_fixture(root)
        family = truth.get("language") or ("python" if root.name.startswith("py") else "typescript")
        tag = root.name
        call_edges = {tuple(c["edge"]) for c in out["calls"]}
        import_edges = {tuple(i["edge"]) for i in out["imports"]}
        true_calls = {tuple(e) for e in truth["calls"]}
        true_imports = {tuple(e) for e in truth["imports"]}
        fixtures[tag] = {
            "language": family,
            "calls": score(call_edges, true_calls),  # type: ignore[arg-type]
            "imports": score(import_edges, true_imports),  # type: ignore[arg-type]
            "by_resolution": _by_resolution(out["calls"]),
        }
        for kind, emitted, true in (
            ("calls", call_edges, true_calls),
            ("imports", import_edges, true_imports),
        ):
            per_lang[family][f"{kind}_emitted"] |= {(tag, *e) for e in emitted}  # type: ignore[misc]
            per_lang[family][f"{kind}_true"] |= {(tag, *e) for e in true}  # type: ignore[misc]
    summary: dict[str, Any] = {}
    for family, sets in sorted(per_lang.items()):
        summary[family] = {}
        for kind in ("calls", "imports"):
            s = score(sets[f"{kind}_emitted"], sets[f"{kind}_true"])
            summary[family][kind] = {k: s[k] for k in ("precision", "recall", "emitted", "true", "correct")}
            print(
                f"{family:<11} {kind:<8} precision {s['precision']:.3f}  recall {s['recall']:.3f}  "
                f"({s['correct']} right / {s['emitted']} emitted / {s['true']} true)"
            )
    for tag, data in fixtures.items():
        for kind in ("calls", "imports"):
            for line in data[kind]["wrong"]:
                print(f"  [{tag}] wrong  {kind}: {line}")
            for line in data[kind]["missed"]:
                print(f"  [{tag}] missed {kind}: {line}")
    out_path = Path(__file__).with_name("results") / "nav_accuracy.json"
    out_path.parent.mkdir(exist_ok=True)
    out_path.write_text(json.dumps({"summary": summary, "fixtures": fixtures}, indent=2) + "\n")
    return 0


def _by_resolution(calls: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for call in calls:
        counts[call["resolution"]] += 1
    return dict(sorted(counts.items()))


if __name__ == "__main__":
    raise SystemExit(main())
