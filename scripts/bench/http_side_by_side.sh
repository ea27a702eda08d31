#!/usr/bin/env bash
# The same load in process and through a `concierge serve`'s two doors, one
# after the other, with the server's own CPU per turn (read from /proc, so
# the server runs on this machine). Needs the fixture running:
#
#   target/release/concierge bench --serve-fake 127.0.0.1:8090 &
#   scripts/bench/http_side_by_side.sh target/release/concierge 1000 10 100
#
# Prints the in-process JSON line (SQLite, --durable), then one line per
# door (/v1/chat/completions, then POST …/messages?wait=true), each against
# a new server on a new database: turns/s, the server's CPU ms per turn,
# the driver's.
set -euo pipefail
BIN=${1:?the concierge binary}; S=${2:-1000}; T=${3:-10}; C=${4:-100}
FIXTURE=${FIXTURE:-http://127.0.0.1:8090/v1}
PORT=${PORT:-8181}
D=$(mktemp -d)
PID=
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$D"' EXIT
"$BIN" --base-url "$FIXTURE" --model openai:fixture bench --sessions "$S" --turns "$T" --concurrency "$C" --durable

# One door: a new server on a new database, the load through DOOR, the line.
door() {
  local door=$1 dir="$D/$1"
  mkdir -p "$dir"
  (cd "$dir" && exec "$BIN" --db "$dir/s.db" --base-url "$FIXTURE" --model openai:fixture serve \
      --addr "127.0.0.1:$PORT" --max-runs-per-tenant 100000 > "$dir/serve.log" 2>&1) &
  PID=$!
  for _ in $(seq 1 200); do curl -sf "http://127.0.0.1:$PORT/readyz" > /dev/null && break; sleep 0.05; done
  local before after
  before=$(awk '{print ($14 + $15) / 100}' "/proc/$PID/stat")
  "$BIN" bench --http "http://127.0.0.1:$PORT" --door "$door" --sessions "$S" --turns "$T" --concurrency "$C" > "$dir/out.json"
  after=$(awk '{print ($14 + $15) / 100}' "/proc/$PID/stat")
  kill "$PID"; wait "$PID" 2>/dev/null || true
  python3 - "$dir/out.json" "$before" "$after" "$door" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
turns = r["sessions"] * r["turns"]
server = (float(sys.argv[3]) - float(sys.argv[2])) * 1000 / turns
print(json.dumps({"variant": "http " + sys.argv[4], "turns_per_s": r["turns_per_s"],
                  "server_cpu_ms_per_turn": round(server, 3), "driver_cpu_ms_per_turn": r["cpu_ms_per_turn"],
                  "errors": r["errors"], "p50_turn_ms": r["p50_turn_ms"]}))
PY
}
door openai
door messages
