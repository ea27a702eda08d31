#!/usr/bin/env bash
# Starts the local model server on 127.0.0.1:PORT (default 8089) and waits
# until it answers; prints its base URL. `scripts/model-server.sh stop` stops it.
set -euo pipefail
CACHE=${CONCIERGE_CACHE:-$HOME/.cache/concierge}
VENV=$CACHE/llama-venv
MODEL=$CACHE/models/SmolLM2-135M-Instruct.Q4_1.gguf
PIDFILE=$CACHE/model-server.pid
if [ "${1:-}" = "stop" ]; then
  if [ -f "$PIDFILE" ]; then kill "$(cat "$PIDFILE")" 2>/dev/null || true; rm -f "$PIDFILE"; fi
  exit 0
fi
PORT=${1:-8089}
if [ ! -f "$MODEL" ]; then "$(dirname "$0")/setup-model-server.sh"; fi
if curl -fsS "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then
  echo "port $PORT already has a server; stop it or choose another port" >&2
  exit 1
fi
"$VENV/bin/python" -m llama_cpp.server --model "$MODEL" --model_alias smollm2 \
  --host 127.0.0.1 --port "$PORT" --n_threads 1 --n_threads_batch 1 --n_ctx 4096 \
  --chat_format chatml-function-calling --interrupt_requests False >"$CACHE/model-server.log" 2>&1 &
echo $! >"$PIDFILE"
for _ in $(seq 1 240); do
  if curl -fsS "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1; then
    echo "http://127.0.0.1:$PORT/v1"
    exit 0
  fi
  if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    echo "the model server exited; see $CACHE/model-server.log" >&2
    tail -n 20 "$CACHE/model-server.log" >&2
    exit 1
  fi
  sleep 0.5
done
echo "the model server did not answer on port $PORT in 120 s" >&2
exit 1
