#!/usr/bin/env bash
# Makes (or brings up to date) a virtual environment under $CONCIERGE_CACHE
# with a pinned requirements file installed: `scripts/python-venv.sh NAME
# REQUIREMENTS LABEL` makes $CONCIERGE_CACHE/venv-NAME, installs
# REQUIREMENTS again only when the file changed, installs Debian's
# python3-venv if Python lacks it, and says on stderr "LABEL ready: <python>".
# The setup-*.sh scripts of the tests' Python clients and servers call it.
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1 requirements=$2 label=$3
cache=${CONCIERGE_CACHE:-$HOME/.cache/concierge}
venv="$cache/venv-$name"
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
echo "$label ready: $venv/bin/python" >&2
