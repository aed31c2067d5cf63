"""Markdown and reStructuredText documents split into sections, for the history layer's `DocSection` nodes.

A section is the text under one heading, down to the next heading of any level, with the path of headings above
it (`["Install", "From source"]`). Sections are what recall ranks and packs into a token budget, so they are kept
small: a section longer than `MAX_SECTION_CHARS` is cut into parts at blank lines (never inside a fenced code
block when a blank line outside one is available), each part keeping the heading path and numbered from 0.

Markdown: ATX (`## Title`, optional closing hashes) and setext (`Title` over `===` or `---`) headings; lines in
fenced code blocks (``` or ~~~, closed by a fence of the same character at least as long) are never headings,
and a leading YAML front-matter block is not mistaken for a setext underline.
RST: a title line with an underline (and optional identical overline) of one punctuation character, at least as
long as the title; levels are assigned in order of first appearance of each (character, overline) style, which
is how docutils itself decides.
"""

from __future__ import annotations

import re

from nexusd.history.facts import DocSectionFacts

__all__ = ["MAX_SECTION_CHARS", "chunk_lines", "split_markdown", "split_rst"]

MAX_SECTION_CHARS = 4000

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RST_ADORN = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")


def chunk_lines(lines: list[str], max_chars: int = MAX_SECTION_CHARS) -> list[tuple[int, str]]:
    """Cut lines into chunks of at most ~max_chars; returns (index of first line, text) per chunk.

    Prefers to cut at a blank line outside a code fence; a single line longer than the bound is hard-cut.
    """
    chunks: list[tuple[int, str]] = []
    start = 0
    while start < len(lines):
        size, end, best, fence = 0, start, -1, False
        while end < len(lines) and (size + len(lines[end]) + 1 <= max_chars or end == start):
            if _FENCE.match(lines[end]):
                fence = not fence
            elif not fence and not lines[end].strip() and end > start:
                best = end
            size += len(lines[end]) + 1
            end += 1
        if end < len(lines) and best > start:
            end = best
        text = "\n".join(lines[start:end])
        if len(text) > max_chars:  # one enormous line
            for offset in range(0, len(text), max_chars):
                chunks.append((start, text[offset : offset + max_chars]))
        elif text.strip():
            chunks.append((start, text))
        start = end
    return chunks


def _emit(
    out: list[DocSectionFacts],
    path: str,
    heading_path: list[str],
    level: int,
    start_line: int,
    lines: list[str],
) -> None:
    """Append one section (possibly in parts); `start_line` is the 1-based line of lines[0]."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    if not lines or (level == 0 and not any(line.strip() for line in lines)):
        return
    for part, (index, text) in enumerate(chunk_lines(lines)):
        out.append(DocSectionFacts(path, list(heading_path), level, start_line + index, text, part))


class _Sections:
    """Shared bookkeeping: a stack of (level, title) and the lines of the section being read."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.out: list[DocSectionFacts] = []
        self.stack: list[tuple[int, str]] = []
        self.level = 0
        self.start = 1
        self.lines: list[str] = []

    def heading(self, level: int, title: str, line_no: int, heading_lines: list[str]) -> None:
        self.flush()
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, title.strip()))
        self.level, self.start, self.lines = level, line_no, list(heading_lines)

    def flush(self) -> None:
        _emit(self.out, self.path, [t for _, t in self.stack], self.level, self.start, self.lines)
        self.lines = []


def split_markdown(path: str, text: str) -> list[DocSectionFacts]:
    """Sections of a Markdown document, in document order; text before the first heading is level 0."""
    lines = text.splitlines()
    doc = _Sections(path)
    fence: str | None = None
    i = 0
    # YAML front matter: skip to its closing line and keep it as preamble, so its `---` is no underline.
    if lines and lines[0].strip() == "---":
        for j in range(1, min(len(lines), 200)):
            if lines[j].strip() in ("---", "..."):
                doc.lines.extend(lines[: j + 1])
                i = j + 1
                break
    while i < len(lines):
        line = lines[i]
        fence_match = _FENCE.match(line)
        if fence is not None:
            if (
                fence_match
                and fence_match.group(1)[0] == fence[0]
                and len(fence_match.group(1)) >= len(fence)
            ):
                if not line.strip().lstrip(fence[0]):
                    fence = None
            doc.lines.append(line)
        elif fence_match:
            fence = fence_match.group(1)
            doc.lines.append(line)
        elif (m := _ATX.match(line)) is not None:
            doc.heading(len(m.group(1)), m.group(2) or "", i + 1, [line])
        elif (
            i + 1 < len(lines)
            and _SETEXT.match(lines[i + 1])
            and line.strip()
            and not line.startswith(("    ", "\t"))
            and not _SETEXT.match(line)
            and not line.lstrip().startswith((">", "- ", "* ", "+ ", "|"))
        ):
            level = 1 if lines[i + 1].strip()[0] == "=" else 2
            doc.heading(level, line, i + 1, [line, lines[i + 1]])
            i += 1
        else:
            doc.lines.append(line)
        i += 1
    doc.flush()
    return doc.out


def split_rst(path: str, text: str) -> list[DocSectionFacts]:
    """Sections of a reStructuredText document; heading levels follow the order styles first appear in."""
    lines = text.splitlines()
    doc = _Sections(path)
    styles: list[tuple[str, bool]] = []
    i = 0

    def level_of(style: tuple[str, bool]) -> int:
        if style not in styles:
            styles.append(style)
        return styles.index(style) + 1

    while i < len(lines):
        line = lines[i]
        # Overline + title + underline.
        if (
            i + 2 < len(lines)
            and _RST_ADORN.match(line)
            and lines[i + 1].strip()
            and lines[i + 2].rstrip() == line.rstrip()
            and len(line.rstrip()) >= len(lines[i + 1].strip())
        ):
            doc.heading(level_of((line[0], True)), lines[i + 1], i + 1, lines[i : i + 3])
            i += 3
            continue
        # Title + underline.
        if (
            i + 1 < len(lines)
            and line.strip()
            and not line[0].isspace()
            and not _RST_ADORN.match(line)
            and _RST_ADORN.match(lines[i + 1])
            and len(lines[i + 1].rstrip()) >= len(line.rstrip())
            and (i == 0 or not lines[i - 1].strip())
        ):
            doc.heading(level_of((lines[i + 1][0], False)), line, i + 1, lines[i : i + 2])
            i += 2
            continue
        doc.lines.append(line)
        i += 1
    doc.flush()
    return doc.out
