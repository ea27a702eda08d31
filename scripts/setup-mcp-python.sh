#!/usr/bin/env bash
# Installs the official MCP Python SDK (pinned in
# crates/concierge/tests/mcp_python/requirements.txt) into a virtual
# environment under $CONCIERGE_CACHE, for the ignored tests that run a Python
# MCP server whose tool asks the person mid-call (elicitation) and the one
# that drives concierge's MCP server with the Python client. Prints nothing
# on stdout; says where the venv is on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/python-venv.sh mcp-python crates/concierge/tests/mcp_python/requirements.txt "Python MCP SDK"
