#!/usr/bin/env bash
# Installs the official OpenAI Python client (pinned in
# crates/concierge-server/tests/openai_client/requirements.txt) into a virtual
# environment under $CONCIERGE_CACHE, for the test that talks to
# `concierge serve` with it. Prints nothing when all is installed already.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${CONCIERGE_CACHE:-$HOME/.cache/concierge}
venv="$cache/venv-openai"
requirements=crates/concierge-server/tests/openai_client/requirements.txt
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
echo "OpenAI Python client ready: $venv/bin/python" >&2
