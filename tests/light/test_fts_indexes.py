"""The full-text indexes an older schema made are dropped from an existing database at its first open, and what
they served still works: `query` finds facts (through the memory index recall uses), turns are written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO_ROOT, DaemonProcess

# The full-text indexes earlier schemas made (Turn's was dropped one schema before the others).
OLD = r"""
import sys
from pathlib import Path
from nexusd.store import Store
s = Store(Path(sys.argv[1]))
s.ensure_schema()
s._admin.ensure_table("Fact")  # (an older database always had memory's tables)
for table, index in (("Fact", "fact_fts"), ("Procedure", "procedure_fts"), ("Handoff", "handoff_fts"),
                     ("HistoryText", "history_fts"), ("Turn", "turn_fts")):
    s._admin.execute(f"CALL CREATE_FTS_INDEX('{table}', '{index}', ['searchText'], stemmer := 'porter')")
print(sorted(r[1] for r in s._admin.rows("CALL SHOW_INDEXES() RETURN *")))
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


def test_older_full_text_indexes_are_dropped_and_what_they_served_works(tmp_path: Path) -> None:
    d = DaemonProcess()
    db = d.dirs.db
    db.parent.mkdir(parents=True, exist_ok=True)
    made = _run(OLD, db)
    assert "fact_fts" in made and "history_fts" in made and "turn_fts" in made  # (else this tests nothing)
    d.start()
    try:
        with d.client() as c:
            repo = tmp_path / "r"
            repo.mkdir()
            (repo / "a.py").write_text("def f():\n    return 1\n")
            c.request("index", {"repo": str(repo)}, timeout=120)
            c.request("remember", {"repo": str(repo), "text": "the staging deploy needs the VPN turned on first"})
            c.request("remember", {"repo": str(repo), "text": "tests run with pytest -x"})
            hits = c.request("query", {"repo": str(repo), "text": "how do I deploy to staging?"})["results"]
            assert hits and hits[0]["kind"] == "fact" and "VPN" in hits[0]["text"], hits
            assert not [h for h in hits if "pytest" in h["text"]], hits
            sid = c.request("session.start", {"repo": str(repo), "title": "t"})["session"]
            for i in (1, 2):
                turn = c.request("turn", {"repo": str(repo), "session": sid, "role": "user", "text": f"turn {i}"})
                assert turn["ordinal"] == i and turn["created"]
        d.stop()
        indexes, turns = _run(INDEXES, db).splitlines()
        assert indexes == "[]"
        assert turns == "2"
    finally:
        d.cleanup()
