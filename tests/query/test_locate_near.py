"""`locate` with the asker's context (`near`, `nearLine`), through a real daemon: same-named definitions are
ranked by their relation to the file being edited, and a path outside the repository is refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nexusd.errors import BadRequest
from tests.helpers import DaemonProcess, make_repo
from tests.query.conftest import Q

FILES = {
    "a/__init__.py": "from .models import Model\n",
    "a/models.py": "class Model:\n    def save(self):\n        return 1\n",
    "a/use.py": "from a.models import Model\n\n\ndef make():\n    return Model()\n",
    "b/models.py": "class Model:\n    def save(self):\n        return 2\n\n\ndef one():\n    return Model()\n",
    "b/more.py": "def two():\n    return 2\n",
    "c/client.py": "from a import Model\n\n\ndef build():\n    return Model().save()\n",
    "c/special.py": (
        "from a.models import Model\n\n\n"
        "class Special(Model):\n"  # 4
        "    def save(self):\n"  # 5
        "        return super().save()\n"  # 6
    ),
    "d/mix.py": (
        "from a.models import Model as A\n"
        "from b.models import Model as B\n\n\n"
        "def go():\n"
        "    A().save()\n"  # 6
        "    return B().save()\n"  # 7
    ),
    "tests/test_local.py": (
        "def test_first():\n"  # 1
        "    class Model:\n"  # 2
        "        pass\n"  # 3
        "    made = Model\n"  # 4: no call on this line
        "    return made()\n"  # 5
        "\n\n"
        "def test_second():\n"  # 8
        "    class Model:\n"  # 9
        "        def save(self):\n"  # 10
        "            return self\n"  # 11
        "    made = Model\n"  # 12
        "    return made().save()\n"  # 13
    ),
}


@pytest.fixture(scope="module")
def n(daemon: DaemonProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Q]:
    repo = make_repo(tmp_path_factory.mktemp("near") / "demo", FILES)
    client = daemon.client()
    qq = Q(client, repo, daemon)
    qq.index()
    yield qq
    client.close()


def _first(r: dict[str, object]) -> tuple[str, int, str | None]:
    x = r["results"][0]  # type: ignore[index]
    return x["path"], x["line"], x.get("relation")


def test_without_context_the_order_is_unchanged_and_names_no_relation(n: Q) -> None:
    r = n.op("locate", query="Model")
    assert "near" not in r and all("relation" not in x for x in r["results"])
    # module and class level definitions before the ones local to a test function; the most called first
    assert [x["path"] for x in r["results"]][:3] in (["a/models.py", "b/models.py", "tests/test_local.py"],
                                                    ["b/models.py", "a/models.py", "tests/test_local.py"])  # fmt: skip


def test_the_line_picks_the_definition_in_scope_there(n: Q) -> None:
    assert _first(n.op("locate", query="Model", near="tests/test_local.py", nearLine=4)) == (
        "tests/test_local.py", 2, "in-scope")
    assert _first(n.op("locate", query="Model", near="tests/test_local.py", nearLine=12)) == (
        "tests/test_local.py", 9, "in-scope")
    # a method of the class in scope beats every other `save`
    assert _first(n.op("locate", query="save", near="tests/test_local.py", nearLine=12)) == (
        "tests/test_local.py", 10, "in-scope")
    r = n.op("locate", query="Model", near="tests/test_local.py", nearLine=12)
    assert r["near"] == {"path": "tests/test_local.py", "inGraph": True, "line": 12}
    # the other test's local class is not in scope there, but in the same file: before the other files' ones
    exact = [(x["path"], x["line"], x.get("relation")) for x in r["results"] if x["match"] == "exact"]
    assert exact[1] == ("tests/test_local.py", 2, "same-file") and {p for p, _, _ in exact[2:]} == {"a/models.py", "b/models.py"}
    # from a line of a file that imports a/models.py and defines no Model: the imported one, then the others
    r = n.op("locate", query="Model", near="a/use.py", nearLine=4)
    assert [(x["path"], x.get("relation")) for x in r["results"][:2]] == [("a/models.py", "imported"), ("b/models.py", None)]


def test_imported_files_come_first_directly_or_through_a_package(n: Q) -> None:
    r = n.op("locate", query="Model", near="a/use.py")
    assert _first(r) == ("a/models.py", 1, "imported") and r["results"][0]["importHops"] == 1
    # c/client.py imports the package `a`, whose __init__ imports a/models.py: two hops
    r = n.op("locate", query="Model", near="c/client.py")
    assert _first(r) == ("a/models.py", 1, "imported") and r["results"][0]["importHops"] == 2
    # the same file first: b/models.py defines its own Model
    assert _first(n.op("locate", query="Model", near="b/models.py")) == ("b/models.py", 1, "same-file")


def test_inside_a_method_the_bases_members_come_before_the_method_itself(n: Q) -> None:
    r = n.op("locate", query="save", near="c/special.py", nearLine=5)
    rows = [(x["path"], x["line"], x.get("relation")) for x in r["results"]]
    assert rows[0] == ("a/models.py", 2, "inherited"), rows
    assert rows[1] == ("c/special.py", 5, "enclosing")
    # without the line the same file comes first
    assert _first(n.op("locate", query="save", near="c/special.py")) == ("c/special.py", 5, "same-file")


def test_at_a_call_the_definition_the_graph_binds_it_to_comes_first(n: Q) -> None:
    # both Model files are imported by d/mix.py, one hop each: only the call at the line tells them apart
    assert _first(n.op("locate", query="save", near="d/mix.py", nearLine=6)) == ("a/models.py", 2, "called-here")
    assert _first(n.op("locate", query="save", near="d/mix.py", nearLine=7)) == ("b/models.py", 2, "called-here")


def test_a_module_is_related_as_its_file_and_never_in_scope(n: Q) -> None:
    r = n.op("locate", query="models", near="a/models.py", nearLine=2)
    assert [x["kind"] for x in r["results"]][:2] == ["module", "module"]
    assert all(x.get("relation") != "in-scope" for x in r["results"])


def test_a_file_not_in_the_graph_ranks_by_directory(n: Q) -> None:
    r = n.op("locate", query="Model", near="b/new_file.py")
    assert r["near"] == {"path": "b/new_file.py", "inGraph": False}
    assert _first(r) == ("b/models.py", 1, "same-directory")
    # paths are confined like every other path argument: `..` inside the repository is fine
    assert _first(n.op("locate", query="Model", near="a/../b/more.py")) == ("b/models.py", 1, "same-directory")


@pytest.mark.parametrize("args", [
    {"near": "../outside.py"},
    {"near": "/etc/passwd"},
    {"near": "."},
    {"near": "a"},  # a directory
    {"near": "a/\x00.py"},
    {"nearLine": 3},
])  # fmt: skip
def test_a_context_outside_the_repository_or_a_line_without_a_file_is_a_bad_request(n: Q, args: dict[str, object]) -> None:
    with pytest.raises(BadRequest):
        n.op("locate", query="Model", **args)


def test_a_symlink_out_of_the_repository_is_a_bad_request(n: Q) -> None:
    link = n.repo / "escape"
    link.symlink_to("/etc", target_is_directory=True)
    try:
        with pytest.raises(BadRequest, match="outside the repository"):
            n.op("locate", query="Model", near="escape/passwd")
    finally:
        link.unlink()


def test_pages_keep_the_context(n: Q) -> None:
    whole = n.op("locate", query="Model", near="tests/test_local.py", nearLine=12, limit=50)["results"]
    first = n.op("locate", query="Model", near="tests/test_local.py", nearLine=12, limit=2)
    rest = n.op("locate", query="Model", near="tests/test_local.py", nearLine=12, limit=50,
                cursor=first["truncated"]["cursor"])  # fmt: skip
    assert [x["id"] for x in first["results"] + rest["results"]] == [x["id"] for x in whole]


def test_cli_near_takes_a_path_relative_to_the_working_directory(n: Q) -> None:
    r = n.daemon.cli("-C", str(n.repo / "tests"), "locate", "Model", "--near", "test_local.py", "--near-line", "12")
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert "tests/test_local.py:9" in first and "[in-scope]" in first
    r = n.daemon.cli("-C", str(n.repo), "locate", "Model", "--near", "c/client.py")
    assert r.returncode == 0, r.stderr
    assert "a/models.py:1" in r.stdout.splitlines()[0] and "[imported, 2 hops]" in r.stdout
    r = n.daemon.cli("-C", str(n.repo), "locate", "Model", "--near", "/etc/passwd")
    assert r.returncode == 2 and "outside the repository" in r.stderr


@pytest.mark.parametrize("signature, bases", [
    ("class Special(Model)", ["Model"]),
    ("class A(b.Base, Generic[T], metaclass=Meta)", ["Base", "Generic"]),
    ("class A", []),
    ("export class AsyncSubject<T> extends Subject<T>", ["Subject"]),
    ("export class A<T extends Map<K, V>> extends ns.Base<T> implements I, J<T> {", ["Base", "I", "J"]),
    ("def f(x, y)", ["x", "y"]),  # not a class: the caller asks only for classes' signatures
])  # fmt: skip
def test_base_names_are_read_from_a_class_signature(signature: str, bases: list[str]) -> None:
    from nexusd.query.locate import base_names

    assert base_names(signature) == bases
