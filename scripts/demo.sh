#!/usr/bin/env bash
# The demo: a terminal conversation with the calculator agent on the embedded
# engine (./concierge.db); it runs on the agent's rules, no model needed.
# With a model:  scripts/demo.sh --model openai:<name> --base-url <url>
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --locked -p concierge-cli
exec target/release/concierge "$@" chat --agent calculator
