"""Receiver typing across files stays right through incremental sync (real daemon, real git repository):
a call typed by another file's return annotation moves when that annotation is edited, also when the
type reaches the caller through a third file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.code.conftest import Graph
from tests.helpers import DaemonProcess, make_repo

FILES = {
    "models.py": "class A:\n    def go(self):\n        pass\n\n\nclass B:\n    def go(self):\n        pass\n",
    "helpers.py": "from models import A, B\n\n\ndef helper() -> A:\n    return A()\n",
    "factory.py": "from models import A, B\nfrom helpers import helper\n\n\ndef make() -> A:\n    return A()\n\n\ndef indirect():\n    return helper()\n",
    "app.py": "from factory import make, indirect\n\n\ndef main():\n    make().go()\n\n\ndef other():\n    x = indirect()\n    x.go()\n",
}


@pytest.fixture
def g(graph_daemon: DaemonProcess, tmp_path: Path) -> Graph:
    return Graph(graph_daemon.client(), make_repo(tmp_path / "typed", FILES))


def typed(g: Graph) -> set[tuple[str, str]]:
    return {(a, b) for a, b, res in g.calls() if res == "inferred"}


def test_editing_a_return_annotation_moves_typed_calls_in_other_files(g: Graph) -> None:
    g.index()
    assert typed(g) == {
        ("py:function:app.py:main", "py:method:models.py:A.go"),
        ("py:function:app.py:other", "py:method:models.py:A.go"),
    }
    factory = g.repo / "factory.py"
    factory.write_text(factory.read_text().replace("def make() -> A:", "def make() -> B:"))
    g.sync()
    assert typed(g) == {
        ("py:function:app.py:main", "py:method:models.py:B.go"),
        ("py:function:app.py:other", "py:method:models.py:A.go"),
    }
    # app.py -> factory.indirect -> helpers.helper: app.py never names `helper`, yet its edge follows
    helpers = g.repo / "helpers.py"
    helpers.write_text(helpers.read_text().replace("def helper() -> A:\n    return A()", "def helper() -> B:\n    return B()"))
    g.sync()
    assert typed(g) == {
        ("py:function:app.py:main", "py:method:models.py:B.go"),
        ("py:function:app.py:other", "py:method:models.py:B.go"),
    }
