#!/usr/bin/env bash
# The demo: seed 000's assistant, the goals catalogue of examples/assistant
# (travel, a hint game, finance, HR, food, orders, tasks, CRM), served by
# `concierge serve` on the embedded engine; open the printed URL in a browser.
# Offline, every goal runs on its rules; with a model each plans with it:
#   scripts/demo.sh --model openai:<name> --base-url <url>
# Any other option of `concierge serve` passes through (--addr 127.0.0.1:PORT).
# The data stays in examples/assistant/*.db (gitignored); Ctrl-C stops.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-$PWD/target}
bin=$target/debug/concierge

# One debug build of the two programs the demo runs: it skips the optimiser,
# so it compiles much sooner than a release build, and one person's chat does
# not notice the difference.
# - concierge with the demo's agents and tools but without the Temporal
#   engine (--no-default-features --features demo: the Temporal SDK is
#   about a third of a cold build, and the demo runs on the embedded engine);
# - concierge-orders, the orders goal's MCP server: examples/assistant/agents/orders.toml
#   names it as `concierge-orders`, the program beside the running concierge.
# A build from scratch, as quick as it goes on a small machine: no
# incremental state (as scripts/test.sh; the demo is run, not edited) and no
# line tables in the demo's own crates (the dependencies have none anyway).
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=none
if [[ ! -x $bin ]]; then
  echo "Building concierge: the first build compiles every dependency and takes a few minutes" >&2
  echo "(3 to 5 minutes on 2 cores); later runs start at once." >&2
fi
cargo build --locked --no-default-features --features demo -p concierge-cli -p concierge-orders

cd examples/assistant
echo "Starting the assistant; open the address below in a browser (Ctrl-C stops):" >&2
exec "$bin" serve "$@"
