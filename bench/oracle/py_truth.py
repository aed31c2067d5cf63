"""Ground truth for a Python project from jedi: definitions, call edges, import edges.

    PYTHONPATH=<dir with jedi> python py_truth.py ROOT OUT.json

Runs in its own process with jedi on its path (jedi is a bench-only dependency, never the product's) and
imports nothing from NEXUS: the definitions and call sites come from Python's `ast`, the callee of each call
from `jedi.Script.goto(line, column, follow_imports=True)` on the call's name token, the target file of each
import from jedi's module resolution of the imported module's name. The rules are written in README.md.
"""

from __future__ import annotations

import ast
import io
import json
import os
import sys
import sysconfig
import time
import tokenize
from pathlib import Path
from typing import Any

import jedi

SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", "venv", "build", "dist", ".tox", ".nox"}
MODULE = "<module>"


def py_files(root: Path) -> list[str]:
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(".py"):
                out.append((Path(dirpath) / name).relative_to(root).as_posix())
    return out


def _is_overload(node: ast.AST) -> bool:
    for dec in getattr(node, "decorator_list", ()):
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Name) and target.id == "overload":
            return True
        if isinstance(target, ast.Attribute) and target.attr == "overload":
            return True
    return False


class FileScan(ast.NodeVisitor):
    """Definitions (def, async def, class) and call sites of one file, each call with its caller.

    A caller is the nearest enclosing def or class. What Python evaluates outside a definition's body is
    credited to the enclosing scope: decorators, default values, annotations of parameters and return, and
    class bases / keywords.
    """

    def __init__(self, rel: str, lines: list[str]):
        self.rel = rel
        self.lines = lines
        self.defs: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.stack: list[str] = []  # qualified names of the enclosing definitions
        self.where: list[list[Any]] = []  # [file, line, name] of the enclosing definitions
        self.classes: list[bool] = []  # per enclosing definition: is it a class
        self.aliases: list[tuple[int, str]] = []  # (line, name) of `name = other` assignments
        self.params: list[set[str]] = []  # per enclosing definition: its parameter names

    def caller(self) -> list[Any]:
        return self.where[-1] if self.where else [self.rel, 0, MODULE]

    def _name_col(self, node: ast.AST, name: str) -> int:
        line = self.lines[node.lineno - 1]  # type: ignore[attr-defined]
        kw = "class" if isinstance(node, ast.ClassDef) else "def"
        at = line.find(kw + " ", node.col_offset)  # type: ignore[attr-defined]
        at = line.find(name, at + len(kw) if at >= 0 else 0)
        return max(at, 0)

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        for dec in node.decorator_list:
            self._decorator(dec)
            self.visit(dec)
        if isinstance(node, ast.ClassDef):
            for base in [*node.bases, *(k.value for k in node.keywords)]:
                self.visit(base)
        else:
            args = node.args
            for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
                self.visit(default)
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if a is not None and a.annotation is not None:
                    self.visit(a.annotation)
            if node.returns is not None:
                self.visit(node.returns)
        qname = f"{self.stack[-1]}.{node.name}" if self.stack else node.name
        kind = "class" if isinstance(node, ast.ClassDef) else ("method" if self._in_class() else "function")
        self.defs.append(
            {
                "name": node.name,
                "qname": qname,
                "kind": kind,
                "line": node.lineno,
                "start": min([node.lineno, *(d.lineno for d in node.decorator_list)]),
                "col": self._name_col(node, node.name),
                "end": node.end_lineno,
                "overload": _is_overload(node),
            }
        )
        self.classes.append(isinstance(node, ast.ClassDef))
        self.stack.append(qname)
        self.where.append([self.rel, node.lineno, node.name])
        a = None if isinstance(node, ast.ClassDef) else node.args
        self.params.append(set() if a is None else {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x})
        for stmt in node.body:
            self.visit(stmt)
        self.stack.pop()
        self.where.pop()
        self.params.pop()
        self.classes.pop()

    def _in_class(self) -> bool:
        return bool(self.classes) and self.classes[-1]

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _definition  # type: ignore[assignment]

    def _decorator(self, dec: ast.expr) -> None:
        """A bare decorator (`@name`, `@a.b`) is a call of that name; `@f(...)` is an ordinary Call."""
        if isinstance(dec, (ast.Name, ast.Attribute)):
            self._site(dec, decorator=True)

    def _site(self, func: ast.expr, decorator: bool = False) -> None:
        if isinstance(func, ast.Name):
            line, col, name = func.lineno, func.col_offset, func.id
        elif isinstance(func, ast.Attribute):
            line, name = func.end_lineno or func.lineno, func.attr
            col = (func.end_col_offset or 0) - len(name)
        else:
            return  # f()(), x[0](), (a or b)(): no name token to ask about
        param = isinstance(func, ast.Name) and any(name in ps for ps in self.params)
        self.calls.append({"caller": self.caller(), "name": name, "line": line, "col": col, "decorator": decorator,
                           "param": param})  # fmt: skip

    def visit_Assign(self, node: ast.Assign) -> None:
        """`ib = attr = attrib`, `mutable = define`: a name bound to another name is an alias of it."""
        if isinstance(node.value, (ast.Name, ast.Attribute)) and all(isinstance(t, ast.Name) for t in node.targets):
            for t in node.targets:
                self.aliases.append((t.lineno, t.id))  # type: ignore[attr-defined]
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        self._site(node.func)
        self.generic_visit(node)


