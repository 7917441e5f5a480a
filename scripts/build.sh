#!/usr/bin/env bash
# Configure and build some targets with one progress line instead of the
# build tool's chatter. Warnings and errors still show as they come; the full
# output is kept in BUILD_DIR/build.log.
#
#   scripts/build.sh BUILD_DIR TARGET... [-- CMAKE_ARGS...]
#
# `make demo` and `make amplify` build the "demo" target this way.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR TARGET... [-- CMAKE_ARGS...]" >&2; exit 2; }
build=$1
shift
targets=()
names=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  targets+=(--target "$1")
  names+=("$1")
  shift
done
[ $# -gt 0 ] && shift
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
start=$(date +%s)
mkdir -p "$build"
log=$build/build.log

# One line, rewritten in place on a terminal; elsewhere (a CI log) only the
# result line, so the log stays short.
tty=0
[ -t 1 ] && tty=1
progress() {
  [ $tty = 1 ] && printf '\r\033[Kbuild: %s' "$1"
}

if ! cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$log" 2>&1; then
  cat "$log" >&2
  echo "build: configuring $build failed (log: $log)" >&2
  exit 1
fi
progress "configured"

# The build tool's own lines become the progress line; anything else
# (a warning, an error, a note from the compiler) is printed as it is.
filter() {
  local line rest
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$log"
    case $line in
    "["*"%]"*)
      rest=${line#*] }
      progress "${line%%]*}] ${rest##*/}" ;;
    *"Entering directory"* | *"Leaving directory"* | "Scanning dependencies"* | \
    "Consolidate compiler generated dependencies"* | "")
      ;;
    *)
      [ $tty = 1 ] && printf '\r\033[K'
      printf '%s\n' "$line" ;;
    esac
  done
}

# An outer make's flags (its jobserver, -w) do not reach the build tool:
# -j here decides the parallelism.
MAKEFLAGS='' cmake --build "$build" -j "$jobs" "${targets[@]}" 2>&1 | filter
rc=${PIPESTATUS[0]}
[ $tty = 1 ] && printf '\r\033[K'
if [ "$rc" -ne 0 ]; then
  echo "build: failed (log: $log)" >&2
  exit "$rc"
fi
echo "build: ${names[*]} built in $(($(date +%s) - start)) s (log: $log)"
