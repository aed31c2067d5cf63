"""Which files of a repository NEXUS may look at: the walk rules of docs/conventions.md point 7.

The cold index calls `WalkRules.walk()`; the watcher calls `WalkRules.is_ignored()` once per event, so both
share one rule set and one per-directory cache of ignore specs. Both are pure path logic: the walk never opens a
file (stat only), because an incremental scan of an unchanged tree must cost stats and nothing else. Content
checks (NUL sniffing, size cap, symlink races) happen in `read_source`, which is the only way sources are read.

Rules, in the order they are applied (the first one that fires gives the reason):

1. `outside-root`: absolute paths, `..` components.
2. `non-utf8-path` / `bad-path-name`: names that are not valid UTF-8 (os.fsdecode surrogates) or that hold a
   newline or another control character. Such names break line-oriented tools and the wire protocol's strings.
3. `default-dir`: a directory named in `DEFAULT_IGNORED_DIRS` (VCS data, dependency trees, virtualenvs, caches,
   build output). A `.nexusignore` negation (`!vendor/`) re-includes one, because `build/` or `vendor/` is real
   source in some repositories. Hidden folders such as `.github/` are *not* skipped wholesale.
4. `gitignore` / `nexusignore`: real gitignore semantics through `pathspec.GitIgnoreSpec`: `.git/info/exclude`
   (lowest precedence), then every `.gitignore` from the root down to the path's directory, each scoped to its
   own directory, the deeper one winning; then `.nexusignore` files (same syntax, same scoping) on top, so a
   `.nexusignore` can both add exclusions and re-include something git ignores. As in git, a file inside an
   excluded directory cannot be re-included. The user's global `core.excludesFile` is deliberately not read:
   it describes one person's editor litter, and the daemon may serve several users.
5. `secret`: key material and credential files, never opened (see `classify_secret_name`).
6. `binary`: well-known binary extensions (images, archives, objects, fonts...); anything else is sniffed for a
   NUL byte by `read_source`.

A directory below the root holding a `.git` file that points into this repository's git dir (a linked worktree
created inside the checkout, `git worktree add .worktrees/x`) is skipped as `worktree`: it is another checkout of
the same repository, registered as its own view (ARCHITECTURE.md, "Worktrees"), not files of this one. A
submodule's `.git` file points elsewhere and the submodule is walked as before.

Symlinks are never followed, in either direction: a symlink out of the root is reported as `symlink-escape`;
one inside the root is reported as `symlink` and skipped, because its target is listed under its real path
anyway (listing both would duplicate every symbol) and a symlinked directory can form a loop. Not following also
means a loop costs nothing: the walk never resolves a link except to classify it.
"""

from __future__ import annotations

import os
import stat as stat_mod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from ..sourcefile import classify_secret_name, is_binary, read_source, read_source_checked

__all__ = [
    "BINARY_EXTENSIONS",
    "DEFAULT_IGNORED_DIRS",
    "SkippedPath",
    "WalkEntry",
    "WalkRules",
    "classify_secret_name",
    "is_binary",
    "read_source",
    "read_source_checked",
]

# Directories skipped by name wherever they appear. Each is either VCS data, a dependency tree, a virtualenv,
# a tool cache or build output: large, generated, and not the code the user is working on.
DEFAULT_IGNORED_DIRS: frozenset[str] = frozenset(
    {
        ".git", ".hg", ".svn",  # version control data
        "node_modules", "vendor", "bower_components",  # dependency trees
        ".venv", "venv",  # virtualenvs
        "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox",  # tool caches
        "dist", "build", "target", ".next", ".nuxt", "coverage", ".gradle",  # build output
        ".idea",  # editor state
    }
)  # fmt: skip

# Extensions that are binary in every repository we know of; skipped without opening the file.
BINARY_EXTENSIONS: frozenset[str] = frozenset(
    {
        ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".webp", ".tif", ".tiff", ".psd",
        ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".jar", ".war", ".whl", ".egg",
        ".so", ".dylib", ".dll", ".exe", ".o", ".a", ".lib", ".obj", ".pyc", ".pyo", ".class", ".wasm",
        ".woff", ".woff2", ".ttf", ".otf", ".eot",
        ".mp3", ".mp4", ".wav", ".ogg", ".flac", ".avi", ".mov", ".mkv", ".webm",
        ".pdf", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx",
        ".sqlite", ".sqlite3", ".db", ".parquet", ".npy", ".npz", ".pkl", ".pickle", ".bin",
    }
)  # fmt: skip

