#!/usr/bin/env bash
# ids.sh -- the order of task IDs: new blocking tasks whose IDs count up
# against IDs in random order, per store, in one run (issue 35 item 3).
#
#   bash bench/ids.sh
#
# Each row is a fresh onced (Release, BENCH_BUILD / BENCH_ONCED as in
# bench/lib.sh) on a fresh store, `wrk -t2 -c64 -dSECS` of bench/send.lua
# in one of two modes:
#   new   IDs "<PREFIX>-<thread>-<n>": two sequences counting up, so each
#         commit's new keys land on a couple of B-tree pages
#   uuid  the same IDs behind 16 random hex digits: the order a client that
#         mints UUIDs sends
# and reports the answers that passed send.lua's checks (ok), the errors
# (everything else wrk or send.lua counted), and onced's own CPU (user +
# system, /proc/PID/stat) per ok task. The modes alternate within a round,
# and with BENCH_ONCED_B set so do two builds (row "b": e.g. the code
# before a change), so a noisy machine hits every row alike.
#
#   BENCH_STORES   stores, in order (default "sqlite memory"):
#                  sqlite    a fresh file, synchronous=FULL (the default)
#                  memory    memory:
#                  postgres  BENCH_PG_URL (default the test services'
#                            postgres://postgres@127.0.0.1:25432/once), a
#                            schema of its own per row, reset
#   BENCH_ROUNDS   rounds (default 2)
#   BENCH_SECS     seconds of load per row (default 8)
#   BENCH_ONCED_B  a second onced to alternate with
#
# The table goes to stdout and $OUT/ids.md; each row's wrk output and
# onced log stay in $OUT.
TAG=ids
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STORES=${BENCH_STORES:-sqlite memory}
ROUNDS=${BENCH_ROUNDS:-2}
SECS=${BENCH_SECS:-8}
PG_URL=${BENCH_PG_URL:-postgres://postgres@127.0.0.1:25432/once}
ONCED_A=$ONCED
ONCED_B=${BENCH_ONCED_B:-}
[ -z "$ONCED_B" ] || [ -x "$ONCED_B" ] || die "BENCH_ONCED_B: no onced at $ONCED_B"
TICK=$(getconf CLK_TCK)

# cpu_ticks PID: utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# store_url STORE ROW: a fresh store of that kind for one row.
store_url() {
  case $1 in
    sqlite) echo "sqlite:$OUT/$2.db" ;;
    memory) echo "memory:" ;;
    postgres) echo "$PG_URL?schema=ids_${2//-/_}&reset=1" ;;
    *) die "unknown store $1 (sqlite, memory, postgres)" ;;
  esac
}

# row BUILD STORE MODE ROUND: one fresh onced, one wrk run; appends
# "build store mode ok errors cpu_us_per_task" to $OUT/rows.
row() {
  local build=$1 store=$2 mode=$3 round=$4 name bin t0 t1 errs
  name="$build-$store-$mode-$round"
  bin=$ONCED_A
  [ "$build" = b ] && bin=$ONCED_B
  ONCED=$bin start_onced "$name" --store "$(store_url "$store" "$name")"
  t0=$(cpu_ticks "$PID")
  wrk -t2 -c64 -d"${SECS}s" -s "$root/bench/send.lua" "http://127.0.0.1:$PORT/" -- \
    "$mode" block "i$RANDOM$round" >"$OUT/$name.wrk" 2>&1
  t1=$(cpu_ticks "$PID")
  stop "$PID" "$name"
  declare -A R=()
  read_result "$OUT/$name.wrk" x || die "$name: no RESULT line (see $OUT/$name.wrk)"
  errs=$((R[x.requests] - R[x.ok]))
  echo "$build $store $mode ${R[x.ok]} $errs $(((t1 - t0) * 1000000 / TICK / (R[x.ok] > 0 ? R[x.ok] : 1)))" \
    >>"$OUT/rows"
  log "$name: ok ${R[x.ok]}, errors $errs"
  rm -f "$OUT/$name.db" "$OUT/$name.db-wal" "$OUT/$name.db-shm"
}

builds=(a)
[ -n "$ONCED_B" ] && builds=(b a)
: >"$OUT/rows"
log "load before: $(loadavg)"
for ((r = 1; r <= ROUNDS; r++)); do
  for store in $STORES; do
    for mode in new uuid; do
      for build in "${builds[@]}"; do row "$build" "$store" "$mode" "$r"; done
    done
  done
done

{
  echo "ids.sh on $(code_rev), $(date -u +%Y-%m-%dT%H:%MZ), ${SECS} s per row, load now $(loadavg)"
  echo "(a: $ONCED_A${ONCED_B:+; b: $ONCED_B})"
  echo
  echo "| build | store | \`new\` ok tasks (each round) | \`uuid\` ok tasks | uuid / new | errors | onced CPU µs / task new / uuid |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  for build in "${builds[@]}"; do
    for store in $STORES; do
      awk -v b="$build" -v s="$store" '
        $1 == b && $2 == s { ok[$3] = ok[$3] (ok[$3] == "" ? "" : " / ") $4; sum[$3] += $4
                             err += $5; cpu[$3] = cpu[$3] (cpu[$3] == "" ? "" : ",") $6 }
        END { printf "| %s | %s | %s | %s | %.2f | %d | %s / %s |\n", b, s, ok["new"], ok["uuid"],
                     sum["new"] ? sum["uuid"] / sum["new"] : 0, err, cpu["new"], cpu["uuid"] }' \
        "$OUT/rows"
    done
  done
} | tee "$OUT/ids.md"
