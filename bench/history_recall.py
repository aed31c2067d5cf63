"""History recall: ranking quality on a labelled set, and latency over 50,000 history nodes.

Part 1 (quality): a real git repository with a fixture history (answer commits among ~150 distractor commits),
a docs file, and shell commands in the spool (failed and successful), ingested by a real daemon through
`index` + `history.sync`; then every query of RANKING_SET goes through the `query` op (BM25 only) and is scored
against the answers written down beside it: recall@5 = mean over queries of (answers found in the top 5 /
answers, capped at 5) and MRR = mean of 1 / rank of the first answer.

Part 2 (latency): a fresh database bulk-loaded (CSV COPY) with 50,000 synthetic history nodes of one repository
(commits, changes, shell commands, doc sections, transcript turns; words drawn Zipf-like from a 20,000-word
vocabulary that contains the queries' words), then a daemon serves it and the `query` op is timed end to end
from a client (wire included), over the ranking set's questions, several rounds. A stress run repeats it with
a vocabulary of only the 69 domain words, where every query word occurs in about a third of all nodes.

Writes bench/results/history_recall.json. Run: `python bench/history_recall.py` (`--nodes N`, `--rounds R`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.harness import BenchDaemon, percentiles, write_result  # noqa: E402

# -- the fixture history ------------------------------------------------------------------------------------

# (subject, body, files): the commits that answer questions, in commit order.
ANSWER_COMMITS: list[tuple[str, str, dict[str, str]]] = [
    ("fix: raise the retry budget from 3 to 5", "The payment gateway drops connections for about two seconds during failover; three attempts were not enough and checkout requests failed.", {"client/retry.py": "RETRY_BUDGET = 5\n"}),
    ("fix: evict stale entries from the session cache", "Sessions of logged-out users stayed in the LRU cache and were served after logout.", {"server/cache.py": "def evict_stale(cache):\n    cache.purge(expired=True)\n"}),
    ("feat: refresh OAuth access tokens before they expire", "Tokens are refreshed 60 seconds before expiry so long uploads do not fail with 401.", {"auth/tokens.py": "REFRESH_MARGIN_S = 60\n"}),
    ("fix: rate limiter counted requests twice behind the proxy", "X-Forwarded-For was read and the socket peer too, so every request consumed two tokens.", {"server/ratelimit.py": "def client_key(req):\n    return req.forwarded_for\n"}),
    ("perf: batch database inserts in the importer", "Row-by-row inserts took 40 minutes for the nightly import; batches of 1000 take 3.", {"importer/load.py": "BATCH = 1000\n"}),
    ("Revert \"feat: parallel thumbnail rendering\"", "This reverts commit 1234567. Rendering in parallel exhausted memory on the small workers.", {"media/thumbs.py": "WORKERS = 1\n"}),
    ("fix: timezone bug in the invoice due date", "Due dates were computed in UTC and shifted a day for customers west of Greenwich.", {"billing/invoice.py": "def due_date(issued, tz):\n    return issued.astimezone(tz) + TERM\n"}),
    ("feat!: drop support for Python 3.8", "BREAKING CHANGE: the package now requires Python 3.10 for structural pattern matching.", {"pyproject.toml": "requires-python = '>=3.10'\n"}),
    ("fix: websocket heartbeat interval too long for the load balancer", "The load balancer closes idle connections after 60 s; heartbeats every 90 s let it close live sockets.", {"server/ws.py": "HEARTBEAT_S = 30\n"}),
    ("fix: migration 0042 locked the orders table", "Adding the index concurrently avoids the table lock that stalled checkout for 5 minutes.", {"migrations/0042_orders_index.sql": "CREATE INDEX CONCURRENTLY orders_created ON orders(created);\n"}),
    ("feat: structured JSON logging with request ids", "Every log line carries the request id so a failed request can be traced across services.", {"server/logging.py": "FORMAT = 'json'\n"}),
    ("fix: memory leak in the PDF renderer", "Fonts were cached per document and never released; the worker grew to 4 GB.", {"media/pdf.py": "FONT_CACHE = {}\n"}),
    ("chore: pin urllib3 below 2 for the legacy proxy", "The corporate proxy speaks only TLS 1.0 which urllib3 2 refuses.", {"requirements.txt": "urllib3<2\n"}),
    ("fix: email templates escaped twice", "Ampersands showed as &amp;amp; in order confirmation emails.", {"mail/render.py": "AUTOESCAPE = False\n"}),
    ("feat: feature flag for the new search ranking", "The ranking change is behind SEARCH_V2 so it can be rolled back without a deploy.", {"search/flags.py": "SEARCH_V2 = False\n"}),
    ("fix: off-by-one in pagination of the audit log", "The last entry of every page was repeated as the first of the next.", {"audit/pages.py": "def page(items, n, size):\n    return items[n * size:(n + 1) * size]\n"}),
]

DOC = """# Operations handbook

