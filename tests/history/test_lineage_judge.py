"""The function-history bench's judge (bench/function_history/judge.py) on a real git repository: a commit
touched a function only when a changed line lies inside it; a commit before the function existed, or one that
changed its neighbour only, did not, even where `git log -L`'s range lists it."""

from __future__ import annotations

from pathlib import Path

from bench.function_history.judge import judge, line_log_paths
from tests.helpers import git

BETA = "def beta():\n    x = 1\n    return x\n"


def commit(repo: Path, text: str, message: str) -> str:
    (repo / "a.py").write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def test_judge_reads_the_commits_own_diff(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "T")
    born = commit(repo, BETA, "beta only")
    alpha = "def alpha():\n    y = 2\n    return y\n\n\n"
    added = commit(repo, alpha + BETA, "add alpha above beta")
    beside = commit(repo, alpha + BETA.replace("x = 1", "x = 3"), "change beta only")
    inside = commit(repo, alpha.replace("y = 2", "y = 5") + BETA.replace("x = 1", "x = 3"), "change alpha")
    paths = [("a.py", "a.py")]
    assert judge(repo, born, paths, "alpha") == (False, False, False)  # before alpha existed
    assert judge(repo, added, paths, "alpha") == (False, True, True)
    assert judge(repo, beside, paths, "alpha") == (False, True, False)  # its neighbour changed, not alpha
    assert judge(repo, beside, paths, "beta") == (False, True, True)
    assert judge(repo, inside, paths, "alpha") == (False, True, True)
    assert judge(repo, inside, paths, "Klass.alpha") == (False, True, True)  # by short name when no qualified one
    # git's own line log of alpha's lines: the commits it lists all carry the file's paths
    listed = line_log_paths(repo, {"start": 1, "end": 3, "path": "a.py"})
    assert inside in listed and added in listed and listed[inside] == ("a.py", "a.py")


def test_a_merge_is_judged_on_its_first_parent(tmp_path: Path) -> None:
    repo = tmp_path / "m"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "T")
    commit(repo, BETA, "beta")
    git(repo, "checkout", "-q", "-b", "side")
    commit(repo, BETA.replace("x = 1", "x = 9"), "side changes beta")
    git(repo, "checkout", "-q", "main")
    (repo / "b.txt").write_text("other\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main changes another file")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    merge = git(repo, "rev-parse", "HEAD").strip()
    assert judge(repo, merge, [("a.py", "a.py")], "beta") == (True, True, True)
