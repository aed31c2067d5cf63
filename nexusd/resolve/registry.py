"""Which rules resolve which language: the rules classes the language records name (`Language.rules` in
parse/languages.py), loaded once per process.

This breaks what used to be a cycle: every rules module imports base.py (`LanguageRules`, `FileTable`, ...), so
base.py cannot import them; it asks this module, which finds them by name from the records and imports
base.py only for types. Adding a language adds its record and its rules module, and nothing here.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

from nexusd.parse.languages import LANGUAGES

if TYPE_CHECKING:
    from nexusd.resolve.base import LanguageRules, RepoIndex


@cache
def rule_classes() -> dict[str, type[LanguageRules]]:
    """Language name -> its rules class, in the records' order."""
    out: dict[str, type[LanguageRules]] = {}
    for lang in LANGUAGES:
        module, _, name = lang.rules.rpartition(".")
        cls = getattr(importlib.import_module(f"nexusd.resolve.{module}"), name)
        if lang.name not in cls.languages:
            raise TypeError(f"{lang.rules} does not list {lang.name!r} among its languages")
        out[lang.name] = cls
    return out


def rules_for(index: RepoIndex) -> dict[str, LanguageRules]:
    """Language name -> the rules instance of `index`: one instance per class, shared by its languages."""
    instances: dict[type[LanguageRules], LanguageRules] = {}
    out: dict[str, LanguageRules] = {}
    for name, cls in rule_classes().items():
        rules = instances.get(cls)
        if rules is None:
            rules = instances[cls] = cls(index)
        out[name] = rules
    return out


def project_files() -> frozenset[str]:
    """File names whose change makes every rules instance drop what it read from project configuration."""
    return frozenset().union(*(lang.project_files for lang in LANGUAGES))
