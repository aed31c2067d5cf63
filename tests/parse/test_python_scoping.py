"""Python binding rules that used to bind calls wrongly: bare decorators, function-scoped imports, recursion,
`from . import a` in a package's __init__, and the absolute-import rule against sibling modules."""

from __future__ import annotations

from pathlib import Path

from tests.parse.test_resolve import Repo


def test_a_bare_decorator_is_a_call_of_its_name(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {
        "cli/deco.py": "def pass_obj(f):\n    return f\n\n\nclass Group:\n    def command(self, f):\n        return f\n",
        "cli/main.py": (
            "from cli.deco import pass_obj, Group\n\n"
            "grp = Group()\n\n\n"
            "@pass_obj\n"
            "def show():\n    pass\n\n\n"
            "@grp.command\n"
            "def run():\n    pass\n\n\n"
            "class K:\n"
            "    @staticmethod\n"  # a builtin: dropped, as print() is
            "    def s():\n        pass\n"
        ),
    })  # fmt: skip
    calls = repo.calls("cli/main.py")
    assert {(src, dst) for src, dst, _ in calls} == {
        ("grp", "py:class:cli/deco.py:Group"),
        ("<module>", "py:function:cli/deco.py:pass_obj"),
        ("<module>", "py:method:cli/deco.py:Group.command"),
    }
    # by name only here (grp's type is not inferred by this step); a typed route may bind it instead
    assert {res for src, dst, res in calls if dst.endswith("Group.command")} <= {"name-only", "inferred"}
    assert repo.unresolved("cli/main.py") == []


def test_a_function_scoped_import_shadows_the_module_level_def(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/impl.py": "def helper():\n    return 1\n",
        "pkg/api.py": (
            "def helper():\n"
            "    from pkg.impl import helper\n"
            "    return helper()\n\n\n"
            "def other():\n"
            "    return helper()\n"  # no local import here: the module-level def
        ),
    })  # fmt: skip
    assert repo.calls("pkg/api.py") == {
        ("helper", "py:function:pkg/impl.py:helper", "import-bound"),
        ("other", "py:function:pkg/api.py:helper", "same-scope"),
    }


def test_a_recursive_call_is_an_edge(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {"m.py": "def fact(n):\n    return n and n * fact(n - 1)\n"})
    assert repo.calls("m.py") == {("fact", "py:function:m.py:fact", "same-scope")}


def test_from_dot_import_in_a_package_init_imports_the_submodules(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {
        "pkg/__init__.py": "from . import a, b\nfrom .c import f\n",
        "pkg/a.py": "def x():\n    pass\n",
        "pkg/b.py": "",
        "pkg/c.py": "def f():\n    pass\n",
        "use.py": "import pkg\n\n\ndef go():\n    pkg.a.x()\n",
    })  # fmt: skip
    assert repo.imports("pkg/__init__.py") == {
        ("pkg/a.py", "import-bound"), ("pkg/b.py", "import-bound"), ("pkg/c.py", "import-bound"),
    }  # fmt: skip
    assert repo.calls("use.py") == {("go", "py:function:pkg/a.py:x", "qualified")}



def test_from_pkg_import_a_submodule_the_init_imports_is_that_submodule(tmp_path: Path) -> None:
    # pkg/__init__.py binds `fields` by `from . import fields`: `from pkg import fields` elsewhere still imports
    # pkg/fields.py (not pkg/__init__.py), as it does when the init does not mention it
    repo = Repo(tmp_path, {
        "pkg/__init__.py": "from . import fields\nfrom .schema import Schema\n",
        "pkg/fields.py": "class Field:\n    pass\n",
        "pkg/schema.py": "class Schema:\n    pass\n",
        "pkg/other.py": "from . import fields\n\n\ndef make():\n    return fields.Field()\n",
        "tests/test_x.py": "from pkg import Schema, fields\n\n\ndef test():\n    return fields.Field(), Schema()\n",
    })  # fmt: skip
    assert repo.imports("pkg/other.py") == {("pkg/fields.py", "import-bound")}
    assert repo.imports("tests/test_x.py") == {("pkg/__init__.py", "import-bound"), ("pkg/fields.py", "import-bound")}
    assert repo.calls("pkg/other.py") == {("make", "py:class:pkg/fields.py:Field", "constructor")}


def test_absolute_imports_do_not_see_siblings_inside_a_package(tmp_path: Path) -> None:
    repo = Repo(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/types.py": "def MappingProxyType():\n    pass\n",
        "pkg/core.py": "from types import MappingProxyType\n\n\ndef use():\n    return MappingProxyType({})\n",
        "scripts/types.py": "def helper():\n    pass\n",
        "scripts/run.py": "from types import helper\n\n\ndef main():\n    helper()\n",  # a script: its folder is on sys.path
    })  # fmt: skip
    assert repo.imports("pkg/core.py") == set()
    assert repo.calls("pkg/core.py") == set()
    assert repo.unresolved("pkg/core.py") == ["MappingProxyType"]  # the standard library's: external, counted
    assert repo.imports("scripts/run.py") == {("scripts/types.py", "import-bound")}
    assert repo.calls("scripts/run.py") == {("main", "py:function:scripts/types.py:helper", "import-bound")}
