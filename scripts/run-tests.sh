#!/usr/bin/env bash
# Run the ctest suite in each build directory given; print ctest's summary
# for each and a final "N passed, N failed" line over all of them.
#
# Timeouts: every test's TIMEOUT and the bounds inside the tests are scaled by
# the build's ONCE_TEST_TIMEOUT_FACTOR (CMakeLists.txt: 1, 3 under ASan, 5
# under TSan); ctest's default --timeout here is scaled by the same factor.
# ONCE_TEST_TIMEOUT_FACTOR set in the environment wins: the build directory is
# re-configured with it first.
#
# A ThreadSanitizer build (ONCE_TSAN=ON in its cache) runs only the tests
# labelled "tsan": the concurrency-relevant ones (engine, store, HTTP, client).
# A build whose cache sets ONCE_TEST_LABELS runs only the tests with those
# labels (make test's build-minimal: "minimal").
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
total_pass=0; total_fail=0; status=0
summary=()

cache_value() {   # cache_value DIR NAME -> the value in DIR/CMakeCache.txt, or ""
  sed -n "s/^$2:[A-Z]*=//p" "$1/CMakeCache.txt" 2>/dev/null | head -1
}

for dir in "$@"; do
  echo "== ctest in $dir"
  if [ -n "${ONCE_TEST_TIMEOUT_FACTOR:-}" ] &&
     [ "$(cache_value "$dir" ONCE_TEST_TIMEOUT_FACTOR_EFFECTIVE)" != "$ONCE_TEST_TIMEOUT_FACTOR" ]; then
    cmake "$dir" >/dev/null || { echo "cmake $dir failed"; total_fail=$((total_fail + 1)); status=1; continue; }
  fi
  factor=$(cache_value "$dir" ONCE_TEST_TIMEOUT_FACTOR_EFFECTIVE)
  timeout=$(awk -v f="${factor:-1}" 'BEGIN { t = 600 * f; printf "%d", (t == int(t)) ? t : int(t) + 1 }')
  select=()
  labels=$(cache_value "$dir" ONCE_TEST_LABELS)
  if [ "$(cache_value "$dir" ONCE_TSAN)" = "ON" ]; then
    select=(-L tsan)
  elif [ -n "$labels" ]; then
    select=(-L "$labels")
  fi
  echo "   timeout factor ${factor:-1}${select[*]:+, tests labelled ${select[1]} only}"
  log=$(mktemp)
  ( cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout "$timeout" "${select[@]}" ) 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
  if [ -n "$line" ]; then
    failed=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) tests failed out of ([0-9]+).*/\1/')
    all=$(echo "$line" | sed -E 's/.*failed out of ([0-9]+).*/\1/')
    total_pass=$((total_pass + all - failed)); total_fail=$((total_fail + failed))
    summary+=("$dir: $line")
  else
    total_fail=$((total_fail + 1))
    summary+=("$dir: no ctest summary (ctest exit $rc)")
  fi
  [ "$rc" -eq 0 ] || status=1
  rm -f "$log"
done
echo "== summary"
for s in "${summary[@]}"; do echo "$s"; done
echo "$total_pass passed, $total_fail failed"
exit $status
