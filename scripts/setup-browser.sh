#!/usr/bin/env bash
# Installs what the web chat's browser tests need: Debian's chromium (apt)
# and playwright-core (npm, pinned by the test package's package-lock.json,
# under crates/concierge-server/tests/browser/node_modules, ignored by git).
# Playwright drives the system chromium; it downloads no browser of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
# Only what is missing: a machine's Node.js may come from elsewhere
# (NodeSource's nodejs ships npm), and Debian's npm package conflicts with it.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} from Debian..." >&2
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "the browser tests need Node.js 20 or later (playwright-core); this is $(node --version)" >&2
  exit 1
fi
tests=crates/concierge-server/tests/browser
if [ ! -f "$tests/node_modules/playwright-core/package.json" ]; then
  (cd "$tests" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
echo "browser tests ready: $(chromium --version 2>/dev/null || echo chromium), playwright-core $(node -p "require('./$tests/node_modules/playwright-core/package.json').version")" >&2
