#!/usr/bin/env bash
# What an idle `concierge serve` costs with N schedules in its database (none
# due for years): its CPU over 30 s, read from /proc. The schedules are
# written straight into the table (adding 100,000 through the API would take
# minutes); the server polls for the next due one every second.
#
#   scripts/bench/schedules_idle.sh target/release/concierge 100000
set -euo pipefail
BIN=${1:?the concierge binary}; N=${2:-100000}; D=$(mktemp -d); PORT=${PORT:-8383}; P=
trap 'kill "$P" 2>/dev/null || true; rm -rf "$D"' EXIT
(cd $D && exec $BIN --db $D/s.db --base-url http://127.0.0.1:1/v1 --model openai:none serve --addr 127.0.0.1:$PORT > $D/log 2>&1) &
P=$!
for i in $(seq 1 100); do curl -sf http://127.0.0.1:$PORT/readyz >/dev/null && break; sleep 0.1; done
sleep 2; kill $P; wait $P 2>/dev/null || true
python3 - $D/s.db $N <<'PY'
import sqlite3,sys
c=sqlite3.connect(sys.argv[1]); n=int(sys.argv[2])
cols=[r[1] for r in c.execute("pragma table_info(schedules)")]
assert cols, "no schedules table"
c.executemany("INSERT INTO schedules (schedule_id, tenant, user, session, message, at, catch_up, next_at, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
  ((f"sch_{i:08x}", "acme", f"u{i%1000}", f"acme/s-{i}", "Remind me to water the plants", 4102444800000+i, "once", 4102444800000+i, 1764450000000) for i in range(n)))
c.commit()
PY
(cd $D && exec $BIN --db $D/s.db --base-url http://127.0.0.1:1/v1 --model openai:none serve --addr 127.0.0.1:$PORT > $D/log 2>&1) &
P=$!
for i in $(seq 1 100); do curl -sf http://127.0.0.1:$PORT/readyz >/dev/null && break; sleep 0.1; done
sleep 3
b=$(awk '{print ($14 + $15)}' /proc/$P/stat); sleep 30; a=$(awk '{print ($14 + $15)}' /proc/$P/stat)
echo "{\"schedules\": $N, \"idle_cpu_ms_per_30_s\": $(( (a - b) * 10 ))}"
