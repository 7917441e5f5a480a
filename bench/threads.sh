#!/usr/bin/env bash
# threads.sh -- where a new task's wake-ups and CPU go, thread by thread.
#
#   bash bench/threads.sh
#
# Per build, a fresh onced (Release, BENCH_BUILD / BENCH_ONCED as in
# bench/lib.sh; --log-level warn as run.sh runs it) on a fresh store, 1 s of
# `wrk -t2 -c64 send.lua new block` to start every thread (the group-commit
# driver starts with the first held write), then a snapshot of every
# thread's voluntary and nonvoluntary context switches and CPU ticks
# (/proc/PID/task/*/status and stat), BENCH_SECS of the same load, a second
# snapshot. Prints, per thread that did anything, its switches and CPU per
# answer that passed send.lua's checks, then the totals; a thread that wakes
# for nothing shows up as switches with no CPU.
#
#   BENCH_STORE    the store URL (default: a fresh sqlite file in $OUT)
#   BENCH_SECS     seconds measured (default 6)
#   BENCH_ONCED_B  a second onced, measured after the first
#
# A voluntary switch is a thread going to sleep (a wait, a hand-off); the
# nonvoluntary ones are preemptions and grow with the machine's load, so
# compare the voluntary figures across builds.
TAG=threads
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${BENCH_SECS:-6}
ONCED_A=$ONCED
ONCED_B=${BENCH_ONCED_B:-}
[ -z "$ONCED_B" ] || [ -x "$ONCED_B" ] || die "BENCH_ONCED_B: no onced at $ONCED_B"

# snap PID: one line per thread: tid name voluntary nonvoluntary ticks.
snap() {
  local t
  for t in /proc/"$1"/task/*; do
    printf '%s %s %s %s\n' "${t##*/}" "$(tr ' ' _ <"$t/comm")" \
      "$(awk '/^voluntary_ctxt/ {v = $2} /^nonvoluntary_ctxt/ {n = $2} END {print v, n}' "$t/status")" \
      "$(sed 's/.*) //' "$t/stat" | awk '{print $12 + $13}')"
  done | sort
}

# measure NAME BIN
measure() {
  local name=$1 bin=$2 store=${BENCH_STORE:-} ok
  [ -n "$store" ] || store="sqlite:$OUT/$name.db"
  ONCED=$bin start_onced "$name" --store "$store"
  wrk -t2 -c64 -d1s -s "$root/bench/send.lua" "http://127.0.0.1:$PORT/" -- new block "w$RANDOM" \
    >"$OUT/$name.warm.wrk" 2>&1
  snap "$PID" >"$OUT/$name.before"
  wrk -t2 -c64 -d"${SECS}s" -s "$root/bench/send.lua" "http://127.0.0.1:$PORT/" -- new block \
    "m$RANDOM" >"$OUT/$name.wrk" 2>&1
  snap "$PID" >"$OUT/$name.after"
  stop "$PID" "$name"
  declare -A R=()
  read_result "$OUT/$name.wrk" x || die "$name: no RESULT line (see $OUT/$name.wrk)"
  ok=${R[x.ok]}
  ((ok > 0)) || die "$name: no correct answer (see $OUT/$name.wrk)"
  echo "### $name: $bin, $store, $ok tasks in ${SECS} s ($((R[x.requests] - ok)) errors), load now $(loadavg)"
  echo
  echo "| thread | name | voluntary / task | nonvoluntary / task | CPU µs / task |"
  echo "|---|---|---:|---:|---:|"
  join "$OUT/$name.before" "$OUT/$name.after" | awk -v ok="$ok" -v tck="$(getconf CLK_TCK)" '
    { v = $7 - $3; n = $8 - $4; c = $9 - $5
      tv += v; tn += n; tc += c
      if (v + n + c > ok / 1000)
        printf "| %s | %s | %.3f | %.3f | %.1f |\n", $1, $2, v / ok, n / ok, c * 1e6 / tck / ok }
    END { printf "| all | | **%.3f** | %.3f | **%.1f** |\n", tv / ok, tn / ok, tc * 1e6 / tck / ok }'
  echo
  rm -f "$OUT/$name.db" "$OUT/$name.db-wal" "$OUT/$name.db-shm"
}

log "load before: $(loadavg)"
{
  echo "threads.sh on $(code_rev), $(date -u +%Y-%m-%dT%H:%MZ), wrk -t2 -c64 send.lua new block"
  echo
  measure a "$ONCED_A"
  [ -z "$ONCED_B" ] || measure b "$ONCED_B"
} | tee "$OUT/threads.md"
