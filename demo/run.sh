#!/usr/bin/env bash
# make demo: the contract-review story (docs/design.md section 9) with real
# processes on the embedded SQLite store. Every claim is checked; the exit
# status is 0 only if all held. Usage: demo/run.sh [BUILD_DIR] [--quick] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
[ $# -gt 0 ] && shift
for bin in onced once tools/proxy tools/fenced_write tools/effect_call; do
  if [ ! -x "$build/$bin" ]; then
    echo "demo: $build/$bin is missing: build first (make build)" >&2
    exit 2
  fi
done
exec python3 demo/story.py --build "$build" "$@"
