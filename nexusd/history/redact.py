"""Secret redaction for everything the history layer stores (commit patches and messages, shell commands,
transcripts), and the deny-list of values a user asked NEXUS to forget.

docs/conventions.md point 6: "Secrets are redacted before anything is stored." Redaction runs on every ingested line, so it
is built for the common case of *no* secret: each (precompiled) detector has literal anchors and runs only when
one occurs in the lower-cased text, and assignment patterns run only on lines naming a key word. The most specific
detectors run first, so `token=ghp_...` reads `token=[REDACTED:github-token]` rather than a generic label.

What counts as a secret, by detector kind (the `<kind>` in `[REDACTED:<kind>]`):
  private-key     PEM `-----BEGIN ... PRIVATE KEY-----` blocks (also a block cut off by truncation)
  aws-access-key  AKIA/ASIA/... 20-character key ids;  aws-secret-key: 40-char values of aws_secret_* keys
  github-token    ghp_, gho_, ghs_, ghu_, ghr_, github_pat_
  gitlab-token    glpat-;  slack-token: xox[abprs]-;  google-api-key: AIza + 35
  anthropic-key   sk-ant-...;  openai-key: sk-... (20+ chars with a digit);  stripe-key: sk_/rk_ live/test, whsec_
  jwt             eyJ... three base64url segments
  auth-header     the credential after `Authorization: Bearer|Basic|Token` or a bare `Bearer <long token>`
  url-password    the password of `scheme://user:password@host` (postgres, mongodb+srv, mysql, redis, amqp...)
  password / token / secret / api-key / credential
                  values of assignments whose key names one (`password=`, `"api_key": "..."`, `TOKEN: x`,
                  `--password foo`), in code, env files, YAML, JSON and command lines.

Assignments are where ordinary code is most at risk of being mangled, so an *unquoted* value is kept when it
reads as code rather than as a literal: a call or subscript, a `$VAR`/`${...}`/`{{...}}` reference, a type
annotation (`password: str`, `token: Token`), a plain or dotted identifier after a spaced `=`
(`token = self.token`), a keyword argument passing a variable on (`f(password=password)`), or a short number
(`max_tokens=100`). Quoted values are literals and are always redacted (except placeholders such as "" or "***").
"""

from __future__ import annotations

import bisect
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["DenyList", "redact"]

_Replacer = Callable[[re.Match[str]], str]


def _whole(kind: str) -> _Replacer:
    return lambda m: f"[REDACTED:{kind}]"


def _group(kind: str, group: int) -> _Replacer:
    """Replace one group, keep the text around it (the key, the header name, the user name)."""

    def replace(m: re.Match[str]) -> str:
        start, end = m.span(group)
        base = m.start()
        whole = m.group(0)
        return f"{whole[: start - base]}[REDACTED:{kind}]{whole[end - base :]}"

    return replace


# (anchors, pattern, replacer): a detector runs only when one of its lower-case literal anchors occurs in the
# lower-cased text, so the common secret-free text costs a few substring scans, not a regex pass per detector.
_TOKEN_DETECTORS: list[tuple[tuple[str, ...], re.Pattern[str], _Replacer]] = [
    (
        ("-----begin",),
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY"
            r"(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        _whole("private-key"),
    ),
    (
        ("akia", "asia", "agpa", "aida", "aroa", "aipa", "anpa", "anva"),
        re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z0-9]{16}\b"),
        _whole("aws-access-key"),
    ),
    (
        ("awssecret", "aws_secret"),
        re.compile(
            r"(?i)(aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        _group("aws-secret-key", 2),
    ),
    (("github_pat_",), re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}"), _whole("github-token")),
    (
        ("ghp_", "gho_", "ghs_", "ghu_", "ghr_"),
        re.compile(r"\bgh[opsur]_[A-Za-z0-9]{30,255}\b"),
        _whole("github-token"),
    ),
    (("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), _whole("gitlab-token")),
    (("xox",), re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), _whole("slack-token")),
    (("aiza",), re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), _whole("google-api-key")),
    (("sk-ant-",), re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}"), _whole("anthropic-key")),
    (
        ("sk_live", "sk_test", "rk_live", "rk_test", "whsec_"),
        re.compile(r"\b(?:[sr]k_(?:live|test)|whsec)_[A-Za-z0-9]{16,}"),
        _whole("stripe-key"),
    ),
    (("sk-",), re.compile(r"(?<![\w-])sk-(?=[A-Za-z0-9_\-]*\d)[A-Za-z0-9_\-]{20,}"), _whole("openai-key")),
    (("eyj",), re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), _whole("jwt")),
    (
        ("authori",),
        re.compile(
            r"(?i)(authori[sz]ation[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)\s+)([^\s\"',;]+)"
        ),
        _group("auth-header", 2),
    ),
    (("bearer",), re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/\-]{16,}=*)"), _group("auth-header", 2)),
    (
        ("://",),
        re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{1,20}://[^\s:/@\"'<>]*:)([^\s@/\"'<>]+)(@)"),
        _group("url-password", 2),
    ),
]

