#!/usr/bin/env bash
# Measures concierge on Temporal against an equivalent Python worker
# (scripts/bench/temporal_python) on the same dev server build, the same bench
# fake model and the same workload, and prints a table. A measurement, not a
# test: CI does not run it.
#
#   cargo build --release -p concierge-cli
#   scripts/bench/temporal_compare.sh [SESSIONS [TURNS [CONCURRENCY]]]
#
# Each run gets a fresh dev server (loopback, its own database file):
#   1. concierge bench --temporal (workers in the bench process), after the
#      embedded engine on the same workload (--compare-embedded);
#   2. the same with model calls as local activities (model_calls = "local");
#   3. the Python worker (one process: session workflows, model and tool
#      activities) driven by driver.py (another process), with the SDK's
#      default workflow sandbox, model calls as activities then as local
#      activities; PY_UNSANDBOXED=1 adds a run without the sandbox.
# CPU comes from /proc (the server's, the worker's and the client's pids);
# history from describing each session's workflow.
#
# Environment: CONCIERGE_BIN (default: $CARGO_TARGET_DIR or target, /release/concierge),
# CONCIERGE_CACHE (default ~/.cache/concierge; the Python venv and the Temporal CLI go there),
# KEEP=1 keeps the servers' and workers' logs.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
sessions=${1:-200}
turns=${2:-10}
concurrency=${3:-50}
bin=${CONCIERGE_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/concierge}
[ -x "$bin" ] || { echo "no concierge binary at $bin: cargo build --release -p concierge-cli, or set CONCIERGE_BIN" >&2; exit 1; }
cache=${CONCIERGE_CACHE:-$HOME/.cache/concierge}
pydir=$root/scripts/bench/temporal_python
venv=$cache/temporal-python-$(grep -oP '^temporalio==\K\S+' "$pydir/requirements.txt")
if ! cmp -s "$pydir/requirements.txt" "$venv/requirements.txt"; then
  echo "installing the Python worker's requirements into $venv..." >&2
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$pydir/requirements.txt" >&2
  cp "$pydir/requirements.txt" "$venv/requirements.txt"
fi
temporal=$(scripts/setup-temporal.sh 2>/dev/null)

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "${KEEP:-0}" = 1 ]; then echo "logs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Starts a dev server with a fresh database; sets server_pid and address.
start_server() {
  local port; port=$(free_port)
  address=127.0.0.1:$port
  "$temporal" server start-dev --headless --ip 127.0.0.1 --port "$port" \
    --db-filename "$work/temporal-$1.db" --namespace concierge \
    --search-attribute ConciergeTenant=Keyword --search-attribute ConciergeAgent=Keyword \
    --log-level warn >"$work/server-$1.log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  for _ in $(seq 100); do
    "$temporal" operator cluster health --address "$address" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "the Temporal dev server did not start (log: $work/server-$1.log)" >&2
  cat "$work/server-$1.log" >&2
  exit 1
}

stop_server() {
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null || true
}

# The bench fake model, shared by both.
fake_port=$(free_port)
"$bin" bench --serve-fake "127.0.0.1:$fake_port" >"$work/fake.log" 2>&1 &
pids+=("$!")
for _ in $(seq 100); do
  grep -q http "$work/fake.log" 2>/dev/null && break
  sleep 0.1
done
base_url=http://127.0.0.1:$fake_port/v1

echo "workload: $sessions sessions x $turns turns, $concurrency at a time; fake model at $base_url" >&2

concierge_run() { # NAME [bench flags]
  local name=$1; shift
  start_server "$name"
  echo "$name on $address..." >&2
  "$bin" --base-url "$base_url" --model openai:fake bench --sessions "$sessions" --turns "$turns" \
    --concurrency "$concurrency" --temporal "$address" --temporal-namespace concierge \
    --temporal-server-pid "$server_pid" --json "$@" >>"$work/concierge.jsonl" \
    || echo "concierge bench reported failed turns (see the errors column)" >&2
  stop_server
}
concierge_run concierge --compare-embedded
concierge_run concierge-local --temporal-local-model-calls

python_run() { # NAME [--local-model] [--unsandboxed]
  local name=$1; shift
  local driver_flags=""
  if [ "${1:-}" = --local-model ]; then driver_flags=--local-model; shift; fi
  start_server "$name"
  echo "python ($name) on $address..." >&2
  BENCH_BASE_URL=$base_url "$venv/bin/python" "$pydir/worker.py" --address "$address" \
    --namespace concierge --prefix "$name" "$@" >"$work/worker-$name.log" 2>&1 &
  local worker=$!
  pids+=("$worker")
  for _ in $(seq 300); do
    grep -q ready "$work/worker-$name.log" 2>/dev/null && break
    sleep 0.1
  done
  "$venv/bin/python" "$pydir/driver.py" --address "$address" --namespace concierge --prefix "$name" \
    --worker-pid "$worker" --server-pid "$server_pid" --sessions "$sessions" --turns "$turns" \
    --concurrency "$concurrency" $driver_flags 2>"$work/driver-$name.log" \
    | sed "s/\"engine\": \"python\"/\"engine\": \"$name\"/" >>"$work/python.jsonl" \
    || echo "the Python driver reported failed turns (log: $work/driver-$name.log)" >&2
  kill "$worker"
  wait "$worker" 2>/dev/null || true
  stop_server
}
python_run python
python_run python-local --local-model
if [ "${PY_UNSANDBOXED:-0}" = 1 ]; then
  python_run python-unsandboxed --unsandboxed
fi

cat "$work/concierge.jsonl" "$work/python.jsonl" >&2
python3 - "$work/concierge.jsonl" "$work/python.jsonl" <<'EOF'
import json, sys

rows = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    temporal = "temporal" in r.get("variant", "")
    rows.append({
        "engine": "concierge " + (("temporal, local model" if "local" in r["variant"] else "temporal") if temporal else "embedded " + r["variant"]),
        "turns/s": r["turns_per_s"],
        "p50 ms": r["p50_turn_ms"],
        "worker CPU ms/turn": r.get("worker_thread_cpu_ms_per_turn", r["cpu_ms_per_turn"]),
        "client CPU ms/turn": r.get("client_cpu_ms_per_turn"),
        "server CPU ms/turn": r.get("server_cpu_ms_per_turn"),
        "history events/turn": r.get("history_events_per_turn"),
        "history bytes/turn": r.get("history_bytes_per_turn"),
        "errors": r["errors"],
    })
for line in open(sys.argv[2]):
    r = json.loads(line)
    rows.append({
        "engine": r["engine"],
        "turns/s": r["turns_per_s"],
        "p50 ms": r["p50_turn_ms"],
        "worker CPU ms/turn": r["worker_cpu_ms_per_turn"],
        "client CPU ms/turn": r["driver_cpu_ms_per_turn"],
        "server CPU ms/turn": r["server_cpu_ms_per_turn"],
        "history events/turn": r["history_events_per_turn"],
        "history bytes/turn": r["history_bytes_per_turn"],
        "errors": r["errors"],
    })
cols = list(rows[0])
fmt = lambda v: "-" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))
widths = [max(len(c), *(len(fmt(r[c])) for r in rows)) for c in cols]
print(" | ".join(c.ljust(w) for c, w in zip(cols, widths)))
print("-|-".join("-" * w for w in widths))
for r in rows:
    print(" | ".join(fmt(r[c]).ljust(w) for c, w in zip(cols, widths)))
EOF
