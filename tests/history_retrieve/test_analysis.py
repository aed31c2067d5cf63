"""Query and documents are analysed by the same function: punctuation, numbers, versions, identifiers, stems."""

from __future__ import annotations

from nexusd.retrieve.analysis import query_terms, term_counts, terms


def test_trailing_punctuation_never_sticks_to_a_word() -> None:
    assert query_terms("why does redirect default to 303?") == query_terms("why does redirect default to 303")
    assert "303" in query_terms("303?") and "redirect" in query_terms("(redirect),")


def test_numbers_and_versions_are_terms() -> None:
    assert "413" in terms("Payload Too Large (413)")
    assert {"node", "20"} <= set(terms("Node 20"))
    doc = set(terms("requires Python 3.9.1 or newer"))
    assert "3.9" in doc and "3.9.1" in doc  # a version's prefixes are terms too: "3.9" finds "3.9.1"
    assert "3.9" in query_terms("python 3.9?")
    assert "0.28.0" in query_terms("what changed in 0.28.0")


def test_identifiers_split_on_both_sides() -> None:
    doc = set(terms("deprecate should_ignore_error and FuzzyMatchV2"))
    for q in ("should ignore error", "fuzzy match", "FuzzyMatchV2", "should_ignore_error"):
        assert set(query_terms(q)) <= doc, q
    # the joined identifier is stemmed as the one-part word a lower-cased text holds
    assert set(query_terms("chunkSize")) & set(terms("increase chunksize")) == {"chunksiz"}


def test_stemming_is_the_same_on_both_sides() -> None:
    assert set(query_terms("teardown callbacks called")) <= set(terms("call every teardown callback"))
    assert set(query_terms("supporting")) == set(query_terms("supported")) == set(query_terms("supports"))


def test_question_glue_is_dropped_but_code_words_stay() -> None:
    assert query_terms("how do I get the value?") == ["get", "valu"]
    assert query_terms("what is it?") == []


def test_term_counts_agree_with_terms() -> None:
    text = "Retry the retry budget; retries: 5, then 5 again (v1.2)."
    from collections import Counter

    assert term_counts(text) == dict(Counter(terms(text)))


def test_release_commits_are_told_from_commits_that_mention_a_version() -> None:
    from nexusd.retrieve.search import is_release

    for subject in ("release version 3.1.1", "start version 3.1.2", "Version 0.28.0. (#3419)", "0.70.0",
                    "bump version to v2.0.1", "v1.2.3-rc1"):  # fmt: skip
        assert is_release(f"commit 0123456789 (Dev): {subject}"), subject
    for subject in ("Add CHANGELOG.md entry for 0.70.1", "drop Python 3.8 support", "3.9 fixes", "release notes"):
        assert not is_release(f"commit 0123456789 (Dev): {subject}"), subject


def test_intent_is_read_from_the_form_of_the_question() -> None:
    from nexusd.retrieve.analysis import intent

    for text in ("how do I mount a sub-application?", "How can I stream a response", "show me a minimal server",
                 "is there a way to skip the cache?", "can I pass a timeout per request?"):  # fmt: skip
        assert intent(text) == "doc", text
    for text in ("when did the cache stop expiring?", "which commit removed the legacy parser",
                 "why was the retry loop dropped?", "when were type hints first added to Url",
                 "the loader no longer accepts bytes"):  # fmt: skip
        assert intent(text) == "history", text
    for text in ("upload fails with 413", "retry budget", "how do I find out when did it change?", ""):
        assert intent(text) == "", text  # neither, or both: no preference


def test_before_and_after_are_terms() -> None:
    """Code names ordering with them (before_request, afterEach, hook monitoring `before`/`after`), and questions
    about ordering bugs use them: not stopwords."""
    from nexusd.retrieve.analysis import query_terms

    assert {"befor", "after"} <= set(query_terms("add my own before and after functions around every hook call"))  # stemmed


def test_a_negation_matches_with_or_without_its_apostrophe() -> None:
    for query in ("don't skip formatting", "dont skip formatting", "don\u2019t skip formatting"):
        assert query_terms(query) == ["dont", "skip", "format"], query
    assert "doesnt" in terms("it doesn't raise") and "doesnt" in terms("doesnt raise")
    # any other apostrophe still ends the word
    assert query_terms("what's in the user's config?") == ["user", "config"]
