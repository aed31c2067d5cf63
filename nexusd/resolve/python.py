"""Python resolution rules: modules, packages, relative imports, src-layout, `from x import *`.

Module names are derived from paths under *source roots*: the repository root, and every folder named
`src` or `lib` (so `src/pkg/mod.py` is both `src.pkg.mod` and `pkg.mod`, which is what an installed
src-layout project imports). A directory is a package whether or not it has `__init__.py` (namespace
packages are common in applications). When two files claim one module name, the one nearest to the
importing file wins. An absolute import that matches nothing is retried as a sibling of the importing
file (scripts and tests import their neighbours because Python puts the script's folder on sys.path).

Edges: `import a.b` -> a/b.py (or a/b/__init__.py); `from p import m` -> p/m.py when m is a submodule
and p/__init__ does not define m, else p/__init__.py; an import that leaves the repository is no edge.
"""

from __future__ import annotations

import builtins
import posixpath
from collections import defaultdict

from nexusd.resolve.base import (
    MAX_HOPS,
    FileBindings,
    FileTable,
    ImportEdge,
    LanguageRules,
    RepoIndex,
    Target,
)
from nexusd.resolve.base import common_prefix as _common_prefix
from nexusd.resolve.base import dedupe_imports as _dedupe

SOURCE_ROOT_NAMES = frozenset({"src", "lib"})

PY_BUILTINS = frozenset(dir(builtins)) | frozenset({"__import__", "reveal_type", "super"})

# Methods of str/list/dict/set/file/etc.: with an unknown receiver these are almost never repo methods.
PY_COMMON_METHODS = frozenset(
    """append extend insert pop remove clear copy count index sort reverse get items keys values update
    setdefault popitem add discard union intersection difference issubset issuperset join split rsplit
    strip lstrip rstrip replace startswith endswith format lower upper encode decode find rfind partition
    rpartition splitlines read write readline readlines close flush seek tell open exists is_file is_dir
    mkdir unlink glob rglob iterdir resolve group groups match search sub fullmatch finditer findall
    isoformat total_seconds acquire release wait notify set is_set put get_nowait put_nowait send recv
    info debug warning error exception critical log__ getLogger__ __enter__ __exit__ __init__ __call__
    zfill center ljust rjust title capitalize isdigit isalpha isalnum isspace hexdigest digest
    """.split()
)


