#!/usr/bin/env bash
# One command from a fresh clone to an answer: install NEXUS into .venv, start the daemon (embedded Kuzu,
# no server to set up), index a repository (default: this one) and ask the graph a question about it.
#   scripts/quickstart.sh [REPO_PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
REPO=${1:-$PWD}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e .
NEXUS=.venv/bin/nexus
echo "== starting the daemon"
$NEXUS daemon start
echo "== status"
$NEXUS -C "$REPO" status
