"""Content-addressed ids: equal content, equal id; different content or kind, different id."""

from __future__ import annotations

import dataclasses

from nexusd.history import facts
from nexusd.history.facts import (
    ChangeFacts,
    CommitFacts,
    ConversationTurnFacts,
    DocSectionFacts,
    ShellCommandFacts,
    content_id,
)


def test_ids_are_stable_and_distinct() -> None:
    commit = CommitFacts("a" * 40, [], "Ada", "ada@x", 1, "fix: x")
    assert commit.id == CommitFacts("a" * 40, ["b" * 40], "Other", "o@x", 2, "changed", signal=1.0).id
    assert commit.id != CommitFacts("c" * 40, [], "Ada", "ada@x", 1, "fix: x").id
    change = ChangeFacts("a" * 40, "src/x.py", "M")
    assert change.id == ChangeFacts("a" * 40, "src/x.py", "M", additions=3).id
    assert change.id != ChangeFacts("a" * 40, "src/y.py", "M").id
    doc = DocSectionFacts("README.md", ["A", "B"], 2, 3, "text")
    assert (
        doc.id == DocSectionFacts("README.md", ["A", "B"], 2, 9, "text").id
    )  # moving a section keeps its id
    assert doc.id != DocSectionFacts("README.md", ["A B"], 2, 3, "text").id
    shell = ShellCommandFacts("ls", "/", 0, 1700000000.25, 5, "bash")
    assert shell.id == ShellCommandFacts("ls", "/", 0, 1700000000.25, 5, "bash").id
    assert shell.id != ShellCommandFacts("ls", "/", 0, 1700000001.25, 5, "bash").id
    turn = ConversationTurnFacts("s", 0, "user", "", "hi")
    assert turn.id != ConversationTurnFacts("s", 1, "user", "", "hi").id
    assert content_id("commit", "x") != content_id("change", "x") and len(content_id("k")) == 32


def test_fact_classes_are_slotted_dataclasses() -> None:
    for cls in (ChangeFacts, CommitFacts, ConversationTurnFacts, DocSectionFacts, ShellCommandFacts):
        assert dataclasses.is_dataclass(cls) and hasattr(cls, "__slots__"), cls
    assert set(facts.__all__) >= {"CommitFacts", "ChangeFacts", "DocSectionFacts"}
