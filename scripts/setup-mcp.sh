#!/usr/bin/env bash
# Installs the MCP servers the tests and demos run, from npm, into the
# repository's node_modules (ignored by git; pinned by package-lock.json).
# Afterwards they run offline.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
  echo "installing nodejs and npm from Debian..." >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
if [ ! -f node_modules/@modelcontextprotocol/server-everything/dist/index.js ] \
  || [ ! -f node_modules/@modelcontextprotocol/server-memory/dist/index.js ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
echo "MCP test servers ready: node node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio" >&2
echo "                        node node_modules/@modelcontextprotocol/server-memory/dist/index.js" >&2
