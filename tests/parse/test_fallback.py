"""The name-only fallback guesses only where a guess is likely right, and what it does not bind it still counts."""

from __future__ import annotations

from pathlib import Path

from nexusd.resolve.python import PY_COMMON_METHODS
from nexusd.resolve.typescript import JS_COMMON_METHODS
from tests.parse.test_resolve import Repo


def sites(repo: Repo, path: str) -> list[tuple[str, int, bool]]:
    res = repo.index.resolve_file(path)
    return sorted(
        (raw, line, ext)
        for sid, raws in res.unresolved.items()
        for raw, (line, ext) in zip(raws, res.sites[sid], strict=True)
    )


def test_a_standard_library_method_name_never_lands_on_the_only_repository_method(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {
        "app/worker.py": "class Worker:\n    def start(self):\n        pass\n    def crunch(self):\n        pass\n",
        "app/main.py": (
            "import threading\n\n\n"
            "def main(job, t):\n"
            "    t.start()\n"  # a Thread, most likely: no guess
            "    job.crunch()\n"  # the only `crunch` anywhere: a name-only guess
            "    threading.Thread(target=main).join()\n"  # bound outside the repository
        ),
    })  # fmt: skip
    calls = repo.calls("app/main.py")
    assert calls == {("main", "py:method:app/worker.py:Worker.crunch", "name-only")}
    (edge,) = repo.index.resolve_file("app/main.py").calls
    assert edge.confidence <= 0.35
    # nothing is dropped: `t.start` is kept with its line; the Thread call is kept as external
    assert sites(repo, "app/main.py") == [
        ("t.start", 5, False), ("threading.Thread", 7, True), ("threading.Thread().join", 7, True),
    ]  # fmt: skip


def test_js_builtin_method_names_are_not_guessed_but_counted(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {
        "src/queue.ts": "export class Jobs {\n  push(x: number) { return x }\n  drain() { return 1 }\n}\n",
        "src/app.ts": "export function run(list, jobs) {\n  list.push(1)\n  jobs.drain()\n  console.log(1)\n}\n",
    })  # fmt: skip
    assert repo.calls("src/app.ts") == {("run", "ts:method:src/queue.ts:Jobs.drain", "name-only")}
    assert sites(repo, "src/app.ts") == [("list.push", 2, False)]  # console.log is the language's own: dropped


def test_the_generated_lists_hold_builtin_and_stdlib_methods_only() -> None:
    for name in ("start", "join", "is_alive", "append", "setdefault", "read_text", "put_nowait", "hexdigest"):
        assert name in PY_COMMON_METHODS, name
    for name in ("push", "then", "forEach", "hasOwnProperty", "emit", "removeListener", "padStart"):
        assert name in JS_COMMON_METHODS, name
    # statics and numeric/date/Counter methods are left out: as names they are as likely the repository's own
    for name in ("total", "now", "normalize"):
        assert name not in PY_COMMON_METHODS, name
    assert "create" not in JS_COMMON_METHODS


def test_no_guess_across_api_versions(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {
        "sdk/v2/client.py": "class ClientV2:\n    def list_items(self):\n        pass\n",
        "sdk/v1/service.py": "def sync(api):\n    return api.list_items()\n",  # v1 code: not v2's method
        "sdk/v2/service.py": "def sync(api):\n    return api.list_items()\n",  # same version: the guess stands
        "app/main.py": "def run(api):\n    return api.list_items()\n",  # outside any version folder
    })  # fmt: skip
    assert repo.calls("sdk/v1/service.py") == set()
    assert sites(repo, "sdk/v1/service.py") == [("api.list_items", 2, False)]
    assert repo.calls("sdk/v2/service.py") == {("sync", "py:method:sdk/v2/client.py:ClientV2.list_items", "name-only")}
    assert repo.calls("app/main.py") == {("run", "py:method:sdk/v2/client.py:ClientV2.list_items", "name-only")}
