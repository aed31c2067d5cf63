"""The memory layer: sessions, turns, facts, procedures and handoffs, per user and repository, durable.

    journal.py   append-only JSONL, fsynced before a write is acknowledged; replayed into a fresh graph
    model.py     content-addressed ids, journal records -> idempotent graph writes, links from properties
    text.py      identifier-aware tokens (camelCase/snake_case split), searchText, the token estimate
    index.py     the in-daemon BM25 index recall searches (why not Kuzu FTS: see its docstring)
    attach.py    facts about symbols: resolve --about, current/stale/moved/renamed/orphaned
    service.py   the write path (journal -> transaction -> index), start-up replay, usage flushes

For the code-layer ops: `memory_for_symbol` lists a symbol's facts for `show`/`context`; `relink` restores
ABOUT/APPLIES_TO/SCOPES edges of a repository after its code graph was rebuilt.
"""

from .attach import memory_for_symbol
from .model import relink

__all__ = ["memory_for_symbol", "relink"]
