#!/usr/bin/env bash
# make demo: the story of once on the embedded SQLite store, with real onced
# processes. Every claim is checked; exit status 0 only if all held.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
export ONCED="$PWD/$build/onced"
exec python3 demo/story.py "$@"
