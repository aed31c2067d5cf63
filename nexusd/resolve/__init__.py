"""Resolution: a repository's FileFacts -> IMPORTS and POSSIBLY_CALLS edges with provenance.

Entry point: `RepoIndex` (base.py). Rules per language live in one module per language family (python.py,
typescript.py, go.py, ...), named by the language records (parse/languages.py) and loaded by registry.py; the
language-neutral order of call resolution and its confidences are documented in calls.py.
"""

from nexusd.resolve.base import CallEdge, FileResolution, ImportEdge, RepoIndex

__all__ = ["CallEdge", "FileResolution", "ImportEdge", "RepoIndex"]
