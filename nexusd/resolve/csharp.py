"""C# resolution rules: namespaces, usings, partial classes; calls go through java.py's `TypeRules`.

A simple type name, as seen from a file, is (first match wins): nested types of the enclosing types and
the file's own types, `using A = X.Y.Z` aliases, the types of the file's namespaces from the innermost out
(`namespace A.B` sees A.B, then A: no using needed), `using X.Y;` namespaces, `using static X.Y.T;`
members, then the global namespace. `using` of a namespace outside the repository makes its capitalised
names external (no guess). IMPORTS edges: `using X.Y;` -> every file of namespace X.Y (up to
`STAR_FILES`, then only the files whose types are named), an alias or a `using static` -> the file of its
type. A `partial` type is one type: its members and bases are looked up in every part (`parts`).
"""

from __future__ import annotations

from nexusd.parse.facts import SymbolFact
from nexusd.resolve.base import FileBindings, FileTable, ImportEdge, Target
from nexusd.resolve.base import dedupe_imports as _dedupe
from nexusd.resolve.java import JavaRules

CS_BUILTINS = frozenset({"nameof", "typeof", "sizeof", "default", "checked", "unchecked"})
CS_COMMON_METHODS = frozenset(
    """ToString Equals GetHashCode GetType CompareTo Add AddRange Remove RemoveAt Insert Contains
    ContainsKey TryGetValue TryAdd Clear Count Any All Where Select SelectMany First FirstOrDefault
    Single SingleOrDefault Last LastOrDefault ToList ToArray ToDictionary OrderBy OrderByDescending
    GroupBy Sum Max Min Average Aggregate Distinct Skip Take Concat Zip Dispose DisposeAsync Write
    WriteLine Read ReadLine Format Join Split Trim TrimStart TrimEnd Replace StartsWith EndsWith
    Substring IndexOf ToUpper ToLower ToUpperInvariant ToLowerInvariant Invoke Wait ConfigureAwait
    GetAwaiter GetResult Append AppendLine CopyTo Parse TryParse Get Set Push Pop Enqueue Dequeue
    Peek Close Flush Log LogInformation LogWarning LogError LogDebug Start Stop Cancel""".split()
)
CS_BUILTIN_RECEIVERS = frozenset(
    """Console Math String Convert Task Enumerable Guid DateTime DateTimeOffset TimeSpan Path File
    Directory Environment GC Array Debug Trace Activator Encoding Interlocked Thread Object Int32
    Int64 Double Decimal Boolean Char StringComparer Regex JsonSerializer Assert""".split()
)


class CSharpRules(JavaRules):
    languages = frozenset({"csharp"})
    self_names = frozenset({"this"})
    super_names = frozenset({"base"})
    builtins = CS_BUILTINS
    builtin_receivers = CS_BUILTIN_RECEIVERS
    common_methods = CS_COMMON_METHODS

    def declared_types(self, table: FileTable) -> list[tuple[str, list[str]]]:
        out = [
            (imp.specifier, [n for n, _ in imp.names]) for imp in table.facts.imports if imp.kind == "package"
        ]
        inside = {n for _, names in out for n in names}
        outside = [
            s.name
            for s in table.children.get(None, {}).values()
            if s.kind in self.type_kinds and s.name not in inside
        ]
        return [*out, ("", outside)] if outside or not out else out

    def parts(self, path: str, cls: SymbolFact) -> list[tuple[str, SymbolFact]]:
        """The other `partial` declarations of `cls` (same namespace, same type-relative name)."""
        key = ("cs-parts", path, cls.qualified_name)
        cached = self.index.memo.get(key)
        if cached is not None:
            return cached  # type: ignore[return-value]
        out: list[tuple[str, SymbolFact]] = []
        table = self.index.table(path)
        top = cls.qualified_name.split(".", 1)[0]
        if table is not None:
            namespace = next((ns for ns, names in self.declared_types(table) if top in names), "")
            for other_path, _ in self.packages().get(namespace, {}).get(top, []):
                if other_path == path:
                    continue
                other = self.index.table(other_path)
                sym = other.by_qn.get(cls.qualified_name) if other is not None else None
                if sym is not None and sym.kind in self.type_kinds:
                    out.append((other_path, sym))
        self.index.memo[key] = out
        return out

    def bind(self, table: FileTable) -> FileBindings:
        out = FileBindings()
        src = table.facts.path
        packages = self.packages()
        own: list[str] = []
        for namespace, _ in self.declared_types(table):
            parts = namespace.split(".") if namespace else []
            for i in range(len(parts), 0, -1):
                enclosing = ".".join(parts[:i])
                if enclosing not in own:
                    own.append(enclosing)
        stars = [f"pkg:{ns}" for ns in own]
        external: list[str] = []
        for imp in table.facts.imports:
            spec = imp.specifier
            if imp.kind == "package":
                continue
            if imp.module_alias:  # using A = X.Y.Z;
                found = self.find_type(spec, src)
                if found is not None:
                    out.names[imp.module_alias] = Target("symbol", found[0], found[1])
                    out.edges.append(ImportEdge(src, found[0], spec, imp.line, "import-bound", 1.0))
                elif spec in packages:
                    out.names[imp.module_alias] = Target("module", f"pkg:{spec}")
                    for dst in self._star_files(table, spec):
                        out.edges.append(ImportEdge(src, dst, spec, imp.line, "import-bound", 1.0))
                else:
                    out.names[imp.module_alias] = Target("external", spec)
            elif imp.kind == "static":
                found = self.find_type(spec, src)
                if found is not None:
                    stars.append(f"static:{found[0]}\0{found[1].qualified_name}")
                    out.edges.append(ImportEdge(src, found[0], spec, imp.line, "import-bound", 1.0))
            elif spec in packages:
                stars.append(f"pkg:{spec}")
                for dst in self._star_files(table, spec):
                    out.edges.append(ImportEdge(src, dst, spec, imp.line, "import-bound", 1.0))
            else:
                external.append(f"ext:{spec}")
        # External namespaces last: they claim every capitalised name, so they only catch what is left.
        out.stars = [*stars, "pkg:", *external]
        for root in {p.split(".", 1)[0] for p in packages if p}:
            out.names.setdefault(root, Target("module", f"pkg:{root}"))
        out.edges = _dedupe(out.edges)
        return out
