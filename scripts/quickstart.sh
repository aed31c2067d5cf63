#!/usr/bin/env bash
# One command from a fresh clone to an answer: install NEXUS into .venv, start the daemon (embedded Kuzu,
# no server to set up), index a repository (default: this one) and ask the graph a question about it.
#   scripts/quickstart.sh [REPO_PATH [SYMBOL]]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
REPO=$(cd "${1:-$PWD}" && pwd)
SYMBOL=${2:-}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e .
NEXUS=.venv/bin/nexus
echo "== starting the daemon"
$NEXUS daemon start
echo "== indexing $REPO"
$NEXUS index "$REPO"
echo "== status"
$NEXUS -C "$REPO" status
if [ -z "$SYMBOL" ] && [ "$REPO" = "$PWD" ]; then
  SYMBOL=run_sync
fi
if [ -n "$SYMBOL" ]; then
  echo "== who calls $SYMBOL within 3 hops, and how sure are we?"
  $NEXUS -C "$REPO" impact "$SYMBOL"
  echo "== its neighbourhood"
  $NEXUS -C "$REPO" context "$SYMBOL" --budget 600
else
  echo "== where is main?"
  $NEXUS -C "$REPO" locate main --limit 5
fi
NEXUS_ABS=$(cd .venv/bin && pwd)/nexus
echo
echo "nexus is installed at $NEXUS_ABS (the daemon keeps running and follows your edits)."
if ! command -v nexus >/dev/null 2>&1; then
  echo "It is not on your PATH. Either call it by that path, or install it for your user:"
  echo "  pipx install $PWD      # or: uv tool install $PWD"
fi
echo "Let Claude Code call the NEXUS tools (Cursor, VS Code, OpenCode: --client cursor|vscode|opencode):"
echo "  $NEXUS_ABS mcp install --client claude-code"