## Retry budget
Outgoing calls to the payment gateway are retried up to the retry budget (5 attempts). The budget was raised
after the March failover incident, when three attempts were not enough.

## Session cache
The session cache is an LRU of 10,000 entries; stale sessions are evicted on logout and every 5 minutes.

## Deploys
Deploys go out from the release branch with `make deploy`; a failed deploy is rolled back with `make rollback`.

## Rate limiting
Each client gets 100 requests per minute, keyed by the X-Forwarded-For address when behind the proxy.

## Database migrations
Migrations that add indexes on large tables must use CREATE INDEX CONCURRENTLY to avoid locking writes.

## On-call
Page the on-call engineer through the incident channel; escalate after 15 minutes without acknowledgement.
"""

# (exit code, command): typed in the repository.
SHELL = [
    (1, "pytest tests/test_retry.py -k budget"),
    (0, "pytest tests/test_retry.py -k budget"),
    (2, "make deploy ENV=staging"),
    (0, "make rollback ENV=staging"),
    (1, "alembic upgrade head"),
    (0, "git log --oneline"),
    (1, "npm run build:thumbnails"),
    (0, "docker compose up -d postgres"),
    (137, "python -m importer.load --nightly"),
    (0, "ls -la"),
]

# (query, answers). An answer is commit:<subject prefix> | doc:<heading> | shell:<command> (failed ones).
RANKING_SET: list[tuple[str, list[str]]] = [
    ("why was the retry budget raised", ["commit:fix: raise the retry budget", "doc:Retry budget"]),
    ("how many retry attempts for the payment gateway", ["doc:Retry budget", "commit:fix: raise the retry budget"]),
    ("failed retry tests", ["shell:pytest tests/test_retry.py -k budget"]),
    ("stale sessions served after logout", ["commit:fix: evict stale entries", "doc:Session cache"]),
    ("how big is the session cache", ["doc:Session cache"]),
    ("uploads fail with 401 unauthorized", ["commit:feat: refresh OAuth access tokens"]),
    ("when are oauth tokens refreshed", ["commit:feat: refresh OAuth access tokens"]),
    ("rate limiter counting requests twice", ["commit:fix: rate limiter counted"]),
    ("requests per minute limit per client", ["doc:Rate limiting"]),
    ("nightly import is slow", ["commit:perf: batch database inserts", "shell:python -m importer.load --nightly"]),
    ("importer killed out of memory", ["shell:python -m importer.load --nightly"]),
    ("why was parallel thumbnail rendering reverted", ["commit:Revert \"feat: parallel thumbnail rendering\""]),
    ("thumbnail build failed", ["shell:npm run build:thumbnails", "commit:Revert \"feat: parallel thumbnail"]),
    ("invoice due date off by a day", ["commit:fix: timezone bug in the invoice"]),
    ("which python version is required", ["commit:feat!: drop support for Python 3.8"]),
    ("breaking change python 3.10", ["commit:feat!: drop support for Python 3.8"]),
    ("load balancer closes websocket connections", ["commit:fix: websocket heartbeat"]),
    ("websocket heartbeat interval", ["commit:fix: websocket heartbeat"]),
    ("orders table locked during migration", ["commit:fix: migration 0042", "doc:Database migrations"]),
    ("how to add an index without locking", ["doc:Database migrations", "commit:fix: migration 0042"]),
    ("alembic migration failed", ["shell:alembic upgrade head"]),
    ("trace a failed request across services", ["commit:feat: structured JSON logging"]),
    ("json log format", ["commit:feat: structured JSON logging"]),
    ("pdf worker memory grows", ["commit:fix: memory leak in the PDF renderer"]),
    ("font cache leak", ["commit:fix: memory leak in the PDF renderer"]),
    ("why is urllib3 pinned", ["commit:chore: pin urllib3 below 2"]),
    ("corporate proxy tls", ["commit:chore: pin urllib3 below 2"]),
    ("ampersand shown twice in emails", ["commit:fix: email templates escaped twice"]),
    ("roll back the search ranking without deploy", ["commit:feat: feature flag for the new search ranking"]),
    ("audit log page repeats last entry", ["commit:fix: off-by-one in pagination"]),
    ("staging deploy failed", ["shell:make deploy ENV=staging", "doc:Deploys"]),
    ("how to roll back a failed deploy", ["doc:Deploys"]),
    ("who to page during an incident", ["doc:On-call"]),
    ("escalate when on-call does not acknowledge", ["doc:On-call"]),
]

NOISE_SUBJECTS = [
    "chore: bump version to {n}", "style: format {mod} with black", "test: more cases for {mod}",
    "refactor: split {mod} into smaller functions", "docs: typo in {mod} docstring", "ci: cache pip downloads",
    "feat: add {mod} health endpoint", "chore: update {mod} dependencies", "build: tweak {mod} packaging",
]  # fmt: skip
NOISE_MODULES = ["accounts", "catalog", "cart", "shipping", "search", "reports", "admin", "notifications",
                 "exports", "webhooks", "profiles", "inventory"]  # fmt: skip


def run_git(root: Path, *args: str, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def build_fixture(root: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com"}  # fmt: skip
    root.mkdir(parents=True)
    run_git(root, "init", "-q", "-b", "main", env=env)
    rng = random.Random(7)
    answers = list(ANSWER_COMMITS)
    t0 = 1_700_000_000
    step = 0
    (root / "docs").mkdir()
    (root / "docs" / "operations.md").write_text(DOC)
    for i in range(150):
        mod = rng.choice(NOISE_MODULES)
        subject = rng.choice(NOISE_SUBJECTS).format(n=f"1.{i}", mod=mod)
        path = root / mod / f"{mod}_{i % 7}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {mod}\nVALUE_{i} = {i}\n")
        run_git(root, "add", "-A", env=env)
        run_git(root, "commit", "-q", "-m", subject, f"--date=@{t0 + step * 3600}", env=env)
        step += 1
        if answers and i % 9 == 4:
            subj, body, files = answers.pop(0)
            for rel, text in files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text)
            run_git(root, "add", "-A", env=env)
            run_git(root, "commit", "-q", "-m", f"{subj}\n\n{body}", f"--date=@{t0 + step * 3600}", env=env)
            step += 1
    for subj, body, files in answers:
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        run_git(root, "add", "-A", env=env)
        run_git(root, "commit", "-q", "-m", f"{subj}\n\n{body}", f"--date=@{t0 + step * 3600}", env=env)
        step += 1


def answer_key(item: dict[str, Any]) -> list[str]:
    kind = item["kind"]
    if kind in ("commit", "change"):
        subject = item["text"].split(": ", 1)[1].split("\n", 1)[0] if kind == "commit" else ""
        return [f"commit:{subject}", f"sha:{item.get('sha')}"]
    if kind == "doc":
        return [f"doc:{item['headingPath'].split(' > ')[-1]}"]
    if kind == "shell":
        return [f"shell:{item['command']}" if item.get("exitCode") else "shell-ok"]
    return [kind]


def matches(item: dict[str, Any], answer: str, sha_of: dict[str, str]) -> bool:
    keys = answer_key(item)
    if answer.startswith("commit:"):
        prefix = answer[len("commit:") :]
        sha = next((s for subj, s in sha_of.items() if subj.startswith(prefix)), None)
        return any(k.startswith("commit:") and k[7:].startswith(prefix) for k in keys) or f"sha:{sha}" in keys
    return answer in keys


def quality(client: Any, repo: Path, sha_of: dict[str, str]) -> dict[str, Any]:
    recalls, rr, misses = [], [], []
    for text, answers in RANKING_SET:
        r = client.request("query", {"repo": str(repo), "text": text, "limit": 10, "budget": 100000})
        results = r["results"]
        top5 = results[:5]
        found = [a for a in answers if any(matches(x, a, sha_of) for x in top5)]
        recalls.append(len(found) / min(len(answers), 5))
        first = next((i for i, x in enumerate(results, 1) if any(matches(x, a, sha_of) for a in answers)), None)
        rr.append(1.0 / first if first else 0.0)
        if len(found) < len(answers):
            misses.append({"query": text, "missing": [a for a in answers if a not in found],
                           "top5": [answer_key(x)[0] for x in top5]})  # fmt: skip
    return {
        "queries": len(RANKING_SET),
        "recall_at_5": round(sum(recalls) / len(recalls), 4),
        "mrr": round(sum(rr) / len(rr), 4),
        "misses": misses,
    }


# -- latency over a bulk-loaded history ---------------------------------------------------------------------

WORDS = (
    "retry budget cache session token refresh rate limit import batch thumbnail render invoice timezone python "
    "websocket heartbeat migration index logging request memory leak font proxy email template search ranking "
    "audit page deploy rollback incident queue worker timeout connection database schema user account order "
    "payment gateway upload download report export webhook profile inventory shipping cart catalog admin "
    "notification health endpoint config parser client server handler router middleware session cookie header"
).split()


class Vocabulary:
    """Words drawn Zipf-like (weight 1/rank) from a shuffled vocabulary of the domain words plus `extra`
    pronounceable pseudo-words, as in real prose; `extra=0` is the stress case where every query word is in a
    large share of all nodes (BM25's worst case)."""

    def __init__(self, rng: random.Random, extra: int) -> None:
        syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "dro", "fen", "gal", "hux"]
        pseudo = {"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(extra)}
        words = WORDS + sorted(pseudo - set(WORDS))
        rng.shuffle(words)
        self.words = words
        total = 0.0
        self.cum: list[float] = []
        for rank in range(1, len(words) + 1):
            total += 1.0 / rank
            self.cum.append(total)

    def synth(self, rng: random.Random, n: int) -> str:
        import bisect

        top = self.cum[-1]
        return " ".join(self.words[bisect.bisect_left(self.cum, rng.random() * top)] for _ in range(n))


def bulk_load(home: Path, root: str, nodes: int, extra_vocab: int = 20_000) -> str:
    from nexusd import paths
    from nexusd.history.ingest import index_text
    from nexusd.repos import repo_id_for
    from nexusd.store import Store

    dirs = paths.dirs({"NEXUS_HOME": str(home)})
    dirs.data.mkdir(parents=True, exist_ok=True)
    store = Store(dirs.db)
    store.ensure_schema()
    conn = store.connect()
    rid = repo_id_for(root)
    user = os.environ.get("NEXUS_USER") or __import__("getpass").getuser()
    conn.execute(
        "CREATE (:Repository {id: $id, root: $root, name: 'bench', userId: $u, graphVersion: 0})",
        {"id": rid, "root": root, "u": user},
    )
    rng = random.Random(11)
    vocab = Vocabulary(rng, extra_vocab)
    synth = vocab.synth
    share = {"Commit": 0.3, "Change": 0.4, "ShellCommand": 0.15, "DocSection": 0.1, "ConversationTurn": 0.05}
    counts = {t: int(nodes * f) for t, f in share.items()}
    now = time.time()
    commits = []
    for i in range(counts["Commit"]):
        msg = f"{rng.choice(['fix', 'feat', 'chore', 'refactor'])}: {synth(rng, 6)}\n\n{synth(rng, 25)}"
        commits.append((f"c{i}", rid, f"{i:040x}", msg, "Dev", now - i * 600, 0.8, False, index_text(msg), "fix",
                        False, False, "", 1))  # fmt: skip
    conn.copy_nodes("Commit", ["id", "repoId", "sha", "message", "author", "time", "signal", "isMerge", "searchText",
                               "kind", "isRevert", "isBreaking", "parents", "fileCount"], commits)  # fmt: skip
    changes = []
    for i in range(counts["Change"]):
        patch = "\n".join(f"+{synth(rng, 6)}" for _ in range(8))
        path = f"{synth(rng, 1)}/{synth(rng, 1)}.py"
        changes.append((f"ch{i}", rid, f"{i % counts['Commit']:040x}", path, "", "M", 8, 0, patch, now - i * 500,
                        "[]", 0.8, index_text(path, patch)))  # fmt: skip
    conn.copy_nodes("Change", ["id", "repoId", "sha", "path", "oldPath", "status", "additions", "deletions",
                               "patch", "time", "hunks", "signal", "searchText"], changes)  # fmt: skip
    shells = []
    for i in range(counts["ShellCommand"]):
        cmd = f"{rng.choice(['pytest', 'make', 'npm run', 'python -m', 'git'])} {synth(rng, 3)}"
        shells.append((f"s{i}", user, rid, cmd, root, rng.choice([0, 0, 0, 1, 2]), now - i * 60, 100, "bash",
                       "hook", index_text(cmd)))  # fmt: skip
    conn.copy_nodes("ShellCommand", ["id", "userId", "repoId", "text", "cwd", "exitCode", "startedAt",
                                     "durationMs", "shell", "source", "searchText"], shells)  # fmt: skip
    docs = []
    for i in range(counts["DocSection"]):
        heading = synth(rng, 3)
        text = synth(rng, 80)
        docs.append((f"d{i}", rid, f"docs/{i % 50}.md", heading, 2, i, text, index_text(heading, heading, text), 0,
                     now))  # fmt: skip
    conn.copy_nodes("DocSection", ["id", "repoId", "path", "headingPath", "level", "startLine", "text",
                                   "searchText", "part", "mtime"], docs)  # fmt: skip
    turns = []
    for i in range(counts["ConversationTurn"]):
        text = synth(rng, 60)
        turns.append((f"t{i}", user, rid, f"sess{i % 20}", i, "assistant", now - i, text, index_text(text), 0))
    conn.copy_nodes("ConversationTurn", ["id", "userId", "repoId", "sessionId", "ordinal", "role", "at", "text",
                                         "searchText", "part"], turns)  # fmt: skip
    # The shared search documents, as ingest.insert_history writes them.
    from nexusd.history.ingest import SEARCH_DOC_COLS
    from nexusd.history.rank import search_document

    def docs_of(kind: str, cols: list[str], rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        out = []
        for r in rows:
            d = search_document(kind, {"userId": "", **dict(zip(cols, r, strict=True))})
            out.append(tuple(d[c] for c in SEARCH_DOC_COLS))
        return out

    texts = docs_of("commit", ["id", "repoId", "sha", "message", "author", "time", "signal", "isMerge",
                               "searchText", "kind", "isRevert", "isBreaking", "parents", "fileCount"], commits)
    texts += docs_of("change", ["id", "repoId", "sha", "path", "oldPath", "status", "additions", "deletions",
                                "patch", "time", "hunks", "signal", "searchText"], changes)
    texts += docs_of("shell", ["id", "userId", "repoId", "text", "cwd", "exitCode", "startedAt", "durationMs",
                               "shell", "source", "searchText"], shells)
    texts += docs_of("doc", ["id", "repoId", "path", "headingPath", "level", "startLine", "text", "searchText",
                             "part", "mtime"], docs)
    texts += docs_of("turn", ["id", "userId", "repoId", "sessionId", "ordinal", "role", "at", "text",
                              "searchText", "part"], turns)
    conn.copy_nodes("HistoryText", list(SEARCH_DOC_COLS), texts)
    conn.close()
    store.checkpoint()
    store.close()
    return rid


def latency(nodes: int, rounds: int, extra_vocab: int) -> dict[str, Any]:
    from nexus_client import connect

    root = tempfile.mkdtemp(prefix="nxb-repo-")
    with BenchDaemon() as daemon:
        daemon.stop()
        t0 = time.perf_counter()
        bulk_load(daemon.home, os.path.realpath(root), nodes, extra_vocab)
        load_s = time.perf_counter() - t0
        daemon.start()
        samples: list[float] = []
        first: list[float] = []  # each question's first asking (nothing per-query cached yet)
        with connect(daemon.dirs) as client:
            deadline = time.monotonic() + 600  # the daemon builds the query index at start: time it built
            while str(client.request("query", {"repo": root, "text": "retry budget"})["retrieval"].get("index")).startswith(
                "building"
            ) and time.monotonic() < deadline:
                time.sleep(0.5)
            for text, _ in RANKING_SET[:5]:  # warm up
                client.request("query", {"repo": root, "text": text})
            for round_no in range(rounds):
                for text, _ in RANKING_SET:
                    start = time.perf_counter()
                    client.request("query", {"repo": root, "text": text})
                    samples.append(time.perf_counter() - start)
                    if round_no == 0:
                        first.append(samples[-1])
            inproc = client.request("query", {"repo": root, "text": "retry budget"})
    os.rmdir(root)
    assert inproc["candidates"] > 0, "the bulk-loaded history answered nothing"
    return {"nodes": nodes, "vocabulary": len(set(WORDS)) + extra_vocab, "bulkLoadS": round(load_s, 2),
            "query": percentiles(samples), "firstRound": percentiles(first),
            "slowest": sorted(((round(s * 1000, 1), i) for i, s in enumerate(samples)), reverse=True)[:5],
            "candidatesExample": inproc["candidates"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--skip-latency", action="store_true")
    opts = parser.parse_args()
    from nexus_client import connect

    with tempfile.TemporaryDirectory(prefix="nxb-hist-") as tmp:
        repo = Path(os.path.realpath(tmp)) / "service"
        build_fixture(repo)
        log = subprocess.run(["git", "log", "--format=%H%x1f%s"], cwd=repo, capture_output=True, text=True, check=True)
        sha_of = {line.split("\x1f")[1]: line.split("\x1f")[0] for line in log.stdout.splitlines()}
        with BenchDaemon() as daemon:
            with connect(daemon.dirs) as client:
                client.request("index", {"repo": str(repo)}, timeout=300)
                daemon.dirs.spool.parent.mkdir(parents=True, exist_ok=True)
                with open(daemon.dirs.spool, "a") as fh:
                    for i, (code, cmd) in enumerate(SHELL):
                        fh.write(f"N1\tbash\t{1_700_000_000 + i * 60}\t{1_700_000_005 + i * 60}\t{code}\t{repo}\t{cmd}\n")
                synced = client.request("history.sync", {"repo": str(repo), "limit": 500}, timeout=600)
                result: dict[str, Any] = {"fixture": synced["counts"], "ranking": quality(client, repo, sha_of)}
    if not opts.skip_latency:
        result["latency"] = latency(opts.nodes, opts.rounds, 20_000)
        result["latencyStress"] = latency(opts.nodes, max(1, opts.rounds // 3), 0)
    path = write_result("history_recall", result)
    rank = result["ranking"]
    print(f"ranking set: {rank['queries']} queries, recall@5 {rank['recall_at_5']}, MRR {rank['mrr']}")
    for miss in rank["misses"]:
        print(f"  miss: {miss['query']!r}: {miss['missing']} top5={miss['top5']}")
    if "latency" in result:
        q = result["latency"]["query"]
        print(f"latency over {result['latency']['nodes']} history nodes: p50 {q['p50_ms']} ms, p99 {q['p99_ms']} ms")
        q = result["latencyStress"]["query"]
        print(f"  stress ({len(set(WORDS))}-word vocabulary, every query word in ~1/3 of nodes): p50 {q['p50_ms']} ms, p99 {q['p99_ms']} ms")
    print(f"wrote {path}")
    json.dumps(result)


if __name__ == "__main__":
    main()
