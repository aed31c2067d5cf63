"""A hostile repository, built in a temp dir: every entry is something a real checkout can contain and a naive
indexer trips on. `build()` returns the root and what each entry must come out as."""

from __future__ import annotations

import os
from pathlib import Path

SECRET_MARKER = "NEXUSSECRETMARKER7f3a9c"
OUTSIDE_MARKER = "NEXUSOUTSIDEMARKER51be"

# path -> the skip reasons the daemon may report for it (an empty tuple: indexed, possibly with a diagnostic)
EXPECT: dict[str, tuple[str, ...]] = {
    "huge.py": ("too-large",),  # 100 MB
    "oneline.py": ("too-large",),  # one 10 MB line
    "longline.py": (),  # one 1.5 MB line: under the cap, parsed
    "deep_parens.py": (),  # 50,000 nested parentheses
    "deep_defs.py": (),  # 90 nested functions (near Python's own indentation limit)
    "deep_array.js": (),  # 100,000 nested arrays
    "binary.py": ("binary",),  # NUL bytes under a .py name
    "latin1.py": (),  # invalid UTF-8
    "loop": ("symlink",),  # a symlink to itself
    "dirloop": ("symlink",),  # a directory symlink to its parent
    "etc": ("symlink-escape",),  # a symlink to /etc
    "passwd.py": ("symlink-escape",),  # a symlink to /etc/passwd
    "outside_link.py": ("symlink-escape",),  # a symlink to a file outside the root
    "src/.env": ("secret",),
    "src/.env.local": ("secret",),
    "src/id_rsa": ("secret",),
    "src/server.key": ("secret",),
    "src/certs/site.pem": ("secret",),
    "src/credentials.json": ("secret",),
}
BAD_NAMES = ("new\nline.py", b"bad\xffname.py")


def build(base: Path, *, empty_files: int = 0) -> Path:
    root = base / "hostile"
    outside = base / "outside"
    (root / "src" / "certs").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.py").write_text(f'TOKEN = "{OUTSIDE_MARKER}"\ndef {OUTSIDE_MARKER}():\n    pass\n')
    (root / "good.py").write_text("def good_function():\n    return helper()\n\n\ndef helper():\n    return 1\n")
    (root / "src" / "app.py").write_text("class App:\n    def run(self):\n        return 42\n")
    with open(root / "huge.py", "wb") as fh:  # sparse: 100 MB on paper, instant to write
        fh.write(b"def huge():\n    pass\n")
        fh.truncate(100 * 1024 * 1024)
    (root / "oneline.py").write_bytes(b"x = '" + b"a" * (10 * 1024 * 1024) + b"'\n")
    (root / "longline.py").write_bytes(b"def long_line():\n    return '" + b"b" * 1_500_000 + b"'\n")
    (root / "deep_parens.py").write_text("def deep_parens():\n    return " + "(" * 50_000 + "1" + ")" * 50_000 + "\n")
    deep = "".join(f"{'    ' * i}def level{i}():\n" for i in range(90)) + "    " * 90 + "return 1\n"
    (root / "deep_defs.py").write_text(deep)
    (root / "deep_array.js").write_text("export const deep = " + "[" * 100_000 + "]" * 100_000 + ";\n")
    (root / "binary.py").write_bytes(b"def fake():\n    pass\n\x00\x01\x02" + os.urandom(4096))
    (root / "latin1.py").write_bytes(b"def latin_one():\n    return '\xe9t\xe9 \xff\xfe'\n")
    os.symlink("loop", root / "loop")
    os.symlink(".", root / "dirloop")
    os.symlink("/etc", root / "etc")
    os.symlink("/etc/passwd", root / "passwd.py")
    os.symlink(outside / "secret.py", root / "outside_link.py")
    secret = f"AWS_SECRET_ACCESS_KEY={SECRET_MARKER}\n"
    for rel in ("src/.env", "src/.env.local", "src/credentials.json"):
        (root / rel).write_text(secret)
    for rel in ("src/id_rsa", "src/server.key", "src/certs/site.pem"):
        (root / rel).write_text(f"-----BEGIN PRIVATE KEY-----\n{SECRET_MARKER}\n-----END PRIVATE KEY-----\n")
    # A key pasted into a source file is source: it is indexed, but history redaction is not our subject here.
    (root / "new\nline.py").write_text("def newline_name():\n    pass\n")
    with open(os.path.join(os.fsencode(root), b"bad\xffname.py"), "wb") as fh:
        fh.write(b"def bad_name():\n    pass\n")
    if empty_files:
        per_dir = 1000
        for d in range(0, empty_files, per_dir):
            folder = root / "many" / f"d{d // per_dir:03d}"
            folder.mkdir(parents=True)
            for i in range(min(per_dir, empty_files - d)):
                (folder / f"e{i}.py").touch()
    return root
