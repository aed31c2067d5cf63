#!/usr/bin/env bash
# The test command: installs what the tests need into .venv (from scratch on a fresh machine), then runs
# the linter, the type checker and the test suite against a real daemon and a real Kuzu database.
# Extra arguments go to pytest (e.g. `scripts/test.sh -m slow` for the long reliability trials).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]'
# Shells the prompt-hook tests source the hook in (a real bash and zsh).
if ! command -v zsh >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && apt-get install -y -qq zsh) >/dev/null 2>&1 || echo "note: zsh could not be installed; zsh hook tests will skip"
fi
echo "== ruff"
.venv/bin/ruff check nexusd client tests bench
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
.venv/bin/python -m pytest -m "not slow" "$@"
