"""Index throughput per language on real corpora: parse only vs extract vs extract + resolve.

Usage: python bench/lang_throughput.py [--lang go --lang rust ...] [--max-mb 25]

Each language has a corpus *finder* in `CORPORA`: a function returning (root, [(path as indexed, file)]) or
None when the corpus is not installed (the language is then reported as skipped, never a failure). The
corpora come from distribution packages, so CI does not need them; install them for a local run:

* go    `apt-get install golang-1.19-src`  -> /usr/share/go-1.19/src (the standard library)
* rust  `apt-get install rust-src`         -> /usr/src/rustc-*/library (std, core, alloc, ...), or the
        rustup `rust-src` component when present
* c     `apt-get install glibc-source`     -> /usr/src/glibc/glibc-*.tar.xz, unpacked once into
        ~/.cache/nexus-bench/ (only the .c files are C; .h files are parsed as C++)
* cpp   libstdc++ headers, /usr/include/c++/<version> (extension-less headers are indexed as `.hpp`)
* java  any JDK's lib/src.zip (`apt-get install openjdk-17-source`, or a JDK that ships it): java.base
        util/lang/io/net/time/nio/math/text/security, unpacked once into ~/.cache/nexus-bench/
* csharp UniRx from the npm registry (`npm pack com.neuecc.unirx@7.1.0`), unpacked once likewise
* ruby  `apt-get install ruby`              -> /usr/lib/ruby/3.* (the standard library)

Another language is added by writing a finder and registering it in `CORPORA`.

Each corpus is capped at --max-mb (files in sorted order until the cap). Three passes, single process:
parse-only (tree-sitter), extract (`extract`, the whole Python side), and extract + resolve (fill a
RepoIndex and resolve every file). Writes bench/results/lang_throughput.json, merging with the languages
already there; always exits 0.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nexusd.parse.extract import _parser, extract, warm  # noqa: E402
from nexusd.parse.languages import parsed_language  # noqa: E402
from nexusd.resolve import RepoIndex  # noqa: E402

Corpus = tuple[Path, list[tuple[str, Path]]]
SKIP_DIRS = {"testdata", ".git", "target", "node_modules", "vendor"}
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "nexus-bench"


def _walk(
    root: Path, suffixes: tuple[str, ...], max_bytes: int, rename: Callable[[str], str] | None = None
) -> list[tuple[str, Path]]:
    """Files under root with one of the suffixes (sorted, capped), as (indexed path, file)."""
    out: list[tuple[str, Path]] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            indexed = rename(rel) if rename else rel
            if not indexed.endswith(suffixes) or not full.is_file():
                continue
            size = full.stat().st_size
            if total + size > max_bytes:
                return out
            total += size
            out.append((indexed, full))
    return out


def find_go(max_bytes: int) -> Corpus | None:
    for cand in sorted(glob.glob("/usr/share/go-*/src")) + sorted(glob.glob("/usr/lib/go-*/src")):
        root = Path(cand)
        if (root / "go.mod").is_file():
            files = _walk(root, (".go",), max_bytes)
            files.append(("go.mod", root / "go.mod"))  # `module std`: lets imports resolve
            return root, files
    return None


def find_rust(max_bytes: int) -> Corpus | None:
    cands = sorted(glob.glob("/usr/src/rustc-*/library")) + sorted(
        glob.glob(str(Path.home() / ".rustup/toolchains/*/lib/rustlib/src/rust/library"))
    )
    for cand in cands:
        root = Path(cand)
        if root.is_dir():
            files = _walk(root, (".rs",), max_bytes)
            files += [(p.relative_to(root).as_posix(), p) for p in sorted(root.glob("*/Cargo.toml"))]
            return root, files
    return None


def find_c(max_bytes: int) -> Corpus | None:
    tarballs = sorted(glob.glob("/usr/src/glibc/glibc-*.tar.*"))
    if not tarballs:
        return None
    dest = CACHE / Path(tarballs[-1]).name.split(".tar")[0]
    if not dest.is_dir():
        dest.mkdir(parents=True)
        with tarfile.open(tarballs[-1]) as tar:
            members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".c")]
            tar.extractall(dest, members=members, filter="data")
    return dest, _walk(dest, (".c",), max_bytes)


def find_cpp(max_bytes: int) -> Corpus | None:
    versions = sorted(glob.glob("/usr/include/c++/*"), key=lambda p: (len(p), p))
    if not versions:
        return None
    root = Path(versions[-1])

    def as_header(rel: str) -> str:
        # Extension-less headers (`vector`) and template bodies (`.tcc`) are C++ under another name.
        if rel.endswith(".tcc"):
            return rel[:-4] + ".hpp"
        return rel if "." in rel.rsplit("/", 1)[-1] else rel + ".hpp"

    return root, _walk(root, (".h", ".hpp", ".cc"), max_bytes, rename=as_header)


JDK_PACKAGES = ("util", "lang", "io", "net", "time", "nio", "math", "text", "security")


def find_java(max_bytes: int) -> Corpus | None:
    """The JDK's own java.base sources from any JDK's lib/src.zip (Debian: openjdk-17-source)."""
    for src in sorted(glob.glob("/usr/lib/jvm/*/lib/src.zip")):
        if not Path(src).is_file():
            continue  # a dangling link: the -source package is not installed
        dest = CACHE / "jdk-src"
        if not dest.is_dir():
            import zipfile

            with zipfile.ZipFile(src) as archive:
                for name in archive.namelist():
                    parts = name.split("/")
                    if (
                        name.endswith(".java")
                        and parts[:2] == ["java.base", "java"]
                        and parts[2] in JDK_PACKAGES
                    ):
                        archive.extract(name, dest)
        return dest, _walk(dest, (".java",), max_bytes)
    return None


def find_csharp(max_bytes: int) -> Corpus | None:
    """UniRx, a C# library on the npm registry (`npm pack com.neuecc.unirx@7.1.0`), unpacked once."""
    dest = CACHE / "unirx"
    if not dest.is_dir():
        import subprocess

        CACHE.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(
                ["npm", "pack", "com.neuecc.unirx@7.1.0", "--silent"], cwd=CACHE, check=True, timeout=300
            )
        except (OSError, subprocess.SubprocessError):
            return None
        with tarfile.open(CACHE / "com.neuecc.unirx-7.1.0.tgz") as tar:
            tar.extractall(dest, filter="data")
    return dest, _walk(dest, (".cs",), max_bytes)


