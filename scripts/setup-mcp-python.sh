#!/usr/bin/env bash
# Installs the Python MCP SDK (pinned in
# crates/concierge/tests/mcp_python/requirements.txt) into a virtual
# environment under $CONCIERGE_CACHE, for the ignored tests that run a Python
# MCP server whose tool asks the person mid-call (elicitation). Prints nothing
# on stdout; says where the venv is on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/python-venv.sh mcp-python crates/concierge/tests/mcp_python/requirements.txt "Python MCP SDK"
