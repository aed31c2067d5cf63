"""`history SYMBOL` on a real git repository whose functions move: lines shift, the file is renamed, a method is
edited in a class that moved, a function is renamed. The expected commits are known by construction and also checked against
`git log -L`. A real daemon; one test kills it with SIGKILL and restarts it on the same NEXUS_HOME."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess, git
from tests.history_ingest.conftest import Factory, commit, register

TARGET = "def target(x):\n    y = x + 1\n    return y\n"
OTHER = "def other():\n    return 'other'\n"
CLASS = "class Box:\n    def put(self, item):\n        self.item = item\n\n    def take(self):\n        return self.item\n"
ABOVE = "def above():\n" + "".join(f"    v{i} = {i}\n" for i in range(30)) + "    return v0\n"


def build(repo: Path) -> dict[str, str]:
    """The history: returns the sha of each step by name."""
    shas = {}
    t = 2_000_000_000
    shas["create"] = commit(repo, "add target and other", {"pkg/mod.py": f"{TARGET}\n\n{OTHER}\n\n{CLASS}"}, t)
    shas["edit_target"] = commit(
        repo, "target adds two", {"pkg/mod.py": f"{TARGET.replace('+ 1', '+ 2')}\n\n{OTHER}\n\n{CLASS}"}, t + 10
    )
    src = (repo / "pkg/mod.py").read_text()
    # 33 lines above: target now sits where `above` is, and `other` where target was.
    shas["insert_above"] = commit(repo, "add above", {"pkg/mod.py": f"{ABOVE}\n\n{src}"}, t + 20)
    src = (repo / "pkg/mod.py").read_text()
    shas["edit_other"] = commit(repo, "other says hi", {"pkg/mod.py": src.replace("'other'", "'hi'")}, t + 30)
    git(repo, "mv", "pkg/mod.py", "pkg/core.py")
    shas["rename"] = commit(repo, "rename mod to core", None, t + 40)
    src = (repo / "pkg/core.py").read_text()
    shas["edit_after_rename"] = commit(
        repo, "target after the rename", {"pkg/core.py": src.replace("return y", "return y * 2")}, t + 50
    )
    src = (repo / "pkg/core.py").read_text()
    shas["edit_take"] = commit(
        repo, "take clears", {"pkg/core.py": src.replace("return self.item", "return self.__dict__.pop('item')")},
        t + 60,
    )
    src = (repo / "pkg/core.py").read_text()
    shas["rename_other"] = commit(repo, "other is greet", {"pkg/core.py": src.replace("def other():", "def greet():")},
                                  t + 70)  # fmt: skip
    return shas


def changes(c: Any, repo: Path, target: str) -> set[str]:
    out = c.request("history", {"repo": str(repo), "target": target, "limit": 200, "patch": False})
    assert len(out["symbols"]) == 1, out
    return {ch["sha"] for ch in out["symbols"][0]["changes"]}


def line_log(repo: Path, path: str, name: str) -> set[str]:
    """`git log -L` over the function's current lines, as Python's own parser reports them."""
    tree = ast.parse((repo / path).read_text())
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name)
    text = git(repo, "log", "-L", f"{node.lineno},{node.end_lineno}:{path}", "--format=%x00%H", "--no-patch")
    return {part.split()[0] for part in text.split("\0")[1:] if part.strip()}


def test_moved_and_renamed_functions_keep_their_commits(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo(files={"README.md": "# r\n"})
    s = build(repo)
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo), "docs": False}, timeout=120)
        want_target = {s["create"], s["edit_target"], s["edit_after_rename"]}
        assert changes(c, repo, "pkg/core.py:target") == want_target
        assert changes(c, repo, "target") == want_target  # a bare name
        # the code graph's key, as `locate` prints it
        key = c.request("locate", {"repo": str(repo), "query": "target"})["results"][0]["key"]
        assert key == "py:function:pkg/core.py:target"
        assert changes(c, repo, key) == want_target
        # Before, the hunks of `edit_target` (lines 2 of that day) were matched against today's lines, where
        # `above` now sits: the old answer for `above` held `edit_target`.
        assert changes(c, repo, "above") == {s["insert_above"]}
        # renamed in its file: the history goes on under the old name, up to the rename
        assert changes(c, repo, "greet") == {s["create"], s["edit_other"], s["rename_other"]}
        greet = c.request("history", {"repo": str(repo), "target": "greet"})["symbols"][0]
        assert greet["formerNames"] == ["other"]
        assert changes(c, repo, "pkg/core.py:Box.take") == {s["create"], s["edit_take"]}
        assert changes(c, repo, "Box.put") == {s["create"]}
        out = c.request("history", {"repo": str(repo), "target": "target"})
        assert out["symbols"][0]["formerPaths"] == ["pkg/mod.py"]
    # The same answers as git's own line log, where a function's lines are followed through each diff.
    assert line_log(repo, "pkg/core.py", "target") == want_target
    assert line_log(repo, "pkg/core.py", "take") == {s["create"], s["edit_take"]}
    assert line_log(repo, "pkg/core.py", "above") == {s["insert_above"]}
    assert line_log(repo, "pkg/core.py", "greet") == {s["create"], s["edit_other"], s["rename_other"]}


def test_history_links_survive_kill9_and_restart(tmp_path: Path, new_repo: Factory) -> None:
    repo = new_repo(files={"README.md": "# r\n"})
    s = build(repo)
    home = tmp_path / "nexus-home"
    first = DaemonProcess(home=home)
    first.start()
    try:
        with first.client() as c:
            register(c, repo)
            c.request("history.sync", {"repo": str(repo), "docs": False}, timeout=120)
            before = changes(c, repo, "pkg/core.py:target")
        first.kill9()
        second = DaemonProcess(home=home)
        second.start()
        try:
            with second.client() as c:
                after = changes(c, repo, "pkg/core.py:target")
                assert after == before == {s["create"], s["edit_target"], s["edit_after_rename"]}
                # a code re-index after the crash rebuilds symbols; history still answers from the changes
                c.request("index", {"repo": str(repo), "full": True}, timeout=120)
                assert changes(c, repo, "pkg/core.py:target") == before
        finally:
            second.cleanup()
    finally:
        first.cleanup()


PARSE = (
    "def parse_rows(text, sep=','):\n"
    "    rows = []\n"
    "    for line in text.splitlines():\n"
    "        if not line.strip() or line.startswith('#'):\n"
    "            continue\n"
    "        rows.append([cell.strip() for cell in line.split(sep)])\n"
    "    return rows\n"
)
HELPER = "def helper(a, b):\n    return a * b + a - b\n"


def test_a_function_moved_to_another_file_or_a_new_name_keeps_its_history(
    daemon: DaemonProcess, new_repo: Factory
) -> None:
    repo = new_repo(files={"README.md": "# r\n"})
    t = 2_000_000_000
    s = {"create": commit(repo, "add parse_rows", {"pkg/util.py": f"{HELPER}\n\n{PARSE}"}, t)}
    s["edit"] = commit(repo, "skip comments", {"pkg/util.py": f"{HELPER}\n\n{PARSE.replace(chr(35), ';')}"}, t + 10)
    body = PARSE.replace(chr(35), ";")
    # parse_rows moves to its own module, with its body; util.py keeps helper
    (repo / "pkg/util.py").write_text(HELPER)
    s["move"] = commit(repo, "csv module", {"pkg/csv.py": f"import re\n\n\n{body}"}, t + 20)
    body = body.replace("splitlines()", "splitlines(keepends=False)")
    s["after"] = commit(repo, "explicit keepends", {"pkg/csv.py": f"import re\n\n\n{body}"}, t + 30)
    # in place: the body goes to sync_parse_rows and a new parse_rows wraps it (the old name stays)
    now = (repo / "pkg/csv.py").read_text().replace("def parse_rows(", "def sync_parse_rows(")
    s["split"] = commit(repo, "async variant", {"pkg/csv.py": now + "\n\nasync def parse_rows(text):\n    return sync_parse_rows(text)\n"}, t + 40)  # fmt: skip
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo), "docs": False}, timeout=120)
        out = c.request("history", {"repo": str(repo), "target": "pkg/csv.py:sync_parse_rows", "patch": False})
        (sym,) = out["symbols"]
        # in its file: the split (by body: the newcomer took the body and its unchanged lines), then the name
        # it had there, back to the commit that moved it in
        assert {ch["sha"] for ch in sym["changes"]} == {s["split"], s["after"], s["move"]}
        assert sym["formerNames"] == ["parse_rows"]
        # before the move: the other file, linked by body, with that stretch's own commits
        (moved,) = sym["movedFrom"]
        assert (moved["path"], moved["name"]) == ("pkg/util.py", "parse_rows")
        assert moved["how"].startswith("body ") and float(moved["how"].split()[1]) >= 0.5
        assert {ch["sha"] for ch in moved["changes"]} == {s["move"], s["edit"], s["create"]}
        # helper, which stayed in util.py, has nothing before it
        helper = c.request("history", {"repo": str(repo), "target": "pkg/util.py:helper", "patch": False})
        assert "movedFrom" not in helper["symbols"][0]
        assert {ch["sha"] for ch in helper["symbols"][0]["changes"]} == {s["create"]}