def find_ruby(max_bytes: int) -> Corpus | None:
    """The Ruby standard library of Debian's `ruby` package."""
    found = sorted(p for p in glob.glob("/usr/lib/ruby/3.*") if Path(p).is_dir())
    return (Path(found[-1]), _walk(Path(found[-1]), (".rb",), max_bytes)) if found else None


CORPORA: dict[str, Callable[[int], Corpus | None]] = {
    "go": find_go,
    "rust": find_rust,
    "c": find_c,
    "cpp": find_cpp,
    "java": find_java,
    "csharp": find_csharp,
    "ruby": find_ruby,
}


def measure(language: str, corpus: Corpus) -> dict[str, Any]:
    root, files = corpus
    data = [(path, file.read_bytes()) for path, file in files]
    source = [(p, d) for p, d in data if parsed_language(p) == language]
    mb = sum(len(d) for _, d in source) / 1e6
    warm([language])
    parser = _parser(language)
    t0 = time.perf_counter()
    for _, blob in source:
        parser.parse(blob)
    parse_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    all_facts = [extract(path, blob) for path, blob in data]
    extract_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    index = RepoIndex(language, root)
    for facts in all_facts:
        index.set_file(facts)
    calls = edges = unresolved = 0
    by_resolution: dict[str, int] = {}
    for facts in all_facts:
        res = index.resolve_file(facts.path)
        edges += len(res.imports)
        calls += len(res.calls)
        unresolved += sum(len(v) for v in res.unresolved.values())
        for edge in res.calls:
            by_resolution[edge.resolution] = by_resolution.get(edge.resolution, 0) + 1
    resolve_s = time.perf_counter() - t0
    syntax_errors = sum(1 for f in all_facts if any(d.code == "syntax-error" for d in f.diagnostics))
    return {
        "root": str(root),
        "files": len(source),
        "megabytes": round(mb, 2),
        "parse_only_mb_s": round(mb / parse_s, 2) if parse_s else None,
        "extract_mb_s": round(mb / extract_s, 2) if extract_s else None,
        "extract_resolve_mb_s": round(mb / (extract_s + resolve_s), 2),
        "parse_seconds": round(parse_s, 2),
        "extract_seconds": round(extract_s, 2),
        "resolve_seconds": round(resolve_s, 2),
        "symbols": sum(len(f.symbols) for f in all_facts),
        "call_edges": calls,
        "call_edges_by_resolution": dict(sorted(by_resolution.items())),
        "unresolved_calls": unresolved,
        "import_edges": edges,
        "files_with_syntax_errors": syntax_errors,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--lang", action="append", choices=sorted(CORPORA), help="repeatable; default: all")
    ap.add_argument("--max-mb", type=float, default=25.0)
    args = ap.parse_args(argv)
    out_path = Path(__file__).with_name("results") / "lang_throughput.json"
    results: dict[str, Any] = {}
    if out_path.is_file():
        try:
            results = json.loads(out_path.read_text())
        except ValueError:
            results = {}
    for language in args.lang or sorted(CORPORA):
        corpus = CORPORA[language](int(args.max_mb * 1e6))
        if corpus is None or not corpus[1]:
            print(f"{language:<6} skipped: corpus not installed (see this script's docstring)")
            continue
        row = measure(language, corpus)
        results[language] = row
        print(
            f"{language:<6} {row['files']:>5} files {row['megabytes']:>6.1f} MB   parse {row['parse_only_mb_s']:>6} MB/s"
            f"   extract {row['extract_mb_s']:>5} MB/s   extract+resolve {row['extract_resolve_mb_s']:>5} MB/s"
            f"   ({row['call_edges']} call edges, {row['unresolved_calls']} unresolved)"
        )
    out_path.parent.mkdir(exist_ok=True)
    out_path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
