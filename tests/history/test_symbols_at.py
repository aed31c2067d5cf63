"""The definitions-only parse of old file versions names symbols exactly as the code graph does, and line
ranges are carried through a diff as `git log -L` carries them."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexusd.history import symbols_at
from nexusd.parse.extract import MODULE_QN, extract

ROOT = Path(__file__).resolve().parent.parent.parent
FILES = [
    "nexusd/history/ingest.py",
    "nexusd/retrieve/index.py",
    "nexusd/parse/extract.py",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests/fixtures/nav/ts_monorepo").rglob("*.ts")),
]


@pytest.mark.parametrize("rel", FILES)
def test_definitions_match_the_code_graph(rel: str) -> None:
    data = (ROOT / rel).read_bytes()
    full = [(s.start_line, s.end_line, s.qualified_name) for s in extract(rel, data).symbols if s.qualified_name != MODULE_QN]
    assert symbols_at.definitions(rel, data) == full


def test_old_line_maps_through_hunks() -> None:
    # as git prints them: two lines added after old line 3 (@@ -3,0 +4,2 @@), old lines 9-11 removed after new
    # line 10 (@@ -9,3 +10,0 @@)
    hunks = [(4, 2, 3, 0), (10, 0, 9, 3)]
    assert [symbols_at.old_line(n, hunks) for n in (1, 2, 3, 4, 5, 6, 10, 11, 12)] == [1, 2, 3, None, None, 4, 8, 12, 13]
    # a range covering an added hunk also takes the hunk's removed lines, as git log -L does
    assert symbols_at.old_range(9, 11, [(10, 1, 10, 2)]) == {9, 10, 11, 12}


def test_renames_pick_the_symbol_the_lines_came_from() -> None:
    old = [(1, 3, "other"), (5, 7, "keep")]
    new = [(1, 3, "greet"), (5, 7, "keep")]
    assert symbols_at.renames([(1, 1, 1, 1)], new, old) == {"greet": "other"}
    # a function added where nothing was removed is new, not a rename
    assert symbols_at.renames([(9, 3, 8, 0)], [(1, 3, "other"), (5, 7, "keep"), (9, 11, "fresh")], old) == {}
    # class renamed: each method maps to its own old method, not to the old class around it
    old_cls = [(1, 10, "A"), (2, 4, "A.m"), (6, 10, "A.n")]
    new_cls = [(1, 10, "B"), (2, 4, "B.m"), (6, 10, "B.n")]
    assert symbols_at.renames([(1, 1, 1, 1)], new_cls, old_cls) == {"B": "A", "B.m": "A.m", "B.n": "A.n"}
    # an old symbol goes to one new symbol only: the new class beside the renamed one is new
    old_one = [(1, 6, "_Loader"), (2, 6, "_Loader.get")]
    new_two = [(1, 4, "Env"), (2, 4, "Env.__init__"), (6, 11, "Loader"), (7, 11, "Loader.get")]
    got = symbols_at.renames([(1, 6, 1, 1)], new_two, old_one)  # "class _Loader" became Env and "class Loader"
    assert got == {"Loader": "_Loader", "Loader.get": "_Loader.get"}


def test_touched_uses_both_sides() -> None:
    new = [(1, 3, "a"), (5, 9, "b")]
    old = [(1, 3, "a"), (5, 12, "b"), (14, 16, "c")]
    assert symbols_at.touched([(9, 0, 10, 3)], new, old) == {"b"}  # lines removed from b's old body
    assert symbols_at.touched([(4, 1, 4, 1)], new, old) == set()  # the blank line between them
    assert symbols_at.touched([(9, 0, 14, 3)], new, old) == {"c"}  # c deleted


def test_a_method_that_became_a_function_keeps_its_name() -> None:
    # A test class turned into module functions: every line reindented, and the diff pairs lines across
    # functions (here b's lines with a's); the vanished holder of the same name wins.
    old = [(1, 9, "T"), (2, 4, "T.test_a"), (6, 9, "T.test_b")]
    new = [(1, 3, "test_b"), (5, 8, "test_a")]
    got = symbols_at.renames([(1, 8, 1, 9)], new, old)
    assert got == {"test_a": "T.test_a", "test_b": "T.test_b"}


GROUPBY_OLD = b'''def do_groupby(environment, value, attribute, default=None):
    """Group a sequence of objects by an attribute using Python's groupby.
    The attribute can use dot notation for nested access.
    """
    expr = make_attrgetter(environment, attribute, default=default)
    return [_GroupTuple(key, list(values)) for key, values in groupby(sorted(value, key=expr), expr)]
'''
GROUPBY_NEW = b'''def sync_do_groupby(environment, value, attribute, default=None):
    """Group a sequence of objects by an attribute using Python's groupby.
    The attribute can use dot notation for nested access.
    """
    expr = make_attrgetter(environment, attribute, default=default)
    return [_GroupTuple(key, list(values)) for key, values in groupby(sorted(value, key=expr), expr)]


@async_variant(sync_do_groupby)
async def do_groupby(environment, value, attribute, default=None):
    expr = make_attrgetter(environment, attribute, default=default)
    return [_GroupTuple(key, await auto_to_list(values)) for key, values in groupby(sorted(
        await auto_to_list(value), key=expr), expr)]
'''


def side(path: str, data: bytes) -> symbols_at.Side:
    return symbols_at.Side(path, symbols_at.definitions(path, data), data)


def test_body_similarity_is_a_weighted_jaccard_over_tokens() -> None:
    a = symbols_at.body_tokens(GROUPBY_OLD, 1, 6, "do_groupby")
    b = symbols_at.body_tokens(GROUPBY_NEW, 1, 6, "sync_do_groupby")
    assert b"do_groupby" not in a and b"sync_do_groupby" not in b  # a symbol's own name is left out
    assert symbols_at.similarity(a, b) == 1.0  # same body, new name, new indentation would not matter either
    reindented = GROUPBY_OLD.replace(b"\n    ", b"\n        ")
    assert symbols_at.similarity(a, symbols_at.body_tokens(reindented, 1, 6, "do_groupby")) == 1.0
    tiny = symbols_at.body_tokens(b"def f(self):\n    return self._x\n", 1, 2, "f")
    assert symbols_at.similarity(tiny, tiny) == 0.0  # below BODY_MIN_TOKENS: never linked by body
    half = symbols_at.body_tokens(GROUPBY_OLD, 1, 3, "do_groupby")
    assert symbols_at.similarity(a, half) < symbols_at.BODY_MIN  # size-aware: a part is not the whole


def test_a_body_that_moved_to_a_new_name_while_the_old_name_stays_is_followed() -> None:
    hunks = [(1, 1, 1, 1), (7, 7, 6, 0)]  # the def line renamed, the async variant added after the body
    new, old = side("f.py", GROUPBY_NEW), side("f.py", GROUPBY_OLD)
    assert symbols_at.renames(hunks, new.ranges, old.ranges) == {}  # by the diff's lines alone: nothing
    links = symbols_at.body_links(hunks, new, old, set(), set())
    assert [(x.new, x.old, x.how) for x in links] == [("sync_do_groupby", "do_groupby", "body 1.00")]


def test_an_extracted_helper_does_not_take_the_history_of_the_function_it_came_from() -> None:
    old_src = GROUPBY_OLD
    # the body moves into a new helper added above; do_groupby keeps its def and docstring as unchanged lines
    new_src = (
        b"def _groups(environment, value, attribute, default=None):\n"
        + b"\n".join(GROUPBY_OLD.split(b"\n")[4:6])
        + b"\n\n\n"
        + b"\n".join(GROUPBY_OLD.split(b"\n")[:4])
        + b"\n    return _groups(environment, value, attribute, default)\n"
    )
    new, old = side("f.py", new_src), side("f.py", old_src)
    hunks = [(1, 5, 0, 0), (10, 1, 5, 2)]
    assert symbols_at.body_links(hunks, new, old, set(), set()) == []


def test_a_function_moved_to_another_file_is_linked_by_body() -> None:
    old = side("a.py", GROUPBY_OLD)
    new = side("b.py", b"import x\n\n\n" + GROUPBY_OLD)
    other = side("c.py", b"def unrelated(a, b, c, d, e, f, g):\n    return [a + b + c + d + e + f + g for _ in range(9)]\n")
    got = symbols_at.moved_links([("do_groupby", old)], [("unrelated", other), ("do_groupby", new)])
    assert list(got) == ["b.py"]
    (link,) = got["b.py"]
    assert (link.new, link.old, link.old_path, link.how) == ("do_groupby", "do_groupby", "a.py", "body 1.00")
    assert symbols_at.decode_link(link.encode()) == link
    assert symbols_at.decode_link("greet\tother") == symbols_at.Link("greet", "other", "lines")  # the first form


SPLIT_OLD = b'''@pytest.mark.parametrize("level", ["trace", "debug"])
async def test_log_level(server, capsys, level):
    os.environ["LOG_LEVEL"] = level
    async with httpx.AsyncClient() as client:
        response = await client.get(server.url)
        assert response.status_code == 200
    if level == "trace":
        assert "httpx.dispatch.connection_pool" in capsys.readouterr().err
    else:
        assert "httpx.dispatch.connection_pool" not in capsys.readouterr().err
'''
SPLIT_NEW = b'''async def test_logs_debug(server, capsys):
    with override_log_level("debug"):
        async with httpx.AsyncClient() as client:
            response = await client.get(server.url)
    assert "httpx.dispatch.connection_pool" not in capsys.readouterr().err


async def test_logs_trace(server, capsys):
    with override_log_level("trace"):
        async with httpx.AsyncClient() as client:
            response = await client.get(server.url)
            assert response.status_code == 200
    assert "httpx.dispatch.connection_pool" in capsys.readouterr().err
'''


def test_a_test_split_in_two_continues_in_both_halves() -> None:
    new, old = side("t.py", SPLIT_NEW), side("t.py", SPLIT_OLD)
    hunks = [(1, 5, 1, 3), (6, 3, 4, 0), (11, 0, 6, 2), (12, 1, 9, 1)]
    lines = symbols_at.renames(hunks, new.ranges, old.ranges)
    assert lines == {"test_logs_trace": "test_log_level"}  # one to one by the diff's lines
    made = [symbols_at.Link(a, b, "lines") for a, b in lines.items()]
    (split,) = symbols_at.split_links(hunks, new, old, made)
    assert (split.new, split.old) == ("test_logs_debug", "test_log_level") and split.how.startswith("split ")
    # a newcomer at another depth (a method where a function was) is not a half of it
    nested = symbols_at.Side("t.py", [(1, 5, "C.test_logs_debug"), (8, 13, "test_logs_trace")], SPLIT_NEW)
    assert symbols_at.split_links(hunks, nested, old, made) == []


# Versions of one file, oldest first: each step inserts, deletes or rewrites lines at the top, in the middle and
# at an end without a newline, so the hunks between them take every shape git prints with --unified=0.
VERSIONS = [
    b"# -*- coding: utf-8 -*-\nimport os\n\n\ndef a():\n    return 1\n\n\nclass K:\n    def m(self):\n        return 2\n",
    b"import os\nimport sys\n\n\ndef a():\n    return 1\n\n\nclass K:\n    def m(self):\n        return 2\n\n    def n(self):\n        return 3",
    b"import os\nimport sys\n\n\ndef a():\n    x = 1\n    return x\n\n\nclass K:\n    def n(self):\n        return 3\n\n\ndef b():\n    pass\n",
    b"def a():\n    x = 1\n    return x\n\n\nclass K:\n    def n(self):\n        return 3\n\n\ndef b():\n    pass\n\n\ndef c():\n    return b()",
]


def _versions_in_git(git_repo) -> tuple[Path, list]:
    from nexusd.history import git as git_source

    root, git = git_repo
    for i, data in enumerate(VERSIONS):
        (root / "m.py").write_bytes(data)
        git("add", "m.py")
        git("commit", "-q", "-m", f"v{i}")
    return root, [c for c in git_source.read_commits(root, None, 100, 100) if c.parents]


def test_an_older_version_parsed_incrementally_from_the_newer_tree_names_what_a_fresh_parse_names(git_repo) -> None:
    root, commits = _versions_in_git(git_repo)
    assert len(commits) == 3
    with symbols_at.BlobReader(root) as reader:
        for c in commits:  # newest first, as a sync reads them
            (ch,) = c.changes
            trees = symbols_at.Trees()
            new_oid, new_data = reader.get(f"{c.sha}:m.py") or ("", b"")
            new = symbols_at.Side("m.py", trees.ranges(f"{new_oid}:python", "m.py", new_data, None), new_data, f"{new_oid}:python")
            old_oid, old_data = reader.get(f"{c.parents[0]}:m.py") or ("", b"")
            assert trees._edited("python", old_data, (new, ch.hunks)) is not None, ch.hunks  # the hunks were usable
            got = trees.ranges(f"{old_oid}:python", "m.py", old_data, (new, ch.hunks))
            assert got == symbols_at.definitions("m.py", old_data) != []


def test_hunks_that_do_not_turn_the_newer_bytes_into_the_older_mean_a_fresh_parse(git_repo) -> None:
    root, commits = _versions_in_git(git_repo)
    c = commits[0]
    with symbols_at.BlobReader(root) as reader:
        new_oid, new_data = reader.get(f"{c.sha}:m.py") or ("", b"")
        old_oid, old_data = reader.get(f"{c.parents[0]}:m.py") or ("", b"")
    trees = symbols_at.Trees()
    new = symbols_at.Side("m.py", trees.ranges(f"{new_oid}:python", "m.py", new_data, None), new_data, f"{new_oid}:python")
    wrong = [(h[0] + 1, h[1], h[2] + 1, h[3]) for h in c.changes[0].hunks]
    assert trees._edited("python", old_data, (new, wrong)) is None
    assert trees.ranges(f"{old_oid}:python", "m.py", old_data, (new, wrong)) == symbols_at.definitions("m.py", old_data)


def test_a_sync_names_the_same_symbols_with_and_without_incremental_parses(git_repo, monkeypatch) -> None:
    root, commits = _versions_in_git(git_repo)
    with_trees = symbols_at.name_changes(root, commits)
    monkeypatch.setattr(symbols_at, "CACHE_TREES", 0)
    assert with_trees == symbols_at.name_changes(root, commits)


def test_prefetched_blobs_are_the_blobs_of_each_commit_in_plan_order(git_repo) -> None:
    root, commits = _versions_in_git(git_repo)
    plan = [[f"{c.sha}:m.py", f"{c.parents[0]}:m.py"] for c in commits]
    with symbols_at.BlobReader(root) as direct, symbols_at.Prefetch(root, plan) as ahead:
        for specs in plan:
            ahead.next()
            for spec in [*specs, f"{commits[-1].parents[0]}:m.py", "HEAD:absent.py"]:  # in and outside the plan
                assert ahead.get(spec) == direct.get(spec)
