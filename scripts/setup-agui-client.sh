#!/usr/bin/env bash
# Installs the official AG-UI client (@ag-ui/client, from npm) that the AG-UI
# endpoint's test drives against a real `concierge serve`, into
# crates/concierge-server/tests/agui_client/node_modules (ignored by git;
# pinned by that folder's package-lock.json). Afterwards it runs offline:
#   AGUI_URL=http://127.0.0.1:PORT AGUI_CRM_URL=http://127.0.0.1:PORT2 \
#     node --test crates/concierge-server/tests/agui_client/run.mjs
# (the ignored test `agui_client` of concierge-cli starts both servers).
set -euo pipefail
cd "$(dirname "$0")/../crates/concierge-server/tests/agui_client"
if ! command -v npm >/dev/null 2>&1; then
  echo "installing nodejs and npm from Debian..." >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
if [ ! -f node_modules/@ag-ui/client/package.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
echo "AG-UI client ready: $(node -p 'require("./node_modules/@ag-ui/client/package.json").version')" >&2
