#!/usr/bin/env bash
# Installs the MCP servers the tests and demos run, and the official MCP
# Inspector (its CLI drives our own servers in tests), from npm, into the
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
  || [ ! -f node_modules/@modelcontextprotocol/server-memory/dist/index.js ] \
  || [ ! -f node_modules/@modelcontextprotocol/inspector/package.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
echo "MCP test servers ready: node node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio" >&2
echo "                        node node_modules/@modelcontextprotocol/server-memory/dist/index.js" >&2
echo "MCP Inspector CLI ready:  npx @modelcontextprotocol/inspector --cli <server command> --method tools/list" >&2
