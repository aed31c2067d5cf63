"""`query` over a real daemon and real git history: per-kind pools, a commit's changes folded into it,
test-file diffs counting for less, numbers and punctuation in questions, and the index kept in step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess
from tests.history_ingest.conftest import Factory, commit, register

DOC = """# Operations

## Deploy
Run the deploy script from the release branch, then watch the dashboard.

## On-call
Page the on-call engineer through the incident channel.
"""


def ask(c: Any, repo: Path, text: str, **extra: Any) -> list[dict[str, Any]]:
    return list(c.request("query", {"repo": str(repo), "text": text, **extra})["results"])


def test_a_doc_section_is_not_crowded_out_by_many_matching_diffs(
    daemon: DaemonProcess, new_repo: Factory
) -> None:
    repo = new_repo(files={"docs/ops.md": DOC})
    for i in range(70):  # seventy diffs full of the question's words
        body = "\n".join(f"# deploy script release branch run {i} {j}" for j in range(6))
        commit(repo, f"refactor: module {i}", {f"mod/m{i}.py": body + "\n"}, when=1_700_000_000 + i * 60)
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo), "limit": 500})
        hits = ask(c, repo, "how do I run the deploy script from the release branch?")
        top = hits[:3]
        assert any(h["kind"] == "doc" and h["headingPath"] == "Operations > Deploy" for h in top), top
        assert all(h["kind"] != "change" for h in hits)  # changes are evidence inside their commit
        assert any(h["kind"] == "commit" and h.get("evidencePath", "").startswith("mod/") for h in hits)


def test_test_file_diffs_count_for_less_and_numbers_match(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo()
    patch = "def check(body):\n    if len(body) > LIMIT:\n        raise TooLarge(413)\n"
    src = commit(repo, "update upload checks", {"src/upload.py": patch}, when=1_700_000_000)
    test = commit(repo, "update upload checks", {"tests/test_upload.py": patch}, when=1_700_000_060)
    fix = commit(
        repo,
        "fix: answer 413 when the payload is too large",
        {"src/limits.py": "LIMIT = 10\n"},
        when=1_700_000_120,
    )
    commit(repo, "chore: bump version to 4.1.3", {"VERSION": "4.1.3\n"}, when=1_700_000_180)
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo)})
        shas = [h.get("sha") for h in ask(c, repo, "raise TooLarge when len(body) > LIMIT", kinds=["commit"])]
        assert shas.index(src) < shas.index(test)  # same patch: the test file's copy ranks lower
        assert ask(c, repo, "413?")[0].get("sha") == fix  # a status code is a term; the `?` does not stick
        assert (
            ask(c, repo, "which commit bumped to 4.1.3?")[0]["text"]
            .split("\n")[0]
            .endswith("bump version to 4.1.3")
        )
        assert (
            ask(c, repo, "4.1")[0]["text"].split("\n")[0].endswith("bump version to 4.1.3")
        )  # a version prefix


def test_the_index_follows_new_commits_and_forgetting(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo()
    commit(repo, "feat: talk to the marmalade service", {"a.py": "HOST = 'marmalade'\n"})
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo)})
        assert ask(c, repo, "marmalade")
        assert not ask(c, repo, "quince")
        commit(repo, "fix: quince timeout", {"b.py": "TIMEOUT = 3\n"})
        c.request("history.sync", {"repo": str(repo)})
        assert ask(c, repo, "quince")[0]["text"].split("\n")[0].endswith("fix: quince timeout")
        out = daemon.cli("-C", str(repo), "forget", "--value", "marmalade", "--json")
        assert out.returncode == 0, out.stderr
        assert not [h for h in ask(c, repo, "marmalade") if "marmalade" in h["text"].lower()]


def test_a_query_of_only_glue_words_answers_empty_not_an_error(
    daemon: DaemonProcess, new_repo: Factory
) -> None:
    repo = new_repo()
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo)})
        r = c.request("query", {"repo": str(repo), "text": "what is it?"})
        assert r["results"] == [] and r["retrieval"]["empty"]


README = """# Tool

## Table of Contents
- Installation
- Reloading the candidate list
- Preview window

## Installation
Use the package manager.

## Reloading the candidate list
Bind a key to the reload action to run the source command again.
"""


def test_the_section_beats_the_table_of_contents_that_names_it(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo(files={"README.md": README})
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo)})
        docs = ask(c, repo, "reloading the candidate list", kinds=["doc"])
        assert docs[0]["headingPath"] == "Tool > Reloading the candidate list"
        assert [d["headingPath"] for d in docs].index("Tool > Table of Contents") > 0


CHANGES = """# Changes

## Version 2.4.0

Released 2024-05-01