# Key words an assignment's key must contain; the kind reported is the first one that matches.
_KEY_WORDS = r"(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?|auth[_-]?key)"
_ASSIGN = re.compile(
    r"(?i)(?P<key>[A-Za-z0-9_.\-]*" + _KEY_WORDS + r"[A-Za-z0-9_\-]*)"
    r"(?P<op>[\"']?\s*(?:=>|:=|=|:)(?!=)[ \t]*)"
    r"(?:(?P<q>[\"'])(?P<qval>[^\"'\n]*)(?P=q)|(?P<val>[^\s\"',;)\]}]+))"
)
# What every `_ASSIGN` match holds, from its key word to the first character of its operator, with the same
# flags and classes: a cheap test that a line can hold an assignment at all. The anchors are looser ("pass" is in
# "passed", "password" in `f(password, user)`), and `_ASSIGN` is costly on a long line (its key may start
# anywhere in an identifier): a docstring saying "passed" took most of a TypeScript file's redaction.
_ASSIGN_HEAD = re.compile(r"(?i)" + _KEY_WORDS + r"[A-Za-z0-9_\-]*[\"']?\s*[=:]")
_ASSIGN_ANCHORS = (
    "pass", "pwd", "secret", "token", "apikey", "api_key", "api-key", "access_key", "access-key",
    "private_key", "private-key", "credential", "auth_key", "auth-key",
)  # fmt: skip
_FLAG = re.compile(
    r"(?i)(?P<key>--?(?:db-|mysql-|redis-)?(?:password|passwd|pass|token|secret|api-?key|auth-token|access-key))"
    r"(?P<op>=|[ \t]+)(?:(?P<q>[\"'])(?P<qval>[^\"'\n]*)(?P=q)|(?P<val>[^\s\"']+))"
)
_PLACEHOLDERS = frozenset(
    {"", "none", "null", "nil", "true", "false", "undefined", "str", "string", "int", "bool", "bytes", "any",
     "number", "optional", "required", "secret", "password", "token", "***", "xxx", "changeme", "redacted"}
)  # fmt: skip
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_KIND_OF_KEY = [
    ("pass", "password"), ("pwd", "password"), ("token", "token"), ("secret", "secret"),
    ("credential", "credential"), ("key", "api-key"),
]  # fmt: skip


def _key_kind(key: str) -> str:
    lower = key.lower()
    for word, kind in _KIND_OF_KEY:
        if word in lower:
            return kind
    return "secret"


def _keep_unquoted(value: str, op: str, key: str, after: str) -> bool:
    """True when an unquoted assignment value reads as code, a reference or a placeholder, not a literal."""
    if value.lower() in _PLACEHOLDERS or value.startswith(("$", "%", "{", "<", "*", "@", "[REDACTED")):
        return True
    if any(ch in value for ch in "()[]{}") or (value.isdigit() and len(value) <= 5):
        return True
    if _IDENT.fullmatch(value):
        bare = op.strip(" \t\"'")
        if bare == ":" and value[0].isupper():
            return True  # a type annotation: `token: Token`
        if op != op.strip(" \t") and bare in ("=", ":=", "=>"):
            return True  # `token = self.token`: code reads a variable
        base = key.lower().lstrip("-_.").rsplit(".", 1)[-1]
        low = value.lower()
        if after[:1] in (",", ")") or low == base or low.endswith(("." + base, "_" + base)):
            return True  # `f(password=password)`: a keyword argument passing a variable on
    return False


def _assignment_replacer(m: re.Match[str]) -> str:
    key, op = m.group("key"), m.group("op")
    kind = _key_kind(key)
    if m.group("q") is not None:
        value = m.group("qval")
        if value.lower() in _PLACEHOLDERS or value.startswith(("$", "{{", "${", "[REDACTED", "<")):
            return m.group(0)
        return f"{key}{op}{m.group('q')}[REDACTED:{kind}]{m.group('q')}"
    value = m.group("val")
    if _keep_unquoted(value, op, key, m.string[m.end() : m.end() + 1]):
        return m.group(0)
    return f"{key}{op}[REDACTED:{kind}]"


_ANY_ANCHOR: re.Pattern[str] | None = None
_Trie = dict[str, "_Trie"]


def _prefix_tree_pattern(words: set[str]) -> str:
    """A regex that matches where any of `words` starts, its alternatives factored by common prefixes
    (`a(?:kia|sia|pi_key|...)|...`): the regex engine then tries one branch per character instead of every
    word at every position, which halves the scan. A word that extends a shorter one is dropped (`sk-ant-`
    under `sk-`): it starts wherever the shorter one does, and callers only use where a match starts."""
    tree: _Trie = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # a word ends here

    def branches(node: _Trie) -> str:
        if "" in node:
            return ""
        alternatives = [re.escape(char) + branches(node[char]) for char in sorted(node)]
        return alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"

    return branches(tree)


def _any_anchor() -> re.Pattern[str]:
    global _ANY_ANCHOR
    if _ANY_ANCHOR is None:
        anchors = {a for anchors, _p, _r in _TOKEN_DETECTORS for a in anchors} | set(_ASSIGN_ANCHORS)
        assert not any("\n" in a for a in anchors)  # (`anchored` joins its strings with newlines)
        _ANY_ANCHOR = re.compile(_prefix_tree_pattern(anchors))
    return _ANY_ANCHOR


