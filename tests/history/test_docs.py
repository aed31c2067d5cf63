"""Markdown and RST splitting: heading paths, levels, lines, fences, and long sections cut into parts."""

from __future__ import annotations

from nexusd.history.docs import MAX_SECTION_CHARS, split_markdown, split_rst

MARKDOWN = """---
title: Guide
---
Intro before any heading.

# Install

Use pip.

```bash
# this is a shell comment, not a heading
pip install nexus
```

## From source ##

Clone it.

Configuration
-------------

| key | value |
|-----|-------|

~~~
Not a heading
=============
~~~

### Deep

Deep text.

Usage
=====
Run it.
"""


def test_markdown_sections() -> None:
    sections = split_markdown("docs/guide.md", MARKDOWN)
    got = [(s.heading_path, s.level, s.start_line) for s in sections]
    assert got == [
        ([], 0, 1),
        (["Install"], 1, 6),
        (["Install", "From source"], 2, 15),
        (["Install", "Configuration"], 2, 19),
        (["Install", "Configuration", "Deep"], 3, 30),
        (["Usage"], 1, 34),
    ]
    assert "pip install nexus" in sections[1].text and "# this is a shell comment" in sections[1].text
    assert "Not a heading" in sections[3].text
    assert sections[0].text.startswith("---\ntitle: Guide")
    assert all(s.path == "docs/guide.md" for s in sections)
    assert len({s.id for s in sections}) == len(sections)
    assert split_markdown("docs/guide.md", MARKDOWN)[2].id == sections[2].id  # ids are stable


def test_long_section_is_split_into_parts() -> None:
    paragraph = "word " * 150 + "\n\n"
    text = "# Big\n\n" + paragraph * 40 + "## Next\nshort\n"
    sections = split_markdown("big.md", text)
    big = [s for s in sections if s.heading_path == ["Big"]]
    assert len(big) > 1
    assert [s.part for s in big] == list(range(len(big)))
    assert all(len(s.text) <= MAX_SECTION_CHARS for s in big)
    assert big[1].start_line > big[0].start_line
    assert sections[-1].heading_path == ["Big", "Next"]
    assert sum(s.text.count("word") for s in big) == 150 * 40


def test_empty_and_headingless_documents() -> None:
    assert split_markdown("e.md", "") == []
    only = split_markdown("p.md", "just text\n")
    assert [(s.heading_path, s.level, s.text) for s in only] == [([], 0, "just text")]


RST = """=========
 Project
=========

Intro paragraph.

Install
=======

pip install.

Options
-------

Some options.

Install again
=============

.. code-block:: python

   x = 1
   ----- not a heading because indented

Transition below

----------

After.
"""


def test_rst_sections_levels_by_first_appearance() -> None:
    sections = split_rst("README.rst", RST)
    got = [(s.heading_path, s.level, s.start_line) for s in sections]
    assert got == [
        (["Project"], 1, 1),
        (["Project", "Install"], 2, 7),
        (["Project", "Install", "Options"], 3, 12),
        (["Project", "Install again"], 2, 17),
    ]
    assert "After." in sections[-1].text and "x = 1" in sections[-1].text
