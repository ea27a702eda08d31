#!/usr/bin/env bash
# Prints cargo's target directory, after making room in it: CI keeps target/
# from one run to the next, and each change of the dependency graph or the
# build profile leaves the old artifacts behind, so a cache that has grown
# until the disk holds less than a cold run needs is removed (a cold build,
# instead of one that fails half-way with "No space left on device").
# CONCIERGE_BUILD_ROOM_GIB: the room a run needs (default 15: a cold run leaves about 7 GiB in target/).
set -euo pipefail
cd "$(dirname "$0")/.."
need_gib=${CONCIERGE_BUILD_ROOM_GIB:-15}
target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
if [[ -d $target_dir ]]; then
  free_gib=$(( $(df --output=avail -k "$target_dir" | tail -n 1) / 1024 / 1024 ))
  if (( free_gib < need_gib )); then
    echo "only ${free_gib} GiB free beside $target_dir (a run needs about ${need_gib} GiB): removing the build cache" >&2
    cargo clean >&2
  fi
fi
free_gib=$(( $(df --output=avail -k "$(dirname "$target_dir")" | tail -n 1) / 1024 / 1024 ))
if (( free_gib < need_gib )); then
  echo "warning: only ${free_gib} GiB free for the build; a run needs about ${need_gib} GiB" >&2
fi
echo "$target_dir"
