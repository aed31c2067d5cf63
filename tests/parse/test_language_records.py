"""The language records (parse/languages.py) are the only table of parsed languages: everything else is derived
from them, and every record is complete (its query file, hooks and rules exist and agree on its name)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from nexusd.parse import extract, facts, languages
from nexusd.parse.extract import QUERY_DIR, load_hooks
from nexusd.parse.languages import LANGUAGES
from nexusd.resolve import RepoIndex, registry

NAMES = [lang.name for lang in LANGUAGES]


def test_names_extensions_and_prefixes_are_unique() -> None:
    assert len(set(NAMES)) == len(NAMES)
    exts = Counter(ext for lang in LANGUAGES for ext in lang.extensions)
    assert [e for e, n in exts.items() if n > 1] == []
    assert all(e.startswith(".") and e == e.lower() for e in exts)
    prefixes = Counter(lang.key_prefix for lang in LANGUAGES)
    assert [p for p, n in prefixes.items() if n > 1] == []


def test_every_record_is_complete() -> None:
    for lang in LANGUAGES:
        assert (QUERY_DIR / lang.query_file).is_file(), lang.name
        assert load_hooks(lang).language == lang.name
        assert lang.name in registry.rule_classes()[lang.name].languages


def test_every_query_file_belongs_to_a_record() -> None:
    assert {p.name for p in QUERY_DIR.glob("*.scm")} == {lang.query_file for lang in LANGUAGES}


def test_the_other_tables_are_derived_from_the_records(tmp_path: Path) -> None:
    assert set(extract.HOOKS) == set(NAMES) == set(extract.supported_languages())
    assert set(facts.LANG_PREFIX) == set(NAMES)
    assert set(languages.PARSED.values()) == set(NAMES)
    assert not set(languages.PARSED) & set(languages.KNOWN)  # a record's extensions are not listed twice
    index = RepoIndex("records", tmp_path)
    assert set(index.rules) == set(NAMES)
    # One rules instance per class, shared by the languages of a family (JavaScript, TypeScript, TSX).
    assert len({id(r) for r in index.rules.values()}) == len(set(registry.rule_classes().values()))
    assert index.rules["javascript"] is index.rules["tsx"]
    assert RepoIndex.CONFIG_NAMES == frozenset().union(*(lang.project_files for lang in LANGUAGES))


def test_a_path_takes_its_language_from_the_record() -> None:
    for lang in LANGUAGES:
        for ext in lang.extensions:
            assert languages.parsed_language(f"src/m{ext}") == lang.name
            assert languages.language_for(f"src/m{ext}") == lang.name
            assert facts.semantic_key(lang.name, "function", f"src/m{ext}", "f").startswith(f"{lang.key_prefix}:")