# Active ignore specs for a directory: ((cut, spec) for .gitignore files, (cut, spec) for .nexusignore files),
# outermost first; `cut` strips the spec's own directory prefix from a repo-relative path.
_Layers = tuple[tuple[tuple[int, GitIgnoreSpec], ...], tuple[tuple[int, GitIgnoreSpec], ...]]
_NO_LAYERS: _Layers = ((), ())


@dataclass(slots=True)
class WalkEntry:
    """One file worth considering: its repo-relative POSIX path and its lstat result (size, mtime_ns, ino)."""

    path: str
    stat: os.stat_result

    @property
    def size(self) -> int:
        return self.stat.st_size

    @property
    def mtime_ns(self) -> int:
        return self.stat.st_mtime_ns


@dataclass(slots=True)
class SkippedPath:
    """A path left out for a reason the user may want to hear about (status, diagnostics)."""

    path: str
    reason: str


def _bad_name_reason(name: str) -> str | None:
    """Names we refuse: undecodable bytes (surrogateescape) or control characters such as a newline."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "non-utf8-path"
    if not name.isprintable() and any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return "bad-path-name"
    return None


def _check(spec: GitIgnoreSpec | None, path: str) -> bool | None:
    """Tri-state gitignore verdict: True = excluded, False = re-included by `!`, None = no pattern matched."""
    if spec is None:
        return None
    check = getattr(spec, "check_file", None)
    if check is not None:  # pathspec >= 0.12
        return check(path).include  # type: ignore[no-any-return]
    verdict: bool | None = None
    for pattern in spec.patterns:  # older pathspec: last matching pattern wins
        if pattern.include is not None and pattern.match_file(path) is not None:
            verdict = bool(pattern.include)
    return verdict


def _load_spec(path: str) -> GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    lines = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        return None
    try:
        return GitIgnoreSpec.from_lines(lines)
    except ValueError:  # pathspec's GitIgnorePatternError: one line git itself ignores (e.g. ending in `\`)
        return _spec_of_valid_lines(lines)


def _spec_of_valid_lines(lines: list[str]) -> GitIgnoreSpec | None:
    """Git skips a pattern it cannot parse and keeps the rest: so do we (line by line, only when one failed)."""
    kept = []
    for line in lines:
        try:
            GitIgnoreSpec.from_lines([line])
        except ValueError:
            continue
        kept.append(line)
    return GitIgnoreSpec.from_lines(kept) if kept else None


class WalkRules:
    """The ignore rules of one repository root, with a per-directory cache of parsed ignore files.

    The cache is filled lazily and kept for the life of the object; call `invalidate()` when a `.gitignore`,
    `.nexusignore` or `.git/info/exclude` changes (the watcher sees those events).
    """

    def __init__(self, root: Path | str, max_file_bytes: int = 2_000_000) -> None:
        self.root = Path(os.path.realpath(root))
        self._root_str = str(self.root)
        self.max_file_bytes = max_file_bytes
        self.skipped: list[SkippedPath] = []
        # dir rel path ("" for root) -> (gitignore spec, nexusignore spec)
        self._specs: dict[str, tuple[GitIgnoreSpec | None, GitIgnoreSpec | None]] = {}
        self._exclude: GitIgnoreSpec | None = None
        self._exclude_loaded = False
        self._common: str | None = None  # the root's common git dir ("" outside git), found on first need
        self._nested: dict[str, bool] = {}  # dir rel path -> is a linked worktree of this repository

    # -- cache -------------------------------------------------------------------------------------------

    def invalidate(self, dir_rel: str | None = None) -> None:
        """Forget cached ignore specs: all of them, or one directory's (repo-relative, "" for the root)."""
        if dir_rel is None:
            self._specs.clear()
            self._exclude_loaded = False
            self._nested.clear()
        else:
            self._specs.pop(dir_rel.strip("/"), None)
            if dir_rel.strip("/") in ("", ".git", ".git/info"):
                self._exclude_loaded = False

    def _dir_specs(
        self, dir_rel: str, names: frozenset[str] | None = None
    ) -> tuple[GitIgnoreSpec | None, GitIgnoreSpec | None]:
        """The (.gitignore, .nexusignore) specs of one directory; `names` (the dir's listing) saves two opens."""
        cached = self._specs.get(dir_rel)
        if cached is None:
            base = os.path.join(self._root_str, dir_rel) if dir_rel else self._root_str
            git_spec = nexus_spec = None
            if names is None or ".gitignore" in names:
                git_spec = _load_spec(os.path.join(base, ".gitignore"))
            if names is None or ".nexusignore" in names:
                nexus_spec = _load_spec(os.path.join(base, ".nexusignore"))
            cached = (git_spec, nexus_spec)
            self._specs[dir_rel] = cached
        return cached

    def _layers(self, parent: _Layers, dir_rel: str, names: frozenset[str] | None = None) -> _Layers:
        """Extend the parent's active ignore layers with this directory's own files, if it has any."""
        git_spec, nexus_spec = self._dir_specs(dir_rel, names)
        if git_spec is None and nexus_spec is None:
            return parent
        cut = len(dir_rel) + 1 if dir_rel else 0
        git_layers, nexus_layers = parent
        if git_spec is not None:
            git_layers = (*git_layers, (cut, git_spec))
        if nexus_spec is not None:
            nexus_layers = (*nexus_layers, (cut, nexus_spec))
        return git_layers, nexus_layers

    def _info_exclude(self) -> GitIgnoreSpec | None:
        if not self._exclude_loaded:
            self._exclude_loaded = True
            self._exclude = None
            common = _common_dir(self._root_str)  # (a worktree's or submodule's ".git" file leads there)
            if common is not None:
                self._exclude = _load_spec(os.path.join(common, "info", "exclude"))
        return self._exclude

    def _nested_worktree(self, dir_rel: str, has_git: bool | None = None) -> bool:
        """Whether the directory `dir_rel` (below the root) is a linked worktree of this repository: its `.git`
        is a file whose git dir shares the root's common git dir. `has_git`: the listing's answer, saving a stat."""
        cached = self._nested.get(dir_rel)
        if cached is not None:
            return cached
        found = False
        if has_git is not False:
            marker = os.path.join(self._root_str, dir_rel, ".git")
            if os.path.isfile(marker):
                if self._common is None:
                    self._common = _common_dir(self._root_str) or ""
                found = bool(self._common) and _common_dir(os.path.join(self._root_str, dir_rel)) == self._common
        self._nested[dir_rel] = found
        return found

    # -- rules -------------------------------------------------------------------------------------------

    def _ignore_verdict(self, rel: str, is_dir: bool, layers: _Layers) -> str | None:
        """Gitignore/nexusignore verdict for `rel` alone (its ancestors are checked by the caller).

        `layers` are the ignore specs in force in rel's directory, outermost first; deeper ones win.
        """
        probe = rel + "/" if is_dir else rel
        verdict: bool | None = _check(self._info_exclude(), probe)
        reason = "gitignore"
        for cut, spec in layers[0]:
            found = _check(spec, probe[cut:])
            if found is not None:
                verdict = found
        for cut, spec in layers[1]:
            found = _check(spec, probe[cut:])
            if found is not None:
                verdict, reason = found, "nexusignore"
        return reason if verdict else None

    def _entry_reason(self, rel: str, name: str, is_dir: bool, layers: _Layers) -> str | None:
        """All rules for one entry whose ancestors are known to be kept."""
        bad = _bad_name_reason(name)
        if bad is not None:
            return bad
        if name == ".git" and not is_dir:
            return "default-dir"  # a linked worktree's or submodule's `.git` file ("gitdir: <path>"): git's, not code
        if is_dir and name in DEFAULT_IGNORED_DIRS:
            # A `.nexusignore` negation (`!build/`) re-includes a default-ignored directory.
            reincluded = False
            for cut, spec in layers[1]:
                found = _check(spec, (rel + "/")[cut:])
                if found is not None:
                    reincluded = found is False
            if not reincluded:
                return "default-dir"
        reason = self._ignore_verdict(rel, is_dir, layers)
        if reason is not None:
            return reason
        if not is_dir:
            if classify_secret_name(name):
                return "secret"
            dot = name.rfind(".")
            if dot > 0 and name[dot:].lower() in BINARY_EXTENSIONS:
                return "binary"
        return None

    def is_ignored(self, rel_path: str, is_dir: bool) -> str | None:
        """Why `rel_path` (repo-relative, POSIX) is ignored, or None if it is kept.

        Checks every ancestor directory too, so the watcher can ask about any event path. Returns one of
        "outside-root", "non-utf8-path", "bad-path-name", "default-dir", "gitignore", "nexusignore", "secret",
        "binary", "worktree". Size, content and symlink checks need the file itself: see `walk` and `read_source`.
        """
        rel = rel_path.replace(os.sep, "/").strip("/")
        if os.path.isabs(rel_path) or not rel:
            return "outside-root"
        parts = rel.split("/")
        if any(part in ("..", ".", "") for part in parts):
            return "outside-root"
        layers = self._layers(_NO_LAYERS, "")
        for index, name in enumerate(parts):
            last = index == len(parts) - 1
            sub = "/".join(parts[: index + 1])
            reason = self._entry_reason(sub, name, is_dir or not last, layers)
            if reason is not None:
                return reason
            if (is_dir or not last) and self._nested_worktree(sub):
                return "worktree"
            if not last:
                layers = self._layers(layers, sub)
        return None

    # -- walk --------------------------------------------------------------------------------------------

    def walk(self) -> Iterator[WalkEntry]:
        """Yield every file worth considering, depth-first, directories pruned as early as possible.

        Fills `self.skipped` (reset at each call) with the paths left out for a reason worth telling:
        too-large, secret, binary, symlink, symlink-escape, unreadable, non-utf8-path, bad-path-name, fifo,
        special-file (sockets, devices).
        Paths ignored by gitignore or by the default directory list are not reported: there are too many.
        """
        self.skipped = []
        quiet = ("gitignore", "nexusignore", "default-dir")
        # Stack of (dir rel path, ignore layers of its parent).
        stack: list[tuple[str, _Layers]] = [("", _NO_LAYERS)]
        root = self._root_str
        while stack:
            dir_rel, parent_layers = stack.pop()
            dir_abs = os.path.join(root, dir_rel) if dir_rel else root
            try:
                with os.scandir(dir_abs) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                self.skipped.append(SkippedPath(dir_rel or ".", "unreadable"))
                continue
            names = frozenset(e.name for e in entries)
            if dir_rel and ".git" in names and self._nested_worktree(dir_rel, True):
                self.skipped.append(SkippedPath(dir_rel, "worktree"))
                continue
            layers = self._layers(parent_layers, dir_rel, names)
            subdirs: list[tuple[str, _Layers]] = []
            for entry in entries:
                name = entry.name
                rel = f"{dir_rel}/{name}" if dir_rel else name
                try:
                    if entry.is_symlink():
                        self.skipped.append(SkippedPath(rel, self._symlink_reason(entry.path)))
                        continue
                    is_dir = entry.is_dir(follow_symlinks=False)
                    st = None if is_dir else entry.stat(follow_symlinks=False)
                except OSError:
                    self.skipped.append(SkippedPath(rel, "unreadable"))
                    continue
                reason = self._entry_reason(rel, name, is_dir, layers)
                if reason is not None:
                    if reason not in quiet:
                        self.skipped.append(
                            SkippedPath(rel if _bad_name_reason(name) is None else repr(rel), reason)
                        )
                    continue
                if is_dir:
                    subdirs.append((rel, layers))
                    continue
                assert st is not None
                if not stat_mod.S_ISREG(st.st_mode):  # sockets, fifos, devices: nothing to read
                    self.skipped.append(SkippedPath(rel, "fifo" if stat_mod.S_ISFIFO(st.st_mode) else "special-file"))
                    continue
                if st.st_size > self.max_file_bytes:
                    self.skipped.append(SkippedPath(rel, "too-large"))
                    continue
                yield WalkEntry(rel, st)
            stack.extend(reversed(subdirs))

    def _symlink_reason(self, link_abs: str) -> str:
        """Classify a symlink without following it for reading: escape vs. in-root (both skipped)."""
        target = os.path.realpath(link_abs)  # non-strict: loops and dangling links resolve to *some* path
        if target == self._root_str or target.startswith(self._root_str + os.sep):
            return "symlink"
        return "symlink-escape"


def _common_dir(checkout: str) -> str | None:
    """The realpath of the common git dir of the checkout at `checkout` (its `.git` directory, or where its `.git`
    file's "gitdir:" and that dir's `commondir` lead), or None. Files only, no git process."""
    marker = os.path.join(checkout, ".git")
    if os.path.isdir(marker):
        return os.path.realpath(marker)
    try:
        with open(marker, encoding="utf-8") as handle:
            line = handle.readline().strip()
        if not line.startswith("gitdir:"):
            return None
        gitdir = os.path.join(checkout, line[7:].strip())
        common = os.path.join(gitdir, "commondir")
        if os.path.isfile(common):
            with open(common, encoding="utf-8") as handle:
                gitdir = os.path.join(gitdir, handle.read().strip())
    except OSError:
        return None
    return os.path.realpath(gitdir)
