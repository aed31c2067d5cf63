"""A full-text index no query uses is dropped from existing databases; turns are still written and read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO_ROOT, DaemonProcess

OLD = r"""
import sys
from pathlib import Path
from nexusd.store import Store
s = Store(Path(sys.argv[1]))
s.ensure_schema()
s._admin.execute("CALL CREATE_FTS_INDEX('Turn', 'turn_fts', ['searchText'], stemmer := 'porter')")
s.checkpoint()
s.close()
"""

INDEXES = r"""
import sys
from pathlib import Path
from nexusd.store import Store
s = Store(Path(sys.argv[1]))
s.ensure_schema()
print(sorted(r[1] for r in s._admin.rows("CALL SHOW_INDEXES() RETURN *")))
print(s._admin.scalar("MATCH (t:Turn) RETURN count(t)"))
s.close()
"""


def _run(code: str, db: Path) -> str:
    out = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_unused_fts_index_is_dropped_and_turns_still_work(tmp_path: Path) -> None:
    d = DaemonProcess()
    db = d.dirs.db
    db.parent.mkdir(parents=True, exist_ok=True)
    _run(OLD, db)
    d.start()
    try:
        with d.client() as c:
            repo = tmp_path / "r"
            repo.mkdir()
            (repo / "a.py").write_text("def f():\n    return 1\n")
            c.request("index", {"repo": str(repo)}, timeout=120)
            sid = c.request("session.start", {"repo": str(repo), "title": "t"})["session"]
            for i in (1, 2):
                turn = c.request("turn", {"repo": str(repo), "session": sid, "role": "user", "text": f"turn {i}"})
                assert turn["ordinal"] == i and turn["created"]
        d.stop()
        indexes, turns = _run(INDEXES, db).splitlines()
        assert "turn_fts" not in indexes
        assert "fact_fts" in indexes and "history_fts" in indexes
        assert turns == "2"
    finally:
        d.cleanup()
