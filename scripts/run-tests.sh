#!/usr/bin/env bash
# Run the ctest suite in each build directory given; print ctest's summary
# for each and a final "N passed, N failed" line over all of them.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
total_pass=0; total_fail=0; status=0
for dir in "$@"; do
  echo "== ctest in $dir"
  log=$(mktemp)
  ( cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 600 ) 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
  if [ -n "$line" ]; then
    failed=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/')
    all=$(echo "$line" | sed -E 's/.*failed out of ([0-9]+).*/\1/')
    total_pass=$((total_pass + all - failed)); total_fail=$((total_fail + failed))
  else
    total_fail=$((total_fail + 1))
  fi
  [ "$rc" -eq 0 ] || status=1
  rm -f "$log"
done
echo "$total_pass passed, $total_fail failed"
exit $status
