"""The fixed rule that draws a held-out set's commits and doc sections, written down before any question.

For one repository at its pinned HEAD (a bare or normal git dir):

- Commits: `git log --no-merges` newest first, skipping subjects of fewer than 5 words and subjects that say
  typo / release / bump / merge / version / changelog (case-insensitive), and commits whose diff changes
  fewer than 2 lines; the rest shuffled by `random.Random(2026)`. The first `--close` draws get a question
  worded close to the commit's own words, the next `--paraphrase` draws a paraphrase as a developer would ask.
- Doc sections: level-2 and level-3 headings (Markdown `##`/`###` outside code fences; reStructuredText by the
  order adornment styles first appear in the file, as docutils assigns levels) of the Markdown / RST files at
  the top level or under docs/, except changelogs, release notes, licences and files under .github; a section
  runs from its heading to the line before the next heading of any level, and needs at least 3 non-blank lines
  of its own; shuffled by `random.Random(2026)`, the first `--doc` drawn.

Each drawn item is printed with what the question writer reads (the commit's message and diff stat, or the
section's text); the questions and their acceptable answers are written from that alone.

Run: `python bench/history_eval/draw.py GIT_DIR HEAD [--close 7 --paraphrase 7 --doc 6] [--show N]`.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess

SEED = 2026
SKIP_WORDS = re.compile(r"typo|release|bump|merge|version|changelog", re.IGNORECASE)
DOC_SKIP = re.compile(r"changelog|changes|release|license|licence", re.IGNORECASE)
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ADORN = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")


def git(gd: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", gd, *args], check=True, capture_output=True,
                          text=True, errors="replace").stdout  # fmt: skip


def commits(gd: str, head: str) -> list[tuple[str, str]]:
    out = []
    for line in git(gd, "log", "--no-merges", "--format=%H%x00%s", head).splitlines():
        sha, subject = line.split("\0", 1)
        if len(subject.split()) < 5 or SKIP_WORDS.search(subject):
            continue
        out.append((sha, subject))
    return out


def changed_lines(gd: str, sha: str) -> int:
    total = 0
    for line in git(gd, "show", "--numstat", "--format=", sha).splitlines():
        a, d, _ = line.split("\t", 2)
        total += (int(a) if a.isdigit() else 0) + (int(d) if d.isdigit() else 0)
    return total


def doc_files(gd: str, head: str) -> list[str]:
    files = git(gd, "ls-tree", "-r", "--name-only", head).splitlines()
    out = []
    for f in files:
        if not f.lower().endswith((".md", ".rst")) or f.startswith(".github/"):
            continue
        if "/" in f and not f.startswith("docs/"):
            continue
        if DOC_SKIP.search(f.rsplit("/", 1)[-1]):
            continue
        out.append(f)
    return out


def headings(path: str, lines: list[str]) -> list[tuple[int, int, str]]:
    """(0-based line, level, title) of every heading."""
    out: list[tuple[int, int, str]] = []
    if path.lower().endswith(".md"):
        fence = False
        for i, line in enumerate(lines):
            if _FENCE.match(line):
                fence = not fence
                continue
            m = None if fence else _ATX.match(line)
            if m:
                out.append((i, len(m.group(1)), m.group(2)))
        return out
    styles: list[tuple[str, bool]] = []
    i = 0
    while i < len(lines) - 1:
        over = bool(_ADORN.match(lines[i])) and i + 2 < len(lines) and lines[i + 2] == lines[i]
        title_i = i + 1 if over else i
        under_i = title_i + 1
        title = lines[title_i].strip() if title_i < len(lines) else ""
        if (title and under_i < len(lines) and _ADORN.match(lines[under_i])
                and len(lines[under_i].rstrip()) >= len(title) and not _ADORN.match(lines[title_i])):  # fmt: skip
            style = (lines[under_i][0], over)
            if style not in styles:
                styles.append(style)
            out.append((title_i, styles.index(style) + 1, title))
            i = under_i + 1
            continue
        i += 1
    return out


def sections(gd: str, head: str) -> list[tuple[str, int, int, str, str]]:
    """(path, first line, last line (1-based), title, text) of every level-2/3 section with >= 3 lines."""
    out = []
    for f in doc_files(gd, head):
        lines = git(gd, "show", f"{head}:{f}").splitlines()
        hs = headings(f, lines)
        for k, (i, level, title) in enumerate(hs):
            if level not in (2, 3):
                continue
            end = hs[k + 1][0] - 1 if k + 1 < len(hs) else len(lines)
            if not f.lower().endswith(".md") and k + 1 < len(hs):
                nxt = hs[k + 1][0]  # an overlined next title starts one line earlier
                end = nxt - 2 if nxt >= 1 and _ADORN.match(lines[nxt - 1]) else nxt - 1
            body = [x for x in lines[i + 1 : end] if x.strip() and not _ADORN.match(x)]
            if len(body) < 3:
                continue
            out.append((f, i + 1, end, title, "\n".join(lines[i:end])))
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("git_dir")
    p.add_argument("head")
    p.add_argument("--close", type=int, default=7)
    p.add_argument("--paraphrase", type=int, default=7)
    p.add_argument("--doc", type=int, default=6)
    p.add_argument("--show", type=int, default=60, help="diff lines shown per commit")
    p.add_argument("--json", action="store_true", help="only the drawn ids, as JSON")
    o = p.parse_args()
    pool = commits(o.git_dir, o.head)
    random.Random(SEED).shuffle(pool)
    want = o.close + o.paraphrase
    drawn: list[tuple[str, str]] = []
    for sha, subject in pool:
        if len(drawn) == want:
            break
        if changed_lines(o.git_dir, sha) >= 2:
            drawn.append((sha, subject))
    secs = sections(o.git_dir, o.head)
    random.Random(SEED).shuffle(secs)
    secs = secs[: o.doc]
    if o.json:
        print(json.dumps({"commits": [{"sha": s, "style": "close" if i < o.close else "paraphrase"}
                                      for i, (s, _) in enumerate(drawn)],
                          "docs": [{"doc": f, "lines": [a, b]} for f, a, b, _, _ in secs]}, indent=1))  # fmt: skip
        return
    for i, (sha, _) in enumerate(drawn):
        style = "close" if i < o.close else "paraphrase"
        print(f"===== commit {i + 1} ({style}) {sha}")
        print(git(o.git_dir, "show", "--stat", "--format=%ci%n%B", sha).strip())
        diff = git(o.git_dir, "show", "--format=", "-U1", sha).splitlines()
        print("\n".join(diff[: o.show]))
    for f, a, b, title, text in secs:
        print(f"===== doc {f}:{a}-{b} {title}")
        print(text)


if __name__ == "__main__":
    main()
