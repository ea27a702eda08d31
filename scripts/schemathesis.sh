#!/usr/bin/env bash
# Schemathesis (PyPI, installed by scripts/setup-schemathesis.sh) against a
# real `concierge serve` on a free loopback port, over a copy of
# examples/assistant (and the examples it borrows agents from, without the
# databases using them left there) in a temporary directory under target/;
# the orders agent's MCP server is the concierge-orders program beside
# `concierge` (cargo builds both into the same directory). The server is
# stopped at the end.
#
# Checks: all of them (`--checks all`), because each one is a promise of the
# API: no 5xx (not_a_server_error); only documented status codes, content
# types and headers; every response body, and every Server-Sent Event of a
# session's stream, fits its schema; a request the schema allows is accepted
# and one it forbids is refused (so the schema is exactly as strict as the
# server); 405 with an Allow header for a method a path lacks; and the
# stateful ones (a created session can be read, used and ended). The auth
# checks find no auth to test while the server has no API tokens.
# Phases: coverage, fuzzing and stateful (links between operations are
# inferred), within --max-time (about 2.5 minutes) and a fixed seed, so a run
# is repeatable: SCHEMATHESIS_SEED=<n> tries other examples.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONCIERGE_CACHE=${CONCIERGE_CACHE:-$HOME/.cache/concierge}
schemathesis=$(scripts/setup-schemathesis.sh)
# CONCIERGE_BIN: a `concierge` already built, with concierge-orders beside
# it (scripts/test.sh passes the one `cargo test --workspace` built);
# otherwise both are built here.
bin=${CONCIERGE_BIN:-}
if [[ -z $bin ]]; then
  cargo build --locked --quiet -p concierge-cli -p concierge-orders
  bin=${CARGO_TARGET_DIR:-$PWD/target}/debug/concierge
fi

mkdir -p target
work=$(mktemp -d "$PWD/target/schemathesis.XXXXXX")
# Never the SQLite files (and their -wal/-shm/-journal) that using the
# examples leaves in them: the run starts from the examples' sources only.
tar -C examples --exclude='*.db' --exclude='*.db-wal' --exclude='*.db-shm' --exclude='*.db-journal' \
  -cf - assistant tasks crm | tar -C "$work" -xf -
if [[ ! -x $(dirname "$bin")/concierge-orders ]]; then
  echo "no concierge-orders beside $bin (the orders goal's MCP server): build it with cargo build --workspace" >&2
  exit 1
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$work/assistant" && exec "$bin" serve --addr "127.0.0.1:$port") >"$work/server.log" 2>&1 &
server=$!
stop() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT

if ! python3 - "$port" <<'PY'
import json, sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(120):
    try:
        urllib.request.urlopen(base + "/healthz", timeout=1)
        break
    except OSError:
        time.sleep(0.5)
else:
    sys.exit(1)
# One question for the orders goal starts its MCP server, so that no
# request under test waits for it.
def post(path, body):
    request = urllib.request.Request(base + path, json.dumps(body).encode(), {"content-type": "application/json"})
    return json.load(urllib.request.urlopen(request, timeout=300))
session = post("/api/v1/sessions", {})["id"]
post(f"/api/v1/sessions/{session}/messages?wait=true", {"text": "where is my order 1001?"})
PY
then
  cat "$work/server.log" >&2
  echo "concierge serve did not come up on port $port" >&2
  exit 1
fi

# Run from the temporary directory: Schemathesis leaves nothing in the clone.
(cd "$work" && "$schemathesis" run "http://127.0.0.1:$port/openapi.json" \
  --checks all \
  --phases coverage,fuzzing,stateful \
  --max-examples 50 \
  --max-time 150 \
  --request-timeout 10 \
  --seed "${SCHEMATHESIS_SEED:-1}" \
  --generation-database none \
  --no-color)
