"""JavaScript / TypeScript / TSX resolution rules: specifiers, barrels, tsconfig paths, workspaces.

A specifier resolves, first match wins, to a repository file:
1. relative (`./x`, `../y`): the file itself, `.js`->`.ts` (TS ESM style), then extensions, then `index.*`;
2. the nearest tsconfig.json / jsconfig.json above the importing file (`extends` followed inside the
   repository): `compilerOptions.paths` patterns, then `baseUrl`;
3. a workspace package (any package.json in the repository that has a `name`): `exports` (string, subpath
   map, condition objects), `types`/`module`/`main`, and when those point at build output that is not in
   the repository (`dist/index.js`), the matching source under `src/`;
4. anything else (`react`, `node:fs`) is external: no edge, and calls through it are unresolved strings.

What a module exports (`module_member`): `export {a as b}` / `export default X` (FileFacts.exports), its
top-level symbols, `export {x} from` / `export * as ns from` / `export * from` chains (bounded hops).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from typing import Any

from nexusd.resolve.base import (
    MAX_HOPS,
    FileBindings,
    FileTable,
    ImportEdge,
    LanguageRules,
    RepoIndex,
    Target,
)

EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
SKIP_DIRS = frozenset(
    {"node_modules", ".git", "dist", "build", "out", "coverage", ".next", ".venv", "vendor"}
)
WORKSPACE_SCAN_DEPTH = 5

JS_BUILTINS = frozenset(
    """setTimeout setInterval clearTimeout clearInterval setImmediate queueMicrotask parseInt parseFloat
    isNaN isFinite fetch alert confirm prompt structuredClone encodeURIComponent decodeURIComponent
    encodeURI decodeURI atob btoa require Symbol String Number Boolean Object Array Date RegExp Error
    TypeError RangeError SyntaxError Promise Map Set WeakMap WeakSet Proxy BigInt URL URLSearchParams
    AbortController TextEncoder TextDecoder Event CustomEvent Headers Request Response FormData Blob
    describe it test expect beforeEach afterEach beforeAll afterAll jest vi""".split()
)
JS_BUILTIN_RECEIVERS = frozenset(
    """console Math JSON Object Array Promise Number String Date Reflect window document process Symbol
    Intl Buffer globalThis navigator localStorage sessionStorage URL crypto performance jest vi expect
    module exports""".split()
)
JS_COMMON_METHODS = frozenset(
    """push pop shift unshift slice splice map filter reduce forEach find findIndex some every includes
    indexOf join concat sort reverse keys values entries get set has delete add clear then catch finally
    toString valueOf trim split replace replaceAll toLowerCase toUpperCase startsWith endsWith match
    test exec apply call bind emit on off once addEventListener removeEventListener json text send
    status write end log error warn info debug querySelector querySelectorAll getElementById
    appendChild removeChild setAttribute getAttribute flat flatMap fill padStart padEnd charAt
    substring toFixed assign freeze stringify parse resolve reject all next subscribe unsubscribe
    preventDefault stopPropagation toISOString getTime""".split()
)

_LINE_COMMENT = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


class EcmaRules(LanguageRules):
    languages = frozenset({"javascript", "typescript", "tsx"})
    self_names = frozenset({"this"})
    constructor_name = "constructor"
    builtins = JS_BUILTINS
    builtin_receivers = JS_BUILTIN_RECEIVERS
    common_methods = JS_COMMON_METHODS

    def __init__(self, index: RepoIndex) -> None:
        super().__init__(index)
        self._tsconfig: dict[str, dict[str, Any] | None] = {}
        self._packages: dict[str, tuple[str, dict[str, Any]]] | None = None
        self._spec_cache: dict[tuple[str, str], tuple[str, float] | None] = {}
        self._generation = -1

    def config_changed(self) -> None:
        self._tsconfig.clear()
        self._packages = None
        self._spec_cache.clear()

    # ---- specifiers ------------------------------------------------------------------------------------
    def resolve_spec(self, src: str, spec: str) -> tuple[str, float] | None:
        """(repository file, confidence) for an import specifier written in `src`, or None if external."""
        if self._generation != self.index.path_generation:  # specifiers map to paths: content edits keep them
            self._spec_cache.clear()
            self._generation = self.index.path_generation
        src_dir = posixpath.dirname(src)
        key = (src_dir, spec)
        if key not in self._spec_cache:
            self._spec_cache[key] = self._resolve_spec(src_dir, spec)
        return self._spec_cache[key]

    def _resolve_spec(self, src_dir: str, spec: str) -> tuple[str, float] | None:
        if spec.startswith("."):
            found = self.try_file(posixpath.join(src_dir, spec))
            return (found, 1.0) if found else None
        if spec.startswith("/") or ":" in spec.split("/", 1)[0]:
            return None  # absolute paths and node:/http: schemes never name a repository file
        config = self.tsconfig(src_dir)
        if config is not None:
            found = self._via_tsconfig(config, spec)
            if found is not None:
                return found, 1.0
        found = self._via_workspace(spec)
        return (found, 0.95) if found else None

    def try_file(self, base: str) -> str | None:
        base = posixpath.normpath(base)
        if base.startswith(".."):
            return None
        base = "" if base == "." else base
        paths = self.index.paths
        if base in paths:
            return base
        stem, ext = posixpath.splitext(base)
        if ext in {".js", ".jsx", ".mjs", ".cjs"}:
            for alt in (".ts", ".tsx", ".mts", ".cts"):
                if stem + alt in paths:
                    return stem + alt
        for ext in EXTENSIONS:
            if base + ext in paths:
                return base + ext
        prefix = f"{base}/index" if base else "index"
        for ext in EXTENSIONS:
            if prefix + ext in paths:
                return prefix + ext
        return None

    # ---- tsconfig ----------------------------------------------------------------------------------------
    def tsconfig(self, src_dir: str) -> dict[str, Any] | None:
        """Effective {"base": dir, "paths": {...}} of the nearest tsconfig/jsconfig above `src_dir`."""
        if src_dir in self._tsconfig:
            return self._tsconfig[src_dir]
        found: dict[str, Any] | None = None
        for name in ("tsconfig.json", "jsconfig.json"):
            cand = posixpath.join(src_dir, name) if src_dir else name
            if (self.index.root / cand).is_file():
                found = self._load_tsconfig(cand, 0)
                break
        if found is None and src_dir:
            found = self.tsconfig(posixpath.dirname(src_dir))
        self._tsconfig[src_dir] = found
        return found

    def _load_tsconfig(self, rel: str, depth: int) -> dict[str, Any] | None:
        data = _read_jsonc(self.index.root / rel)
        if not isinstance(data, dict) or depth > 5:
            return None
        here = posixpath.dirname(rel)
        merged: dict[str, Any] = {"base": None, "paths": {}, "paths_base": None}
        parent = data.get("extends")
        if isinstance(parent, str) and parent.startswith("."):
            target = posixpath.normpath(posixpath.join(here, parent))
            if not target.endswith(".json"):
                target += ".json"
            if not target.startswith(".."):
                inherited = self._load_tsconfig(target, depth + 1)
                if inherited:
                    merged.update(inherited)
        options = data.get("compilerOptions") or {}
        if isinstance(options.get("baseUrl"), str):
            merged["base"] = posixpath.normpath(posixpath.join(here, options["baseUrl"]))
        if isinstance(options.get("paths"), dict):
            merged["paths"] = options["paths"]
            merged["paths_base"] = merged["base"] if merged["base"] is not None else here
        return merged

    def _via_tsconfig(self, config: dict[str, Any], spec: str) -> str | None:
        paths_base = config.get("paths_base") or ""
        best: tuple[int, list[str], str] | None = None
        for pattern, targets in (config.get("paths") or {}).items():
            if not isinstance(targets, list):
                continue
            if "*" in pattern:
                pre, _, post = pattern.partition("*")
                if spec.startswith(pre) and spec.endswith(post) and len(spec) >= len(pre) + len(post):
                    star = spec[len(pre) : len(spec) - len(post)]
                    if best is None or len(pre) > best[0]:
                        best = (len(pre), targets, star)
            elif pattern == spec:
                best = (len(pattern) + 1, targets, "")
        if best is not None:
            for target in best[1]:
                if isinstance(target, str):
                    found = self.try_file(posixpath.join(paths_base, target.replace("*", best[2])))
                    if found:
                        return found
        if config.get("base") is not None:
            return self.try_file(posixpath.join(config["base"], spec))
        return None

    # ---- workspace packages ------------------------------------------------------------------------------
    def packages(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Package name -> (directory, package.json) for every named package.json in the repository."""
        if self._packages is None:
            found: dict[str, tuple[str, dict[str, Any]]] = {}
            root = self.index.root
            for dirpath, dirnames, filenames in os.walk(root):
                rel = os.path.relpath(dirpath, root)
                rel = "" if rel == "." else rel.replace(os.sep, "/")
                depth = 0 if not rel else rel.count("/") + 1
                dirnames[:] = (
                    []
                    if depth >= WORKSPACE_SCAN_DEPTH
                    else [d for d in dirnames if d not in SKIP_DIRS and not d.startswith(".")]
                )
                if "package.json" in filenames:
                    data = _read_jsonc(root / rel / "package.json")
                    if isinstance(data, dict) and isinstance(data.get("name"), str):
                        found.setdefault(data["name"], (rel, data))
            self._packages = found
        return self._packages

    def _via_workspace(self, spec: str) -> str | None:
        packages = self.packages()
        parts = spec.split("/")
        name_len = 2 if spec.startswith("@") else 1
        name = "/".join(parts[:name_len])
        if name not in packages:
            return None
        pkg_dir, manifest = packages[name]
        sub = "/".join(parts[name_len:])
        for entry in _entries(manifest, sub):
            found = self.try_file(posixpath.join(pkg_dir, entry)) or self._source_of_build(pkg_dir, entry)
            if found:
                return found
        for guess in [f"src/{sub}", sub] if sub else ["src/index", "index"]:
            found = self.try_file(posixpath.join(pkg_dir, guess))
            if found:
                return found
        return None

    def _source_of_build(self, pkg_dir: str, entry: str) -> str | None:
        """`dist/index.js` is not in the repository; its source usually is `src/index.ts`."""
        entry = posixpath.normpath(entry)
        for build in ("dist/", "build/", "lib/", "out/"):
            if entry.startswith(build):
                stem = entry[len(build) :]
                for suffix in (".d.ts", ".js", ".mjs", ".cjs"):
                    if stem.endswith(suffix):
                        stem = stem[: -len(suffix)]
                        break
                return self.try_file(posixpath.join(pkg_dir, "src", stem))
        return None

    # ---- bindings and exports ----------------------------------------------------------------------------
    def bind(self, table: FileTable) -> FileBindings:
        out = FileBindings()
        src = table.facts.path
        seen: set[tuple[str, str]] = set()
        for imp in table.facts.imports:
            resolved = self.resolve_spec(src, imp.specifier)
            if resolved is None:
                if imp.kind != "reexport":
                    for _name, alias in imp.names:
                        out.names[alias] = Target("external", imp.specifier)
                    if imp.module_alias:
                        out.names[imp.module_alias] = Target("external", imp.specifier)
                continue
            dst, confidence = resolved
            if (dst, imp.specifier) not in seen and dst != src:
                seen.add((dst, imp.specifier))
                out.edges.append(ImportEdge(src, dst, imp.specifier, imp.line, "import-bound", confidence))
            if imp.kind == "reexport":
                continue  # re-exports bind nothing locally; module_member follows them
            if imp.module_alias:
                out.names[imp.module_alias] = Target("module", dst)
            for name, alias in imp.names:
                if name == "*":
                    continue
                out.names[alias] = Target("lazy", dst, name=name)
        return out

    def module_member(self, path: str, name: str, hops: int) -> Target | None:
        if hops > MAX_HOPS:
            return None
        table = self.index.table(path)
        if table is None:
            return None
        local = table.exports.get(name)
        if local is not None:
            sym = table.top(local)
            if sym is not None:
                return Target("symbol", path, sym, hops)
            bound = self.index.settle(self.index.bindings(path).names.get(local), hops)
            if bound is not None:
                return Target(bound.kind, bound.path, bound.symbol, max(hops + 1, bound.hops))
        if name != "default":
            sym = table.top(name)
            if sym is not None:
                return Target("symbol", path, sym, hops)
        stars: list[str] = []
        for imp in table.facts.imports:
            if imp.kind != "reexport":
                continue
            resolved = self.resolve_spec(path, imp.specifier)
            if resolved is None:
                continue
            if imp.module_alias == name:
                return Target("module", resolved[0], None, hops + 1)
            for orig, alias in imp.names:
                if orig == "*":
                    stars.append(resolved[0])
                elif alias == name:
                    return self.module_member(resolved[0], orig, hops + 1)
        for star in stars:
            if star != path and name != "default":
                found = self.module_member(star, name, hops + 1)
                if found is not None:
                    return found
        return None

    def bare_name_only(self, table: FileTable) -> bool:
        # A script without imports or exports shares the global scope with other scripts.
        return not table.facts.imports and not table.exports