def may_hold_secret(text: str) -> bool:
    """False when no detector's anchor occurs in `text` (then `redact` would change nothing): one regex pass,
    so a caller with many short strings can check them joined once instead of each."""
    return _any_anchor().search(text.lower()) is not None


def anchored(texts: list[str]) -> list[int]:
    """The indexes of the `texts` in which a detector's anchor occurs (`may_hold_secret` of each), found in
    one regex pass over them joined: no anchor holds a newline, so no match spans two of them."""
    joined = "\n".join(texts)
    lowered = joined.lower()
    if len(lowered) != len(joined):
        # A character lowers to several (`İ` -> `i̇`), so offsets in `lowered` are not those of `texts`:
        # lower each text on its own (rare).
        return [index for index, text in enumerate(texts) if may_hold_secret(text)]
    # Each character lowered to one, so the joined text lowered once keeps every text's offsets (and lowering
    # is per character: the newline between two texts stops Greek final-sigma context, the one exception).
    starts, at = [], 0
    for text in texts:
        starts.append(at)
        at += len(text) + 1
    hits: list[int] = []
    for match in _any_anchor().finditer(lowered):
        index = bisect.bisect_right(starts, match.start()) - 1
        if not hits or hits[-1] != index:
            hits.append(index)
    return hits


def redact(text: str) -> tuple[str, int]:
    """Return (text with secrets replaced by `[REDACTED:<kind>]`, number of replacements)."""
    if not text:
        return text, 0
    low = text.lower()
    total = 0
    for anchors, pattern, replacer in _TOKEN_DETECTORS:
        if any(anchor in low for anchor in anchors):
            text, count = pattern.subn(replacer, text)
            total += count
    if any(anchor in low for anchor in _ASSIGN_ANCHORS):
        # Assignments are matched line by line, and only on lines naming a key word: the key pattern may start
        # anywhere in an identifier, which is too slow to run over whole files of ordinary code.
        before = text.count("[REDACTED:")
        lines = text.split("\n")
        for index, line in enumerate(lines):
            line_low = line.lower()
            if any(anchor in line_low for anchor in _ASSIGN_ANCHORS):
                line = _FLAG.sub(_assignment_replacer, line)
                if _ASSIGN_HEAD.search(line):  # without it, `_ASSIGN` cannot match
                    line = _ASSIGN.sub(_assignment_replacer, line)
                lines[index] = line
        text = "\n".join(lines)
        total += text.count("[REDACTED:") - before
    return text, total


def _normalize(value: str) -> str:
    """Casefold and collapse whitespace, so "Hunter 2" forgotten also matches "hunter  2"."""
    return " ".join(value.split()).casefold()


class DenyList:
    """Values the user asked NEXUS to forget; anything that contains one is not stored (or is scrubbed).

    Persisted as JSON (`{"version": 1, "values": [...]}`) at a caller-chosen path, written atomically with mode
    0600 because the values are, by definition, things the user did not want kept around.
    """

    VERSION = 1

    def __init__(self, path: Path | str | None = None, values: Iterable[str] = ()) -> None:
        self.path = Path(path) if path is not None else None
        self._values: set[str] = set()
        if self.path is not None and self.path.exists():
            self._load()
        for value in values:
            self.add(value)

    def _load(self) -> None:
        assert self.path is not None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # a corrupt deny-list must not stop the daemon; the next save rewrites it
        values = data.get("values", []) if isinstance(data, dict) else []
        self._values.update(_normalize(v) for v in values if isinstance(v, str) and v.strip())

    def add(self, value: str) -> bool:
        """Add a value (normalized); returns False when it is empty or already present."""
        norm = _normalize(value)
        if not norm or norm in self._values:
            return False
        self._values.add(norm)
        return True

    def remove(self, value: str) -> bool:
        norm = _normalize(value)
        if norm in self._values:
            self._values.discard(norm)
            return True
        return False

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and _normalize(value) in self._values

    def __len__(self) -> int:
        return len(self._values)

    def values(self) -> list[str]:
        return sorted(self._values)

    def matches(self, text: str) -> bool:
        """True when the text contains any forgotten value (after the same normalization)."""
        if not self._values or not text:
            return False
        norm = _normalize(text)
        return any(value in norm for value in self._values)

    def scrub(self, text: str) -> tuple[str, int]:
        """Replace forgotten values (case-insensitively, any whitespace run) by `[REDACTED:forgotten]`."""
        total = 0
        for value in self._values:
            pattern = r"\s+".join(re.escape(word) for word in value.split())
            text, count = re.subn(pattern, "[REDACTED:forgotten]", text, flags=re.IGNORECASE)
            total += count
        return text, total

    def save(self) -> None:
        """Write atomically (temp file + rename) with mode 0600."""
        if self.path is None:
            raise ValueError("DenyList has no path to save to")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".denylist-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"version": self.VERSION, "values": self.values()}, handle, indent=0)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