- The retry loop stops after the configured number of attempts.
- Cookies set by a redirect are kept for the next request.

## Version 2.3.0

- Timeouts can be set per request.
"""


def test_what_changed_in_a_version_is_its_changelog_section_not_the_release_commit(
    daemon: DaemonProcess, new_repo: Factory
) -> None:
    repo = new_repo()
    commit(repo, "stop retrying after the configured attempts", {"src/retry.py": "ATTEMPTS = 3\n"}, when=1_700_000_000)
    release = commit(repo, "release version 2.4.0", {"CHANGES.md": CHANGES, "VERSION": "2.4.0\n"}, when=1_700_000_060)
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo)})
        hits = ask(c, repo, "what changed in version 2.4.0?")
        assert hits[0]["kind"] == "doc" and hits[0]["path"] == "CHANGES.md", hits[:3]
        assert "Version 2.4.0" in hits[0]["headingPath"]
        assert release in [h.get("sha") for h in hits]  # ranked lower, never absent
        # a commit that says more than a version keeps its place
        assert ask(c, repo, "stop retrying after attempts")[0].get("sha") != release


NOTES = """# Changelog

## 1.2.0

- Hook functions are no longer run twice when changing directory with ALT-C (#12)
- The preview window keeps its size after a resize (#13)
"""


def test_a_changelog_bullet_citing_a_commits_number_speaks_for_that_commit(
    daemon: DaemonProcess, new_repo: Factory
) -> None:
    repo = new_repo(files={"CHANGELOG.md": NOTES})
    fix = commit(repo, "fix(zsh): avoid double call of chpwd in alt-c\n\ncloses #12", {"shell/key.zsh": "cd\n"})
    commit(repo, "test(zsh): alt-c widget", {"test/key.zsh": "cd\n"})
    commit(repo, "resize the preview window (#13)", {"src/preview.go": "size\n"})
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo)})
        hits = ask(c, repo, "hook functions run twice when changing directory")
        assert hits[0].get("sha") == fix, [h["text"][:60] for h in hits]  # the bullet's words found the fix
        assert "changelog: CHANGELOG.md:5" in hits[0]["text"]
        assert any(h["kind"] == "doc" and h["path"] == "CHANGELOG.md" for h in hits)  # the bullet stays
        assert ask(c, repo, "resize", kinds=["commit"])[0].get("noteId") is not None


GUIDE = """# Guide

## Retry budget
Set the retry budget for uploads in the settings file; the client retries a failed upload that many times.
"""


def test_the_form_of_a_question_picks_the_kind_of_answer(daemon: DaemonProcess, new_repo: Factory) -> None:
    """The same words, asked two ways: "how do I ..." wants the doc section, "when did ..." the commit."""
    repo = new_repo(files={"docs/guide.md": GUIDE})
    commit(repo, "set the retry budget for uploads in the settings file",
           {"settings.py": "RETRY_BUDGET = 3\n"}, when=1_700_000_000)  # fmt: skip
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo)})
        how = c.request("query", {"repo": str(repo), "text": "how do I set the retry budget for uploads?"})
        when = c.request("query", {"repo": str(repo), "text": "when did we set the retry budget for uploads?"})
        plain = c.request("query", {"repo": str(repo), "text": "retry budget for uploads"})
    assert how["retrieval"]["asks"] == "doc" and how["results"][0]["kind"] == "doc", how["results"][:2]
    assert when["retrieval"]["asks"] == "history" and when["results"][0]["kind"] == "commit", when["results"][:2]
    assert "asks" not in plain["retrieval"]


UPLOADS = """# Guide

## Uploads
A failed upload is retried by the client: the retry budget in the settings file says how many times, and each
retry of an upload waits twice the time of the one before it.
"""


def test_a_question_about_a_change_ranks_the_commit_above_a_section_sharing_more_of_its_words(
    daemon: DaemonProcess, new_repo: Factory
) -> None:
    """A paraphrase shares more words with the section that describes the behaviour than with the commit that
    changed it; asked "when did ...", the commit is the answer (the section says how things are now)."""
    repo = new_repo()
    change = commit(repo, "failed uploads: double the wait between retries", {"client.py": "WAIT = 2\n"})
    (repo / "docs").mkdir()
    (repo / "docs" / "guide.md").write_text(UPLOADS)  # (not committed: no commit's diff holds its words)
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo)})
        when = c.request("query", {"repo": str(repo),
                                   "text": "when did each retry of a failed upload start to wait twice as long?"})  # fmt: skip
    assert when["retrieval"]["asks"] == "history"
    assert when["results"][0].get("sha") == change, [(h["kind"], h["text"][:50]) for h in when["results"][:3]]
    assert any(h["kind"] == "doc" for h in when["results"])  # (ranked lower, not dropped)
