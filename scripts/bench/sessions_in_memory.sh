#!/usr/bin/env bash
# What each conversation held in memory costs a server: a `concierge serve`
# on a new database, S sessions of one turn each through
# `POST …/messages?wait=true` (concurrency 100), then the server's resident
# memory read from /proc while they are still in memory (within the 30 s
# idle time). Needs the fixture running:
#
#   target/release/concierge bench --serve-fake 127.0.0.1:8090 &
#   scripts/bench/sessions_in_memory.sh target/release/concierge 10000
set -euo pipefail
BIN=${1:?the concierge binary}; S=${2:-10000}
FIXTURE=${FIXTURE:-http://127.0.0.1:8090/v1}
PORT=${PORT:-8188}
D=$(mktemp -d)
PID=
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$D"' EXIT
(cd "$D" && exec "$BIN" --db "$D/s.db" --base-url "$FIXTURE" --model openai:fixture serve \
    --addr "127.0.0.1:$PORT" --max-runs-per-tenant 100000 > "$D/serve.log" 2>&1) &
PID=$!
for _ in $(seq 1 200); do curl -sf "http://127.0.0.1:$PORT/readyz" > /dev/null && break; sleep 0.05; done
rss() { awk '/^VmRSS/ {print $2}' "/proc/$PID/status"; }
before=$(rss)
"$BIN" bench --http "http://127.0.0.1:$PORT" --door messages --sessions "$S" --turns 1 --concurrency 100 > /dev/null
after=$(rss)
echo "{\"sessions\": $S, \"rss_before_kb\": $before, \"rss_after_kb\": $after, \"kb_per_session\": $(( (after - before) / S ))}"
