#!/usr/bin/env bash
# Fails on a source file over 900 lines in the runtime, server, Temporal and
# core crates (tests apart) unless its first lines say why it is one file:
# a line `// One file because: …`. Split by concept first.
set -euo pipefail
cd "$(dirname "$0")/.."
limit=900
status=0
while IFS= read -r file; do
  lines=$(wc -l < "$file")
  if (( lines > limit )) && ! head -20 "$file" | grep -q '^// One file because:'; then
    echo "$file has $lines lines (over $limit): split it by concept, or say at its top why not (// One file because: …)" >&2
    status=1
  fi
done < <(find crates/concierge/src crates/concierge-server/src crates/concierge-temporal/src crates/concierge-core/src \
  -name '*.rs' ! -name 'tests.rs' ! -name '*_tests.rs' ! -path '*/tests/*')
exit $status
