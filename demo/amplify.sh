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
#
# --gateway: the same tree made of plain @a2a-js/sdk agents
# (demo/amplify_js_agent.mjs), modes js-naive, js-gateway (each agent behind
# onced --upstream; losses on the hops a client sees) and js-gateway-up
# (losses on the gateway -> agent hops too): p = 0, 0.1, 0.3, 100 root
# tasks each, tables to demo/amplify-gateway-results.md and stdout.
# --gateway --quick: js-naive and js-gateway at p = 0.3, 10 root tasks (the
# ctest e2e/test_amplify_gateway), stdout only. Needs node and
# tests/interop/node_modules (scripts/deps.sh).
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
gateway=0
for a in "$@"; do
  case $a in
  --quick) quick=1 ;;
  --gateway) gateway=1 ;;
  *) args+=("$a") ;;
  esac
done
if [ $gateway = 1 ]; then
  [ -d "$here/../tests/interop/node_modules/@a2a-js/sdk" ] ||
    { echo "amplify: tests/interop/node_modules has no @a2a-js/sdk (bash scripts/deps.sh)" >&2; exit 2; }
  if [ $quick = 1 ]; then
    exec python3 "$here/amplify.py" --build "$build" --ids "$ids" --modes js-naive,js-gateway \
      --p 0.3 --roots 10 --concurrency 10 "${args[@]}"
  fi
  if [ ${#args[@]} -gt 0 ]; then
    exec python3 "$here/amplify.py" --build "$build" --ids "$ids" \
      --modes js-naive,js-gateway,js-gateway-up "${args[@]}"
  fi
  exec python3 "$here/amplify.py" --build "$build" --ids "$ids" \
    --modes js-naive,js-gateway,js-gateway-up --out "$here/amplify-gateway-results.md"
fi
if [ $quick = 1 ]; then
  exec python3 "$here/amplify.py" --build "$build" --ids "$ids" --p 0.3 --roots 10 \
    --concurrency 10 "${args[@]}"
fi
if [ ${#args[@]} -gt 0 ]; then   # a variant: the table goes to stdout only
  exec python3 "$here/amplify.py" --build "$build" --ids "$ids" "${args[@]}"
fi
exec python3 "$here/amplify.py" --build "$build" --ids "$ids" --out "$here/amplify-results.md"
