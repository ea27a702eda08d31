#!/usr/bin/env bash
# Installs the official A2A clients the A2A endpoint's ignored tests drive
# against a real `concierge serve`: the Python SDK (PyPI a2a-sdk, pinned in
# crates/concierge-server/tests/a2a_client/requirements.txt) into a virtual
# environment under $CONCIERGE_CACHE, and @a2a-js/sdk (npm, pinned by that
# folder's package-lock.json) into its node_modules. Prints nothing new when
# all is installed already.
set -euo pipefail
cd "$(dirname "$0")/.."
folder=crates/concierge-server/tests/a2a_client
scripts/python-venv.sh a2a "$folder/requirements.txt" "A2A Python client"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
if ! command -v npm >/dev/null 2>&1; then
  echo "installing nodejs and npm from Debian..." >&2
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
if [ ! -f "$folder/node_modules/@a2a-js/sdk/package.json" ]; then
  (cd "$folder" && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "A2A JS client ready: $(cd "$folder" && node -p 'require("./node_modules/@a2a-js/sdk/package.json").version')" >&2
