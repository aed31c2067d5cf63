"""Redaction: every planted secret of the corpus disappears; ordinary code comes through untouched."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from nexusd.history.redact import DenyList, redact

CORPUS = Path(__file__).with_name("secrets_corpus.txt")

# Secret values are assembled from pieces so that this file holds no scanner-triggering literal.
_PEM_BODY = (
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u"
)
VALUES = {
    "pem": "-----BEGIN RSA " + "PRIVATE KEY-----\n" + _PEM_BODY + "\n-----END RSA " + "PRIVATE KEY-----",
    "akia": "AKIA" + "QYLPMN5HZEXAMPL7",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzEXAMPLEKEY1",
    "ghp": "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "gho": "gho_" + "9aZ8bY7cX6dW5eV4fU3gT2hS1iR0jQ9kP8lO",
    "github_pat": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
    "glpat": "glpat-" + "xYz12AbC34dEf56GhI78",
    "slack": "xoxb-" + "2934823-4823984-AbCdEfGhIjKl",
    "google": "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
    "openai": "sk-" + "proj-4fG7hJ2kL9mN3pQ6rS8tV1wX5yZ0aB",
    "openai_bare": "sk-" + "Tq81vXk2LmN0pQrS7uVwXyZ3aBcDeF",
    "anthropic": "sk-ant-" + "api03-AbCdEf123456_GhIjKl-789mnOp",
    "stripe": "sk_live_" + "51HqLyjWDarjtT1zdp7dcXyZ",
    "jwt": "eyJhbGciOiJIUzI1NiJ9."
    + "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "bearer": "d7f8a9b0c1e2f3a4b5c6d7e8f9a0b1c2",
    "basic": "YWxhZGRpbjpvcGVuc2VzYW1l",
    "password_env": "superSecretValue",
    "password_yaml": "hunter2isMyPassword",
    "password_json": "Tr0ub4dor&3",
    "password_code": "correct horse battery staple",
    "secret_assign": "9f8e7d6c5b4a3",
    "token_assign": "tok-live-0a9b8c7d",
    "api_key_assign": "k3y-ab12cd34ef56",
    "flag_password": "S3cr3tPassw0rd",
    "flag_token": "deploytoken987654",
    "postgres": "pgPassw0rd",
    "mongodb": "m0ng0Pass",
    "mysql": "mysqlPass1",
    "redis": "redisPass99",
    "amqp": "amqpSecret7",
}


def corpus() -> list[tuple[str, str, str]]:
    cases = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, template = line.split("\t", 1)
        secret = VALUES[name]
        cases.append((name, template.replace("\\n", "\n").replace("{SECRET}", secret), secret))
    return cases


@pytest.mark.parametrize(("name", "text", "secret"), corpus(), ids=[c[0] for c in corpus()])
def test_planted_secret_is_redacted(name: str, text: str, secret: str) -> None:
    out, count = redact(text)
    assert secret not in out, out
    assert count >= 1 and "[REDACTED:" in out
    # A fragment long enough to be useful must not survive either (e.g. a half-matched token).
    if len(secret) >= 16:
        assert secret[-12:] not in out, out


def test_corpus_covers_every_value() -> None:
    assert {c[0] for c in corpus()} == set(VALUES)


def test_whole_corpus_at_once() -> None:
    text = "\n".join(c[1] for c in corpus())
    out, count = redact(text)
    assert count >= len(VALUES)
    for _, _, secret in corpus():
        assert secret not in out


def test_kinds_are_specific() -> None:
    assert redact("token=" + VALUES["ghp"])[0] == "token=[REDACTED:github-token]"
    assert (
        redact(VALUES["postgres"].join(["postgres://app:", "@db/x"]))[0]
        == "postgres://app:[REDACTED:url-password]@db/x"
    )
    assert redact("DB_PASSWORD=abc123xyz")[0] == "DB_PASSWORD=[REDACTED:password]"
    assert (
        redact("Authorization: Bearer abc.def.ghi-123")[0] == "Authorization: Bearer [REDACTED:auth-header]"
    )


NEGATIVES = [
    "def login(password: str, token: Token | None = None) -> bool:",
    "    password = get_password(user)",
    "    token = self.token",
    "    secret_key = settings.SECRET_KEY",
    "    return authenticate(password=password, token=token)",
    "max_tokens = 100",
    'if not api_key:\n    raise ValueError("missing api key")',
    "password_hash = hashlib.sha256(pw).hexdigest()",
    'env = {"PASSWORD": os.environ["PASSWORD"]}',
    "export DB_PASSWORD=$DB_PASSWORD",
    "password: ${DB_PASSWORD}",
    'token: "{{ vault_token }}"',
    "for token in tokens:\n    yield token.text",
    "the passwords are hashed with bcrypt; tokens expire after an hour",
    "git clone https://github.com/acme/app.git && cd app",
    "http://localhost:8000/api/v1/items?page=2",
    "class TokenizerKey:\n    pass",
    "task-manager-component-with-a-long-name",
    "risk-assessment-2024-quarterly-review",
    "const secret = process.env.SECRET;",
    "  --password-file /run/secrets/db",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_ordinary_code_is_not_mangled(text: str) -> None:
    assert redact(text) == (text, 0)


def test_redact_is_fast_on_ordinary_text() -> None:
    text = Path(os.__file__).read_text(encoding="utf-8")
    start = time.perf_counter()
    for _ in range(10):
        redact(text)
    elapsed = (time.perf_counter() - start) / 10
    # A guard against catastrophic regex backtracking (seconds), not a speed target.
    assert elapsed < 2.0, f"{elapsed * 1000:.1f} ms for {len(text)} chars"


def test_deny_list_matches_scrubs_and_persists(tmp_path: Path) -> None:
    path = tmp_path / "state" / "deny.json"
    deny = DenyList(path)
    assert not deny.matches("anything")
    assert deny.add("  Project  Falcon ") and not deny.add("project falcon")
    assert "PROJECT FALCON" in deny and len(deny) == 1
    assert deny.matches("notes about project\nfalcon launch")
    assert not deny.matches("project eagle")
    assert deny.scrub("Project   Falcon ships friday") == ("[REDACTED:forgotten] ships friday", 1)
    deny.save()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert json.loads(path.read_text()) == {"version": 1, "values": ["project falcon"]}
    again = DenyList(path)
    assert (
        again.matches("PROJECT FALCON")
        and again.remove("project falcon")
        and not again.matches("project falcon")
    )
    path.write_text("not json")
    assert len(DenyList(path)) == 0  # corrupt file: start empty rather than fail


def test_anchored_names_the_strings_holding_an_anchor_as_checking_each_would() -> None:
    from nexusd.history.redact import anchored, may_hold_secret

    texts = ["", "def f(x)", "api_key = 'x'", "", "Password: see docs", "plain", "ghp_" + "a" * 36, "token",
             "İstanbul token", "two password and secret here", "end"]  # fmt: skip
    assert anchored(texts) == [i for i, t in enumerate(texts) if may_hold_secret(t)]
    assert anchored(texts) != [] and anchored(["a", "b"]) == [] and anchored([]) == []
