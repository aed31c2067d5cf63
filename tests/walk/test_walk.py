"""Walk rules against real directory trees: ignore files, default dirs, secrets, binaries, symlinks, odd names."""

from __future__ import annotations

import os
import sysconfig
import time
from pathlib import Path

import pytest

from nexusd.sync.walk import WalkRules, classify_secret_name, is_binary, read_source, read_source_checked


def write(root: Path, rel: str, data: str | bytes = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root, ".gitignore", "*.log\n!keep.log\n/out/\nsub/gen/\n# comment\n\n")
    write(root, ".git/HEAD", "ref: refs/heads/main\n")
    write(root, ".git/info/exclude", "excluded.txt\n")
    write(root, ".nexusignore", "big_data/\n!build/\n")
    for rel in [
        "src/app.py", "src/util.py", "debug.log", "keep.log", "out/result.txt", "src/out/kept.txt",
        "sub/gen/x.py", "sub/main.py", "excluded.txt", "big_data/a.csv", "build/tool.py", "dist/bundle.js",
        "node_modules/left-pad/index.js", ".venv/lib/site.py", "pkg/__pycache__/m.cpython-311.pyc",
        ".github/workflows/ci.yml", "vendor/lib.go", "src/.hidden/conf.py",
        ".env", ".env.local", ".env.example", "certs/server.pem", "id_rsa", "id_ed25519.pub", "credentials.json",
        "deploy/tls.key", "store.p12", ".npmrc",
    ]:  # fmt: skip
        write(root, rel)
    write(root, "pkg/.gitignore", "local.txt\n!important.log\n")
    write(root, "pkg/local.txt")
    write(root, "pkg/important.log")
    write(root, "pkg/deep/local.txt")
    write(root, "local.txt")
    write(root, "logo.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    write(root, "blob.dat", b"abc\x00def")
    write(root, "big.txt", "y" * 5000)
    return root


def listed(rules: WalkRules) -> dict[str, os.stat_result]:
    return {entry.path: entry.stat for entry in rules.walk()}


def test_walk_applies_gitignore_nexusignore_defaults_and_secrets(repo: Path) -> None:
    rules = WalkRules(repo, max_file_bytes=1000)
    paths = set(listed(rules))
    assert {
        "src/app.py", "src/util.py", "keep.log", "src/out/kept.txt", "sub/main.py", "build/tool.py",
        ".github/workflows/ci.yml", "src/.hidden/conf.py", ".env.example", "pkg/important.log", "local.txt",
        "blob.dat", ".gitignore", ".nexusignore", "pkg/.gitignore",
    } <= paths  # fmt: skip
    for gone in [
        "debug.log", "out/result.txt", "sub/gen/x.py", "excluded.txt", "big_data/a.csv", "dist/bundle.js",
        "node_modules/left-pad/index.js", ".venv/lib/site.py", "vendor/lib.go", ".git/HEAD",
        "pkg/local.txt", "pkg/deep/local.txt", "logo.png", "big.txt",
        ".env", ".env.local", "certs/server.pem", "id_rsa", "id_ed25519.pub", "credentials.json",
        "deploy/tls.key", "store.p12", ".npmrc",
    ]:  # fmt: skip
        assert gone not in paths, gone
    reasons = {s.path: s.reason for s in rules.skipped}
    assert reasons["big.txt"] == "too-large"
    assert reasons["logo.png"] == "binary"
    assert (
        reasons[".env"] == "secret"
        and reasons["id_rsa"] == "secret"
        and reasons["certs/server.pem"] == "secret"
    )
    assert "debug.log" not in reasons  # ignored paths are too many to report
    stat = listed(rules)["src/app.py"]
    assert stat.st_size == 6 and stat.st_mtime_ns > 0 and stat.st_ino > 0


def test_is_ignored_reasons_match_the_walk(repo: Path) -> None:
    rules = WalkRules(repo)
    cases = {
        ("debug.log", False): "gitignore",
        ("keep.log", False): None,
        ("pkg/local.txt", False): "gitignore",
        ("pkg/important.log", False): None,  # nested negation beats the root pattern
        ("local.txt", False): None,  # pkg/.gitignore is scoped to pkg/
        ("out", True): "gitignore",
        ("out/result.txt", False): "gitignore",  # inside an ignored dir
        ("src/out/kept.txt", False): None,  # /out/ is anchored to the root
        ("excluded.txt", False): "gitignore",
        ("big_data/a.csv", False): "nexusignore",
        ("build/tool.py", False): None,  # default dir re-included by .nexusignore
        ("dist/bundle.js", False): "default-dir",
        ("node_modules", True): "default-dir",
        ("a/b/node_modules/x/y.js", False): "default-dir",
        (".github/workflows/ci.yml", False): None,
        (".env", False): "secret",
        (".env.example", False): None,
        ("src/app.py", False): None,
        ("logo.png", False): "binary",
        ("../etc/passwd", False): "outside-root",
        ("/etc/passwd", False): "outside-root",
        ("bad\udcff.py", False): "non-utf8-path",
        ("new\nline.py", False): "bad-path-name",
    }
    for (path, is_dir), reason in cases.items():
        assert rules.is_ignored(path, is_dir) == reason, path


def test_invalidate_picks_up_a_changed_gitignore(repo: Path) -> None:
    rules = WalkRules(repo)
    assert rules.is_ignored("src/app.py", False) is None
    (repo / ".gitignore").write_text("src/\n", encoding="utf-8")
    assert rules.is_ignored("src/app.py", False) is None  # cached until told
    rules.invalidate("")
    assert rules.is_ignored("src/app.py", False) == "gitignore"


def test_symlinks_are_never_followed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, "real/code.py")
    os.symlink("/etc", root / "etc_link")
    os.symlink("/etc/passwd", root / "passwd_link")
    os.symlink("loop_b", root / "loop_a")
    os.symlink("loop_a", root / "loop_b")
    os.symlink(".", root / "real" / "self")
    os.symlink("..", root / "real" / "parent")
    os.symlink("real/code.py", root / "alias.py")
    os.symlink("missing", root / "dangling")
    start = time.monotonic()
    rules = WalkRules(root)
    paths = set(listed(rules))
    assert time.monotonic() - start < 5
    assert paths == {"real/code.py"}
    reasons = {s.path: s.reason for s in rules.skipped}
    assert reasons["etc_link"] == "symlink-escape"
    assert reasons["passwd_link"] == "symlink-escape"
    assert reasons["alias.py"] == "symlink"
    assert reasons["real/self"] == "symlink"
    assert {"loop_a", "loop_b", "dangling"} <= set(reasons)
    assert read_source(root, "passwd_link") is None
    assert read_source_checked(root, "passwd_link")[1] == "outside-root"
    assert read_source_checked(root, "alias.py")[1] == "symlink"
    assert read_source_checked(root, "loop_a")[0] is None


