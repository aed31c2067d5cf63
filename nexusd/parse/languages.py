"""Which files NEXUS parses, which it only records, and what role each file plays.

Two tables, deliberately separate:

* `LANGUAGES` — one record per language whose symbols we extract: its extensions, grammar, query file, hooks,
  resolver rules, key prefix and project files. This is the allow-list: the tree-sitter pack ships grammars
  that hang forever on simple input (docs/field-notes.md, tree-sitter: cobol), so nothing is parsed just
  because a grammar is available. Adding a parsed language means: a record here, its query file
  (`queries/<name>.scm`), its hooks (`lang_<name>.py`), its rules (`resolve/<family>.py`), and fixtures
  (ARCHITECTURE.md, "Where to add").
* `KNOWN` — the other extensions we recognise, so a File node can carry a language even when no symbols are
  extracted from it (Kotlin, Markdown, ...).

The records are plain data and this module imports nothing of NEXUS: hooks and rules are named by module and
class, and loaded by the layer that owns them (`extract.py` the hooks, `resolve/registry.py` the rules), so
the table sits below both parse/ and resolve/ without either importing the other.

`classify_role` is a pure function of the path: roles drive ranking and filtering, never parsing.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Language:
    """One parsed language, as data."""

    name: str  # the language of its facts (`FileFacts.language`) and, by default, its grammar's name
    extensions: tuple[str, ...]  # lower case, with the dot
    hooks: str  # `module.Class` under nexusd.parse; a class shared by languages (no `language`) gets the name
    rules: str  # `module.Class` under nexusd.resolve; one rules instance per class serves all its languages
    key_prefix: str  # the head of a semantic key: `py:method:pkg/mod.py:Class.method`
    # Project files whose change invalidates what the rules read from them (module paths, include dirs).
    project_files: frozenset[str] = frozenset()
    grammar: str = ""  # the tree-sitter pack's grammar, when it differs from `name`
    query: str = ""  # the query file under queries/, when it is not `<name>.scm`

    @property
    def grammar_name(self) -> str:
        return self.grammar or self.name

    @property
    def query_file(self) -> str:
        return self.query or f"{self.name}.scm"


_ECMA_PROJECT = frozenset({"package.json", "tsconfig.json", "jsconfig.json", "pnpm-workspace.yaml"})
_C_PROJECT = frozenset({"compile_commands.json"})

LANGUAGES: tuple[Language, ...] = (
    Language("python", (".py", ".pyi"), "lang_python.PythonHooks", "python.PythonRules", "py"),
    Language(
        "javascript", (".js", ".mjs", ".cjs", ".jsx"), "lang_ecmascript.EcmaHooks", "typescript.EcmaRules", "js",
        _ECMA_PROJECT,
    ),
    Language(
        "typescript", (".ts", ".mts", ".cts"), "lang_ecmascript.EcmaHooks", "typescript.EcmaRules", "ts",
        _ECMA_PROJECT,
    ),
    Language("tsx", (".tsx",), "lang_ecmascript.EcmaHooks", "typescript.EcmaRules", "tsx", _ECMA_PROJECT),
    Language("java", (".java",), "lang_java.JavaHooks", "java.JavaRules", "java"),
    Language("csharp", (".cs",), "lang_csharp.CSharpHooks", "csharp.CSharpRules", "cs"),
    Language("ruby", (".rb",), "lang_ruby.RubyHooks", "ruby.RubyRules", "rb"),
    Language("go", (".go",), "lang_go.GoHooks", "go.GoRules", "go", frozenset({"go.mod"})),
    Language("rust", (".rs",), "lang_rust.RustHooks", "rust.RustRules", "rs", frozenset({"Cargo.toml"})),
    Language("c", (".c",), "lang_c.CFamilyHooks", "cfamily.CFamilyRules", "c", _C_PROJECT),
    # .h is parsed as C++: C++ headers are very often .h, and the C++ grammar reads C declarations too.
    Language(
        "cpp", (".h", ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".ipp", ".inl"),
        "lang_c.CFamilyHooks", "cfamily.CFamilyRules", "cpp", _C_PROJECT,
    ),
)  # fmt: skip

BY_NAME: dict[str, Language] = {lang.name: lang for lang in LANGUAGES}

# Extension -> language for languages that have a query file and are extracted.
PARSED: dict[str, str] = {ext: lang.name for lang in LANGUAGES for ext in lang.extensions}

# Extension -> language for files recorded as File nodes only (no symbols): extensions of `LANGUAGES` win.
KNOWN: dict[str, str] = {
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".php": "php",
    ".swift": "swift",
    ".lua": "lua",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
    ".sql": "sql",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".vue": "vue",
    ".svelte": "svelte",
    ".md": "markdown",
    ".markdown": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".json": "json",
    ".jsonc": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".xml": "xml",
    ".proto": "proto",
    ".graphql": "graphql",
}

# Whole file names that carry a language without a telling extension.
KNOWN_NAMES: dict[str, str] = {
    "Dockerfile": "dockerfile",
    "Makefile": "make",
    "GNUmakefile": "make",
    "CMakeLists.txt": "cmake",
    "Gemfile": "ruby",
    "Rakefile": "ruby",
}

MANIFESTS = frozenset(
    {
        "pyproject.toml",
        "setup.py",
        "setup.cfg",
        "requirements.txt",
        "Pipfile",
        "poetry.lock",
        "package.json",
        "go.mod",
        "Cargo.toml",
        "pom.xml",
        "build.gradle",
        "build.gradle.kts",
        "Gemfile",
        "composer.json",
        "CMakeLists.txt",
        "Makefile",
        "environment.yml",
    }
)

DOCUMENT_EXTS = frozenset({".md", ".markdown", ".rst", ".txt", ".adoc"})
CONFIG_EXTS = frozenset(
    {".json", ".jsonc", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".xml", ".env"}
)
CONFIG_NAMES = frozenset(
    {"Dockerfile", "tox.ini", "tsconfig.json", "jsconfig.json", "noxfile.py", "conftest.py"}
)
TEST_DIRS = frozenset({"tests", "test", "__tests__", "spec", "specs", "testing"})
SOURCE_EXTS = frozenset(PARSED) | frozenset(
    ext
    for ext, lang in KNOWN.items()
    if lang
    not in {
        "markdown",
        "rst",
        "text",
        "json",
        "yaml",
        "toml",
        "ini",
        "xml",
    }
)
ENTRY_NAMES = frozenset(
    {"__main__.py", "main.py", "cli.py", "manage.py", "wsgi.py", "asgi.py", "main.go", "main.rs"}
)
INDEX_NAMES = frozenset({"index.js", "index.ts", "index.mjs", "index.cjs", "index.tsx", "index.jsx"})


def language_for(path: str) -> str:
    """The language of a path for its File node, "" when unknown."""
    name = posixpath.basename(path)
    if name in KNOWN_NAMES:
        return KNOWN_NAMES[name]
    ext = _ext(name)
    return PARSED.get(ext) or KNOWN.get(ext, "")


def parsed_language(path: str) -> str | None:
    """The language to extract symbols with, or None when the file is recorded but not parsed."""
    return PARSED.get(_ext(posixpath.basename(path)))


def classify_role(path: str) -> str:
    """One role from facts.ROLES, decided by conventions on the (repository-relative) path alone.

    Order matters: a manifest or test is recognised before the generic source/config/document rules,
    because `setup.py` is a manifest first and `tests/conftest.py` is test code first.
    """
    path = path.replace("\\", "/")
    parts = [p for p in path.split("/") if p]
    if not parts:
        return "other"
    name = parts[-1]
    dirs = parts[:-1]
    ext = _ext(name)
    if name in MANIFESTS:
        return "manifest"
    if _is_test(name, dirs, ext):
        return "test"
    if name in CONFIG_NAMES or (name.startswith("tsconfig") and ext == ".json"):
        return "configuration"
    if ext in DOCUMENT_EXTS or name in {"README", "LICENSE", "CHANGELOG", "CONTRIBUTING", "AUTHORS"}:
        return "document"
    if name.startswith(".") and ext not in SOURCE_EXTS:
        return "configuration"
    if ext in CONFIG_EXTS:
        return "configuration"
    if _is_entry_point(name, dirs, ext):
        return "entry_point"
    if ext in SOURCE_EXTS or language_for(path) in {"bash", "make", "dockerfile", "ruby"}:
        return "source"
    return "other"


def _ext(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""


def _is_test(name: str, dirs: list[str], ext: str) -> bool:
    if ext not in SOURCE_EXTS:
        return False
    if any(d in TEST_DIRS for d in dirs):
        return True
    stem = name[: -len(ext)] if ext else name
    if ext in {".py", ".pyi"}:
        return stem.startswith("test_") or stem.endswith("_test") or name == "conftest.py"
    if ext == ".go":
        return stem.endswith("_test")
    return stem.endswith((".test", ".spec", "_test", "_spec")) or stem.startswith("test_")


def _is_entry_point(name: str, dirs: list[str], ext: str) -> bool:
    if name in ENTRY_NAMES:
        return True
    if dirs and dirs[-1] == "bin" and (ext in SOURCE_EXTS or ext == ""):
        return True
    # index.js/ts only counts at a package root (next to package.json is unknowable from the path alone,
    # so "the repository root or a src/ folder directly under a package" is the convention we use).
    if name in INDEX_NAMES:
        return not dirs or dirs[-1] == "src" and len(dirs) <= 3
    return False


def relative_posix(root: Path, path: Path) -> str:
    """Repository-relative, forward-slash path: the form every fact and edge uses."""
    return path.relative_to(root).as_posix()