def _entries(manifest: dict[str, Any], sub: str) -> list[str]:
    """Candidate entry files of a package for subpath `sub` ("" for the package itself)."""
    out: list[str] = []
    exports = manifest.get("exports")
    key = f"./{sub}" if sub else "."
    if isinstance(exports, str) and not sub:
        out.append(exports)
    elif isinstance(exports, dict):
        if key in exports:
            out.extend(_condition_targets(exports[key]))
        elif not sub and not any(k.startswith(".") for k in exports):
            out.extend(_condition_targets(exports))
        for pattern, value in exports.items():
            if "*" in pattern and sub:
                pre, _, post = pattern.partition("*")
                if key.startswith(pre) and key.endswith(post):
                    star = key[len(pre) : len(key) - len(post) if post else None]
                    out.extend(t.replace("*", star) for t in _condition_targets(value))
    if not sub:
        for field_name in ("types", "typings", "module", "main"):
            value = manifest.get(field_name)
            if isinstance(value, str):
                out.append(value)
    return out


def _condition_targets(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        out: list[str] = []
        for cond in ("types", "import", "module", "default", "require", "node"):
            if cond in value:
                out.extend(_condition_targets(value[cond]))
        return out
    if isinstance(value, list):
        return [t for v in value for t in _condition_targets(v)]
    return []


def _read_jsonc(path: Any) -> Any:
    """JSON with comments and trailing commas (tsconfig allows both); None when unreadable."""
    try:
        raw = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        pass
    stripped = _LINE_COMMENT.sub(lambda m: m.group(1) or "", raw)
    try:
        return json.loads(_TRAILING_COMMA.sub(r"\1", stripped))
    except ValueError:
        return None