def test_odd_file_names_are_skipped_with_a_diagnostic(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, "ok.py")
    fd = os.open(os.path.join(os.fsencode(root), b"bad\xff.py"), os.O_CREAT | os.O_WRONLY, 0o644)
    os.close(fd)
    write(root, "new\nline.py")
    rules = WalkRules(root)
    assert set(listed(rules)) == {"ok.py"}
    assert sorted(s.reason for s in rules.skipped) == ["bad-path-name", "non-utf8-path"]


def test_unreadable_directory_is_reported(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads everything")
    root = tmp_path / "repo"
    write(root, "locked/a.py")
    (root / "locked").chmod(0)
    try:
        rules = WalkRules(root)
        assert list(rules.walk()) == []
        assert [(s.path, s.reason) for s in rules.skipped] == [("locked", "unreadable")]
    finally:
        (root / "locked").chmod(0o755)


def test_read_source_checks(repo: Path) -> None:
    assert read_source(repo, "src/app.py") == b"x = 1\n"
    assert read_source_checked(repo, "blob.dat") == (None, "binary")
    assert read_source_checked(repo, "big.txt", max_bytes=100) == (None, "too-large")
    assert read_source_checked(repo, ".env") == (None, "secret")
    assert read_source_checked(repo, "../x") == (None, "outside-root")
    assert read_source_checked(repo, "missing.py") == (None, "unreadable")
    assert read_source_checked(repo, "src") == (None, "unreadable")


def test_secret_names_and_binary_sniffing() -> None:
    for name in [".env", ".env.production", "id_rsa", "id_ed25519", "x.pem", "tls.KEY", "a.pfx", "k.keystore",
                 ".pypirc", ".netrc", "credentials.json", "terraform.tfstate"]:  # fmt: skip
        assert classify_secret_name(name), name
    for name in [
        ".env.example",
        ".env.sample",
        "environment.py",
        "keys.py",
        "monkey.js",
        "README.md",
        "pem.py",
    ]:
        assert not classify_secret_name(name), name
    assert is_binary(b"ab\x00c") and not is_binary("héllo".encode())
    assert not is_binary(b"a" * 8192 + b"\x00")  # only the first 8 KiB count


def test_walk_of_the_stdlib_is_fast() -> None:
    stdlib = sysconfig.get_paths()["stdlib"]
    rules = WalkRules(stdlib)
    sum(1 for _ in rules.walk())  # warm the OS caches
    start = time.perf_counter()
    count = sum(1 for _ in rules.walk())
    elapsed = time.perf_counter() - start
    assert count > 500
    # A guard against a walk gone quadratic, not a speed target (bench/index_bench.py measures that).
    assert elapsed < 20.0, f"walk of {count} files took {elapsed:.3f}s"
