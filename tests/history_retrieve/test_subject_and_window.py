"""`query` over a real daemon and real git history: a commit whose subject says what was asked outranks one whose
body merely repeats the words (the subject is a commit's heading), and a long doc section counts only the terms
of the window it shows, so words scattered over a long section do not make it look like an answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers import DaemonProcess
from tests.history_ingest.conftest import Factory, commit, register


def ask(c: Any, repo: Path, text: str, **extra: Any) -> list[dict[str, Any]]:
    return list(c.request("query", {"repo": str(repo), "text": text, **extra})["results"])


def test_the_subject_outranks_a_body_that_repeats_the_words(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo()
    t = 1_700_000_000
    filler = " ".join(f"word{i}" for i in range(40))
    said = commit(repo, f"retry the upload after a timeout\n\n{filler}", None, when=t)  # no diffs: messages alone
    repeated = commit(repo, "misc: tidy the client\n\nretry upload timeout, retry upload timeout", None, when=t)
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo), "docs": False})
        shas = [h.get("sha") for h in ask(c, repo, "retry upload timeout", kinds=["commit"])]
        assert shas.index(said) < shas.index(repeated), shas


FILLER = "".join(f"Paragraph {i} talks about unrelated configuration of the widget layout.\n\n" for i in range(40))
LONG = (
    "# Guide\n\n## Everything\n"
    + "Frobnicate the settings, frobnicate them again, frobnicate often, frobnicate daily, frobnicate.\n\n"
    + FILLER
    + "The bucket, the bucket, the bucket, one more bucket, bucket.\n"
)
SHORT = (
    "# Notes\n\n## Tools\nTo frobnicate a bucket, call the tool with its name and region.\n"
    + " ".join(f"note{i}" for i in range(60))
    + "\n"
)


def test_a_long_section_counts_the_words_of_its_shown_window(daemon: DaemonProcess, new_repo: Factory) -> None:
    repo = new_repo(files={"docs/long.md": LONG, "docs/short.md": SHORT})
    with daemon.client() as c:
        register(c, repo)
        c.request("history.sync", {"repo": str(repo)})
        docs = [h for h in ask(c, repo, "frobnicate bucket", kinds=["doc"]) if h["kind"] == "doc"]
        assert docs and docs[0]["path"] == "docs/short.md", [(d["path"], d.get("relevance")) for d in docs]
