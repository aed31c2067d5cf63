from tests.history_ingest.conftest import daemon, new_repo  # noqa: F401  (the same real daemon and git repos)