class PythonRules(LanguageRules):
    languages = frozenset({"python"})
    self_names = frozenset({"self", "cls"})
    constructor_name = "__init__"
    self_constructor = "cls"
    builtins = PY_BUILTINS
    builtin_receivers = frozenset()
    common_methods = PY_COMMON_METHODS

    def __init__(self, index: RepoIndex) -> None:
        super().__init__(index)
        self._modules: dict[str, list[str]] | None = None
        self._generation = -1

    # ---- module map -----------------------------------------------------------------------------------
    def modules(self) -> dict[str, list[str]]:
        """Dotted module name -> candidate paths, rebuilt when the set of files changed."""
        if self._modules is None or self._generation != self.index.path_generation:
            table: dict[str, list[str]] = defaultdict(list)
            for path in self.index.paths:
                if not path.endswith((".py", ".pyi")):
                    continue
                for name in module_names(path):
                    table[name].append(path)
            for paths in table.values():
                paths.sort(key=lambda p: (p.endswith(".pyi"), p))  # .py beats its stub
            self._modules = dict(table)
            self._generation = self.index.path_generation
        return self._modules

    def find_module(self, name: str, near: str) -> str | None:
        paths = self.modules().get(name)
        if not paths:
            return None
        if len(paths) == 1:
            return paths[0]
        return max(paths, key=lambda p: (_common_prefix(p, near), not p.endswith(".pyi")))

    def _package_file(self, dir_path: str) -> str | None:
        for cand in (f"{dir_path}/__init__.py", f"{dir_path}/__init__.pyi"):
            if cand.lstrip("/") in self.index.paths:
                return cand.lstrip("/")
        return None

    def _file_for_dir_or_module(self, base: str) -> str | None:
        """`pkg/mod` -> pkg/mod.py or pkg/mod/__init__.py (repository-relative, no leading slash)."""
        base = base.strip("/")
        for cand in (f"{base}.py", f"{base}.pyi"):
            if cand in self.index.paths:
                return cand
        return self._package_file(base) if base else None

    # ---- imports ---------------------------------------------------------------------------------------
    def bind(self, table: FileTable) -> FileBindings:
        out = FileBindings()
        src = table.facts.path
        for imp in table.facts.imports:
            spec = imp.specifier
            if imp.kind == "import":
                dst = self._absolute(spec, src)
                if dst is None:
                    local = imp.module_alias or spec.split(".", 1)[0]
                    out.names[local] = Target("external", spec)
                    continue
                out.edges.append(ImportEdge(src, dst, spec, imp.line, "import-bound", 1.0))
                if imp.module_alias:
                    out.names[imp.module_alias] = Target("module", dst)
                else:
                    # `import a.b` binds `a`; a namespace package head gets a virtual __init__ path whose
                    # members are its submodules (module_member handles a path with no table).
                    parts = spec.split(".")
                    head_path = self._absolute(parts[0], src)
                    if head_path is None:
                        head_dir = dst[: -len("/__init__.py")] if dst.endswith("/__init__.py") else dst[:-3]
                        for _ in parts[1:]:
                            head_dir = posixpath.dirname(head_dir)
                        head_path = f"{head_dir}/__init__.py".lstrip("/")
                    out.names[parts[0]] = Target("module", head_path)
                continue
            base = self._from_base(spec, src)
            if base is None:
                for name, alias in imp.names:
                    if name != "*":
                        out.names[alias] = Target("external", f"{spec}.{name}")
                continue
            base_dir, base_file = base
            for name, alias in imp.names:
                if name == "*":
                    if base_file is not None:
                        out.stars.append(base_file)
                        out.edges.append(ImportEdge(src, base_file, spec, imp.line, "import-bound", 1.0))
                    continue
                defined = base_file is not None and self._defines(base_file, name)
                sub = None if defined else self._file_for_dir_or_module(f"{base_dir}/{name}")
                if sub is not None:
                    out.names[alias] = Target("module", sub)
                    out.edges.append(ImportEdge(src, sub, spec, imp.line, "import-bound", 1.0))
                elif base_file is not None:
                    out.names[alias] = Target("lazy", base_file, name=name)
                    out.edges.append(ImportEdge(src, base_file, spec, imp.line, "import-bound", 1.0))
                else:
                    out.names[alias] = Target("external", f"{spec}.{name}")
        out.edges = _dedupe(out.edges)
        return out

    def _defines(self, path: str, name: str) -> bool:
        table = self.index.table(path)
        if table is None:
            return False
        if table.top(name) is not None:
            return True
        return any(alias == name for imp in table.facts.imports for _, alias in imp.names)

    def _absolute(self, dotted: str, src: str) -> str | None:
        found = self.find_module(dotted, src)
        if found is not None:
            return found
        sibling = posixpath.join(posixpath.dirname(src), dotted.replace(".", "/"))
        return self._file_for_dir_or_module(sibling)

    def _from_base(self, spec: str, src: str) -> tuple[str, str | None] | None:
        """(package dir, module file or None) that `from <spec> import ...` reads names from."""
        if spec.startswith("."):
            level = len(spec) - len(spec.lstrip("."))
            rest = spec[level:]
            base_dir = posixpath.dirname(src)
            for _ in range(level - 1):
                base_dir = posixpath.dirname(base_dir)
            target_dir = posixpath.join(base_dir, rest.replace(".", "/")) if rest else base_dir
            target_file = self._file_for_dir_or_module(target_dir) if rest else self._package_file(base_dir)
            if target_file is None and not self._is_dir(target_dir):
                return None
            return target_dir, target_file
        found = self._absolute(spec, src)
        if found is None:
            return None
        target_dir = (
            posixpath.dirname(found) if found.endswith(("__init__.py", "__init__.pyi")) else found[:-3]
        )
        return target_dir, found

    def _is_dir(self, d: str) -> bool:
        return d == "" or d in self.index.dirs

    # ---- exports ---------------------------------------------------------------------------------------
    def module_member(self, path: str, name: str, hops: int) -> Target | None:
        if hops > MAX_HOPS:
            return None
        table = self.index.table(path)
        if table is None:
            if path.endswith("__init__.py"):  # namespace package: only submodules
                sub = self._file_for_dir_or_module(f"{posixpath.dirname(path)}/{name}")
                return Target("module", sub, None, hops) if sub is not None else None
            return None
        sym = table.top(name)
        if sym is not None:
            return Target("symbol", path, sym, hops)
        bindings = self.index.bindings(path)
        bound = self.index.settle(bindings.names.get(name), hops)
        if bound is not None:
            if bound.kind == "external":
                return bound
            return Target(bound.kind, bound.path, bound.symbol, max(hops + 1, bound.hops))
        if path.endswith(("__init__.py", "__init__.pyi")):
            sub = self._file_for_dir_or_module(f"{posixpath.dirname(path)}/{name}")
            if sub is not None:
                return Target("module", sub, None, hops)
        for star in bindings.stars:
            if star != path:
                found = self.module_member(star, name, hops + 1)
                if found is not None:
                    return found
        return None


def module_names(path: str) -> list[str]:
    """Every dotted name `path` can be imported as, one per source root above it."""
    stem = path[: path.rfind(".")]
    parts = stem.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts:
        return []
    names = [".".join(parts)]
    for i, part in enumerate(parts[:-1]):
        if part in SOURCE_ROOT_NAMES:
            names.append(".".join(parts[i + 1 :]))
    return [n for n in names if n]


