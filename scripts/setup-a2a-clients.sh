#!/usr/bin/env bash
# Installs the official A2A clients the A2A endpoint's ignored tests drive
# against a real `concierge serve`: the Python SDK (PyPI a2a-sdk, pinned in
# crates/concierge-server/tests/a2a_client/requirements.txt) into a virtual
# environment under $CONCIERGE_CACHE, and @a2a-js/sdk (npm, pinned by that
# folder's package-lock.json) into its node_modules. Prints nothing new when
# all is installed already.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${CONCIERGE_CACHE:-$HOME/.cache/concierge}
venv="$cache/venv-a2a"
folder=crates/concierge-server/tests/a2a_client
requirements=$folder/requirements.txt
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -m venv "$venv" 2>/dev/null; then
    echo "installing python3-venv from Debian..." >&2
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
echo "A2A Python client ready: $venv/bin/python" >&2
if ! command -v npm >/dev/null 2>&1; then
  echo "installing nodejs and npm from Debian..." >&2
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
if [ ! -f "$folder/node_modules/@a2a-js/sdk/package.json" ]; then
  (cd "$folder" && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "A2A JS client ready: $(cd "$folder" && node -p 'require("./node_modules/@a2a-js/sdk/package.json").version')" >&2
