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
