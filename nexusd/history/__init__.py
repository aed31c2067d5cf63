"""The history layer's pure sources: commits, docs, shell commands and transcripts as facts.

Nothing here knows Kuzu, ZeroMQ or msgpack: each module turns one kind of machine history into the plain
dataclasses of `facts.py`, redacted (`redact.py`) and with content-addressed ids, and the ingest layer stores
them. Code map: facts (data), redact (secrets, deny-list), git (commits), docs (Markdown/RST sections),
shell (prompt hook, spool, history scraping), transcripts (assistant sessions).
"""
