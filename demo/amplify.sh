#!/usr/bin/env bash
# amplify.sh -- run the amplification experiment (demo/amplify.py): naive
# vs once, a 1 -> 2 -> 4 -> 8 delegation tree, links losing responses.
#
#   demo/amplify.sh [BUILD] [--quick] [amplify.py options]
#
# BUILD is the build directory (default: build). The full run (make
# amplify) does p = 0, 0.1, 0.3 with 100 root tasks each and writes the
# table to demo/amplify-results.md as well as stdout. --quick is p = 0.3,
# 10 root tasks, both modes (the ctest e2e/test_amplify); with --quick or
# any other option only stdout gets the table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=build
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  build=$1
  shift
fi
build=$(cd "$build" 2>/dev/null && pwd) || { echo "amplify: no build directory $build" >&2; exit 2; }
for f in onced once tools/proxy libonce.a; do
  [ -e "$build/$f" ] || { echo "amplify: $build/$f is missing (build first: make build)" >&2; exit 2; }
done

# The child-ID helper: once_child_id() from this build's libonce, with the
# build's sanitizers when it has them.
ids=$build/demo/amplify_ids
if [ ! -x "$ids" ] || [ "$here/amplify_ids.c" -nt "$ids" ] || [ "$build/libonce.a" -nt "$ids" ]; then
  mkdir -p "$build/demo"
  san=()
  grep -q '^ONCE_ASAN:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null &&
    san=("-fsanitize=address,undefined" -fno-omit-frame-pointer)
  grep -q '^ONCE_TSAN:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && san=(-fsanitize=thread)
  ${CC:-cc} -std=c11 -O2 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla \
    -Wformat=2 "${san[@]}" -I "$here/../include" "$here/amplify_ids.c" "$build/libonce.a" \
    -lcrypto -o "$ids.tmp"
  mv "$ids.tmp" "$ids"
fi

args=()
quick=0
for a in "$@"; do
  if [ "$a" = --quick ]; then quick=1; else args+=("$a"); fi
done
if [ $quick = 1 ]; then
  exec python3 "$here/amplify.py" --build "$build" --ids "$ids" --p 0.3 --roots 10 \
    --concurrency 10 "${args[@]}"
fi
if [ ${#args[@]} -gt 0 ]; then   # a variant: the table goes to stdout only
  exec python3 "$here/amplify.py" --build "$build" --ids "$ids" "${args[@]}"
fi
exec python3 "$here/amplify.py" --build "$build" --ids "$ids" --out "$here/amplify-results.md"
