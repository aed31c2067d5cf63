#!/usr/bin/env bash
# The test command: installs what the tests need into .venv (from scratch on a fresh machine), then runs
# the linter, the type checker, the layer rules and the test suite against a real daemon and a real Kuzu database.
# Extra arguments go to pytest (e.g. `scripts/test.sh -m slow` for the long reliability trials).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]'
# The prompt-hook tests source the hook in a real bash and, when it is installed, zsh; this script installs
# nothing outside .venv (.ci/run installs zsh on CI machines).
if ! command -v zsh >/dev/null 2>&1; then
  echo "note: zsh is not installed, so the zsh prompt-hook tests are skipped (install zsh to run them)"
fi
echo "== ruff"
.venv/bin/ruff check nexusd client tests bench
echo "== mypy"
.venv/bin/mypy
echo "== import-linter (the layer rules in .importlinter)"
.venv/bin/lint-imports --no-cache --no-logo
echo "== pytest"
.venv/bin/python -m pytest -m "not slow" "$@"
