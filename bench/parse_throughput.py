"""Extraction throughput over the Python stdlib: parse-only vs full `extract`, single process.

Why: docs/field-notes.md records parse-only 13-14 MB/s and extraction 8 MB/s; this keeps us honest about the
Python-side cost of extraction. Writes bench/results/parse_throughput.json and exits 0.
"""

from __future__ import annotations

import json
import sys
import sysconfig
import time
from pathlib import Path

from nexusd.parse.extract import _parser, extract, warm


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(sysconfig.get_paths()["stdlib"])
    files = [
        (p.relative_to(root).as_posix(), p.read_bytes())
        for p in sorted(root.rglob("*.py"))
        if "site-packages" not in p.parts
    ]
    total = sum(len(d) for _, d in files)
    warm(["python"])
    parser = _parser("python")
    t0 = time.perf_counter()
    for _, data in files:
        parser.parse(data)
    parse_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    symbols = calls = 0
    all_facts = []
    for path, data in files:
        facts = extract(path, data)
        symbols += len(facts.symbols)
        calls += len(facts.calls)
        all_facts.append(facts)
    extract_s = time.perf_counter() - t0

    from nexusd.resolve import RepoIndex

    t0 = time.perf_counter()
    index = RepoIndex("stdlib", root)
    for facts in all_facts:
        index.set_file(facts)
    edges = 0
    for facts in all_facts:
        res = index.resolve_file(facts.path)
        edges += len(res.calls) + len(res.imports)
    resolve_s = time.perf_counter() - t0

    mb = total / 1e6
    result = {
        "root": str(root),
        "files": len(files),
        "megabytes": round(mb, 2),
        "parse_only_mb_s": round(mb / parse_s, 2),
        "extract_mb_s": round(mb / extract_s, 2),
        "extract_seconds": round(extract_s, 2),
        "resolve_seconds": round(resolve_s, 2),
        "symbols": symbols,
        "calls": calls,
        "edges": edges,
    }
    print(json.dumps(result, indent=2))
    out = Path(__file__).with_name("results") / "parse_throughput.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
