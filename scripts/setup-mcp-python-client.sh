#!/usr/bin/env bash
# Installs the official MCP Python SDK (PyPI `mcp`, pinned in
# crates/concierge-server/tests/mcp_python/requirements.txt) into a virtual
# environment under $CONCIERGE_CACHE, for the ignored test that drives
# concierge's MCP server (elicitation, progress) with its client. Prints
# nothing but its last line when all is installed already.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/python-venv.sh mcp-client crates/concierge-server/tests/mcp_python/requirements.txt "MCP Python client"
