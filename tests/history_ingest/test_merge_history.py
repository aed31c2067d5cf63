"""Merges in function history, on a real git repository and a real daemon: a merge is listed for a function
exactly when `git log -L` lists it (the function differs from every parent), from the merge's combined diff.

The history: `both` is edited on each branch at different lines (a clean merge whose result matches neither
parent there), `side_only` only on the topic branch (the merge takes it unchanged from one parent), and the merge
itself adds a line to `evil` that neither parent has."""

from __future__ import annotations

import re
from pathlib import Path

from nexusd.history import git as git_source
from tests.helpers import DaemonProcess, git
from tests.history_ingest.conftest import Factory, commit, register


def body(name: str, n: int = 6) -> str:
    return f"def {name}(x):\n" + "".join(f"    {name}_{i} = x + {i}\n" for i in range(n)) + f"    return {name}_0\n"


FUNCS = ("both", "side_only", "evil", "untouched")


def build(repo: Path) -> str:
    t = 2_000_000_000
    commit(repo, "add the functions", {"m.py": "\n\n".join(body(f) for f in FUNCS)}, t)
    git(repo, "checkout", "-q", "-b", "topic")
    src = (repo / "m.py").read_text()
    src = src.replace("both_1 = x + 1", "both_1 = x + 100").replace("side_only_2 = x + 2", "side_only_2 = 0")
    commit(repo, "topic: both and side_only", {"m.py": src}, t + 10)
    git(repo, "checkout", "-q", "main")
    src = (repo / "m.py").read_text()
    commit(repo, "main: both at its end", {"m.py": src.replace("both_5 = x + 5", "both_5 = x + 500")}, t + 20)
    git(repo, "merge", "-q", "--no-ff", "--no-commit", "topic")
    src = (repo / "m.py").read_text()
    (repo / "m.py").write_text(src.replace("evil_3 = x + 3", "evil_3 = x + 3\n    evil_extra = 1"))
    git(repo, "add", "m.py")
    git(repo, "-c", "core.editor=true", "commit", "-q", "-m", "Merge branch topic", f"--date=@{t + 30}")
    return git(repo, "rev-parse", "HEAD").strip()


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)


def test_combined_hunks_are_each_parents_own_diff(new_repo: Factory) -> None:
    repo = new_repo()
    merge = build(repo)
    got = next(c for c in git_source.read_commits(repo, None) if c.sha == merge)
    assert got.is_merge and [ch.path for ch in got.changes] == ["m.py"]
    change = got.changes[0]
    assert change.skipped == "merge" and not change.patch and len(change.parent_hunks) == 2
    for i, parent in enumerate(got.parents):
        diff = git(repo, "diff", "-U0", parent, merge, "--", "m.py")
        want = [(int(c), int(d or 1), int(a), int(b or 1))
                for a, b, c, d in _HUNK.findall(diff)]  # fmt: skip
        assert [tuple(h) for h in change.parent_hunks[i]] == want
    assert change.hunks == change.parent_hunks[0]


def line_log(repo: Path, name: str) -> list[str]:
    out = git(repo, "log", f"-L:{name}:m.py", "--format=%x1e%H", "--no-patch")
    return [x.strip() for x in out.split("\x1e") if x.strip()]


def test_history_lists_a_merge_when_git_log_L_does(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo()
    merge = build(repo)
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo), "docs": False}, timeout=120)
        for name in FUNCS:
            h = c.request("history", {"repo": str(repo), "target": f"m.py:{name}", "limit": 50})
            shas = [ch["sha"] for ch in h["symbols"][0]["changes"]]
            assert sorted(shas) == sorted(line_log(repo, name)), name
            assert (merge in shas) == (name in ("both", "evil")), name
        # A merge's changes are for function history only: no query result is a merge's change.
        r = c.request("query", {"repo": str(repo), "text": "evil_extra m.py", "kinds": ["change"]})
        assert all(item.get("sha") != merge for item in r["results"])
