#!/usr/bin/env bash
# Installs the official MCP Python SDK (PyPI `mcp`, pinned in
# crates/concierge-server/tests/mcp_python/requirements.txt) into a virtual
# environment under $CONCIERGE_CACHE, for the ignored test that drives
# concierge's MCP server (elicitation, progress) with its client. Prints
# nothing but its last line when all is installed already.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${CONCIERGE_CACHE:-$HOME/.cache/concierge}
venv="$cache/venv-mcp-client"
requirements=crates/concierge-server/tests/mcp_python/requirements.txt
if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -m venv "$venv" 2>/dev/null; then
    echo "installing python3-venv from Debian..." >&2
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    rm -rf "$venv"
    python3 -m venv "$venv"
  fi
fi
if ! cmp -s "$requirements" "$venv/requirements.txt"; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$venv/requirements.txt"
fi
echo "MCP Python client ready: $venv/bin/python" >&2