def import_sites(source: str, tree: ast.Module) -> list[dict[str, Any]]:
    """Per import statement: the position of the imported module's last name token, the module's dotted name
    and level, and the imported names (for `from M import x`)."""
    starts: dict[int, list[ast.Import | ast.ImportFrom]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            starts.setdefault(node.lineno, []).append(node)
    if not starts:
        return []
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.NAME]
    out: list[dict[str, Any]] = []
    for nodes in starts.values():
        for node in nodes:
            span = [
                t
                for t in tokens
                if (node.lineno, node.col_offset) <= t.start and t.end <= (node.end_lineno or node.lineno, node.end_col_offset or 0)
            ]
            if isinstance(node, ast.Import):
                # import a.b.c [as x], d: the module token is the last name before `as` / `,`
                i = 1
                for alias in node.names:
                    parts = alias.name.split(".")
                    toks = span[i : i + len(parts)]
                    i += len(parts) + (2 if alias.asname else 0)
                    if toks:
                        out.append({"line": node.lineno, "module": alias.name, "level": 0,
                                    "at": list(toks[-1].start), "names": []})  # fmt: skip
            else:
                mod_parts = node.module.split(".") if node.module else []
                toks = span[1 : 1 + len(mod_parts)]
                out.append(
                    {
                        "line": node.lineno,
                        "module": node.module or "",
                        "level": node.level,
                        "at": list(toks[-1].start) if toks else None,
                        "names": [a.name for a in node.names if a.name != "*"],
                    }
                )
    return out



