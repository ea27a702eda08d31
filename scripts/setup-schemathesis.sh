#!/usr/bin/env bash
# Installs Schemathesis (PyPI, pinned) into a venv under $CONCIERGE_CACHE
# (default ~/.cache/concierge), outside the clone; later runs take a second.
# Prints the path of its `schemathesis` command.
set -euo pipefail
CACHE=${CONCIERGE_CACHE:-$HOME/.cache/concierge}
VENV=$CACHE/schemathesis-venv
VERSION=4.32.5
mkdir -p "$CACHE"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null)" != "$VERSION" ]; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION" >&2
fi
echo "$VENV/bin/schemathesis"
