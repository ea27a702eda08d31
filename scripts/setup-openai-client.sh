#!/usr/bin/env bash
# Installs the official OpenAI Python client (pinned in
# crates/concierge-server/tests/openai_client/requirements.txt) into a virtual
# environment under $CONCIERGE_CACHE, for the test that talks to
# `concierge serve` with it. Prints nothing when all is installed already.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/python-venv.sh openai crates/concierge-server/tests/openai_client/requirements.txt "OpenAI Python client"