def import_aliases(tree: ast.Module) -> set[str]:
    """Names bound by `import ... as NAME` / `from ... import x as NAME` (a call through NAME may reach x)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(a.asname for a in node.names if a.asname)
    return out


_STATE: Any = None  # (root, sys_path, defs, scans, names): set before the worker processes fork


def resolve_files(work: list[str]) -> dict[str, Any]:
    """jedi on the call sites and import statements of these files (one process: jedi caches per process)."""
    root, sys_path, defs, scans, names, aliases_at = _STATE
    project = jedi.Project(root, sys_path=sys_path, smart_sys_path=False, load_unsafe_extensions=False)
    by_line = {(rel, d["line"], d["name"]): d for rel, ds in defs.items() for d in ds}
    calls: list[dict[str, Any]] = []
    imports: list[dict[str, Any]] = []
    counts = {"unresolved": 0, "outside_repository": 0, "in_repository": 0, "not_asked": 0}
    for rel in work:
        source, scan, imps, aliases = scans[rel]
        script = jedi.Script(source, path=str(root / rel), project=project)
        for site in scan.calls:
            if site["name"] not in names and site["name"] not in aliases and not site["param"]:
                # No repository definition has this name, no import renames one to it and it is no parameter, so
                # goto cannot land on a repository function or class (len, print, x.append, ...): not asked.
                counts["not_asked"] += 1
                continue
            try:
                found = script.goto(site["line"], site["col"], follow_imports=True)
            except Exception:  # a jedi failure on odd code: the site stays unresolved
                found = []
            targets: set[tuple[str, int, str]] = set()
            for n in _follow(root, found, aliases_at, counts, lambda k: k in by_line):
                trel = _rel(root, n.module_path)
                d = by_line.get((trel, n.line, n.name)) if trel else None
                if d is None:
                    continue
                if d["overload"]:  # an @overload stub stands for the implementation
                    impl = [x for x in defs[trel] if x["qname"] == d["qname"] and not x["overload"]]
                    if impl:
                        d = impl[-1]
                targets.add((trel, d["line"], d["name"]))
            if targets:
                counts["in_repository"] += 1
            elif not found:
                counts["unresolved"] += 1
            else:
                counts["outside_repository"] += 1
            for trel, tline, tname in sorted(targets):
                calls.append({"file": rel, "caller": site["caller"], "line": site["line"], "col": site["col"],
                              "name": site["name"], "decorator": site["decorator"], "callee": [trel, tline, tname]})  # fmt: skip
        for imp in imps:
            for dst in _import_targets(root, rel, script, imp):
                imports.append({"file": rel, "line": imp["line"], "dst": dst})
    return {"calls": calls, "imports": imports, "counts": counts}


def _follow(root: Path, found: list[Any], aliases_at: set[tuple[str, int, str]], counts: dict[str, int],
            is_def: Any) -> list[Any]:
    """The functions and classes jedi's goto answers stand for, where goto stops short of them:
    * a function or class answer that is no definition of the project's files, because goto stopped at a name
      re-exported by an import (`from ._config import set_run_validators` in a package's `__init__.py`), is
      followed with goto again, up to three times;
    * an alias assignment (`ib = attr = attrib`) is followed to what jedi infers for it;
    * a parameter is followed to the classes jedi infers for it (`cls(...)` in a classmethod, `t: type[X]`).
    """
    out: list[Any] = []
    todo = [(n, 0) for n in found]
    while todo:
        n, hops = todo.pop()
        if n.module_path is None or n.line is None:
            continue
        trel = _rel(root, n.module_path)
        try:
            if n.type in ("function", "class"):
                if trel is not None and hops < 3 and not is_def((trel, n.line, n.name)):
                    todo += [(m, hops + 1) for m in n.goto(follow_imports=True) if (m.module_path, m.line) != (n.module_path, n.line)]
                    counts["through_reexport"] = counts.get("through_reexport", 0) + 1
                else:
                    out.append(n)
            elif n.type == "statement" and trel is not None and (trel, n.line, n.name) in aliases_at:
                counts["through_alias"] = counts.get("through_alias", 0) + 1
                out += [m for m in n.infer() if m.type in ("function", "class")]
            elif n.type == "param":
                hit = [m for m in n.infer() if m.type == "class" and m.module_path is not None]
                if hit:
                    counts["through_param"] = counts.get("through_param", 0) + 1
                out += hit
        except Exception:  # a jedi failure while following: what was found so far stands
            pass
    return out


def _rel(root: Path, path: Any) -> str | None:
    try:
        return Path(path).resolve().relative_to(root).as_posix()
    except ValueError:
        return None


def _import_targets(root: Path, rel: str, script: Any, imp: dict[str, Any]) -> list[str]:
    """The repository files an import statement binds: the imported module's file (jedi), and for
    `from PKG import a, b` each name that is a submodule of PKG; PKG's own file only if some name is not one."""
    dst: set[str] = set()
    if imp["at"] is not None:
        try:
            found = script.goto(imp["at"][0], imp["at"][1], follow_imports=True)
        except Exception:
            found = []
        for n in found:
            if n.type == "module" and n.module_path is not None:
                r = _rel(root, n.module_path)
                if r:
                    dst.add(r)
    else:  # from . import x (no module name): the package `level` folders up
        pkg = (root / rel).parent
        for _ in range(imp["level"] - 1):
            pkg = pkg.parent
        if (pkg / "__init__.py").is_file():
            r = _rel(root, pkg / "__init__.py")
            if r:
                dst.add(r)
    base = next(iter(sorted(dst)), None)
    subs: set[str] = set()
    if base is not None and base.endswith("__init__.py") and imp["names"]:
        pkg_dir = (root / base).parent
        for name in set(imp["names"]):
            for cand in (pkg_dir / f"{name}.py", pkg_dir / name / "__init__.py"):
                if cand.is_file():
                    r = _rel(root, cand)
                    if r:
                        subs.add(r)
                    break
        if len(subs) == len(set(imp["names"])):
            dst = set()
    return sorted(d for d in dst | subs if d.endswith(".py") and d != rel)


def main() -> int:
    global _STATE
    root = Path(sys.argv[1]).resolve()
    out_path = Path(sys.argv[2])
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    t0 = time.monotonic()
    # The project first, then the standard library only: no site-packages, so an installed copy of the project
    # (or of anything else) never stands in for its source, and third-party calls resolve to nothing.
    sys_path = [str(root / "src")] if (root / "src").is_dir() else []
    sys_path.append(str(root))
    stdlib = sysconfig.get_paths()
    sys_path += [stdlib["stdlib"], stdlib["platstdlib"], os.path.join(stdlib["platstdlib"], "lib-dynload")]
    defs: dict[str, list[dict[str, Any]]] = {}
    scans: dict[str, tuple[str, FileScan, list[dict[str, Any]], set[str]]] = {}
    skipped: dict[str, str] = {}
    for rel in py_files(root):
        try:
            source = (root / rel).read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError, ValueError) as exc:
            skipped[rel] = type(exc).__name__
            continue
        scan = FileScan(rel, source.splitlines())
        scan.visit(tree)
        defs[rel] = scan.defs
        scans[rel] = (source, scan, import_sites(source, tree), import_aliases(tree))
    names = {d["name"] for ds in defs.values() for d in ds}
    aliases_at = {(rel, line, name) for rel, sc in scans.items() for line, name in sc[1].aliases}
    names |= {name for _, _, name in aliases_at}
    _STATE = (root, sys_path, defs, scans, names, aliases_at)
    work = sorted(scans, key=lambda r: -len(scans[r][1].calls))  # big files first, dealt round-robin
    jobs = max(1, min(jobs, len(work)))
    if jobs == 1:
        parts = [resolve_files(work)]
    else:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            parts = pool.map(resolve_files, [work[i::jobs] for i in range(jobs)])
    calls = sorted((c for p in parts for c in p["calls"]), key=lambda c: (c["file"], c["line"], c["col"], c["callee"]))
    imports = sorted((i for p in parts for i in p["imports"]), key=lambda i: (i["file"], i["line"], i["dst"]))
    sites = {k: sum(p["counts"].get(k, 0) for p in parts) for k in sorted({k for p in parts for k in p["counts"]})}
    sites["total"] = sum(len(s[1].calls) for s in scans.values())
    result = {
        "tool": {"name": "jedi", "version": jedi.__version__},
        "files": sorted(defs),
        "skipped": skipped,
        "definitions": dict(sorted(defs.items())),
        "calls": calls,
        "imports": imports,
        "sites": sites,
        "seconds": round(time.monotonic() - t0, 1),
    }
    out_path.write_text(json.dumps(result, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
