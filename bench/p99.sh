#!/usr/bin/env bash
# bench/p99.sh -- issue 15's row "p99 of new tasks at half the saturated
# rate: <= 5 ms, SQLite", for the default SQLite store (synchronous=FULL)
# and for memory:.
#
#   bash bench/p99.sh
#
# Per store, two fresh onced processes, each on an empty store:
#   1. saturate: wrk -t2 -c64 with bench/send.lua "new block" (fresh
#      client-minted IDs, blocking SendMessage), BENCH_WARMUP s discarded,
#      then BENCH_SAT s measured: the saturated rate, as run.sh measures it;
#   2. paced: bench/paced.c at half that rate (open loop, 64 keep-alive
#      connections, the same request), BENCH_WARMUP s unrecorded, then
#      BENCH_DURATION s recorded. Latency runs from each request's scheduled
#      send time, so a stall counts against every request it delayed.
# Prints a markdown table: rates, percentiles, errors, the 1-minute load
# average and onced's CPU share during the paced run. Raw wrk and paced
# output, server logs in $B/bench-out/p99-<date-time>/ (BENCH_OUT), with
# each store's latency CDF, <store>-cdf.dat (paced -o), for bench/plot.sh;
# SQLite files go in there too (a real disk: fsync is real) and are deleted
# at the end.
#
# Environment (all optional): BENCH_DURATION (30), BENCH_SAT (10),
# BENCH_WARMUP (2), BENCH_STORES ("sqlite memory"), BENCH_ONCED /
# BENCH_SKIP_BUILD / BENCH_BUILD as in rss.sh.
TAG=p99
source "$(dirname "$0")/lib.sh"
DUR="${BENCH_DURATION:-30}"
SAT="${BENCH_SAT:-10}"
WARM="${BENCH_WARMUP:-2}"
STORES="${BENCH_STORES:-sqlite memory}"
LUA="$root/bench/send.lua"
TCK="$(getconf CLK_TCK)"
DATA="$OUT/data"
mkdir -p "$DATA"

gcc -std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
  -Wvla -Wformat=2 -o "$B/bench/paced" "$root/bench/paced.c" 2>>"$OUT/build.log" ||
  die "paced build failed (log: $OUT/build.log)"

cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}'; }
store_url() { # store_url STORE RUN
  case $1 in
    sqlite) echo "sqlite:$DATA/$2.db" ;;
    memory) echo "memory:" ;;
  esac
}
declare -A R

for st in $STORES; do
  case $st in sqlite | memory) ;; *) die "BENCH_STORES: unknown store $st" ;; esac
  start_onced "$st-sat" --store "$(store_url "$st" sat)"
  log "$st: saturate, ${WARM}s warm-up + ${SAT}s (load1 $(load1))"
  wrk -t2 -c64 -d"${WARM}s" -s "$LUA" "http://127.0.0.1:$PORT/" -- new block "s$st$RANDOM$RANDOM" \
    >"$OUT/$st-sat.warmup.wrk" 2>&1
  wrk -t2 -c64 -d"${SAT}s" --timeout 5s -s "$LUA" "http://127.0.0.1:$PORT/" -- new block \
    "t$st$RANDOM$RANDOM" >"$OUT/$st-sat.wrk" 2>&1
  stop "$PID" "$st-sat"
  read_result "$OUT/$st-sat.wrk" "$st.sat" || die "$st: wrk printed no RESULT (see $OUT/$st-sat.wrk)"
  rate=$(( ${R[$st.sat.rps]} / 2 ))
  R[$st.rate]=$rate

  start_onced "$st-paced" --store "$(store_url "$st" paced)"
  log "$st: paced at $rate/s, ${WARM}s unrecorded + ${DUR}s (load1 $(load1))"
  R[$st.load0]=$(load1)
  c0=$(cpu_ticks "$PID"); t0=$(date +%s%N)
  "$B/bench/paced" -p "$PORT" -r "$rate" -d "$DUR" -w "$WARM" -c 64 -m block \
    -x "p$st$RANDOM$RANDOM" -o "$OUT/$st-cdf.dat" >"$OUT/$st-paced.out" 2>&1
  c1=$(cpu_ticks "$PID"); t1=$(date +%s%N)
  R[$st.load1]=$(load1)
  R[$st.cpu]=$(awk -v a="$c0" -v b="$c1" -v t="$TCK" -v s="$t0" -v e="$t1" \
    'BEGIN{printf "%.0f", 100 * (b - a) / t / ((e - s) / 1e9)}')
  stop "$PID" "$st-paced"
  read_result "$OUT/$st-paced.out" "$st" || die "$st: paced printed no RESULT (see $OUT/$st-paced.out)"
  meta "$st.rate" "${R[$st.rate]}"
  meta "$st.saturated" "${R[$st.sat.rps]}"
done
rm -rf "$DATA"
meta load_end "$(loadavg)"

echo
echo "## bench/p99.sh $(date -u +%Y-%m-%dT%H:%MZ) — $ONCED"
echo
echo "Saturation: wrk -t2 -c64, ${WARM}s warm-up discarded, ${SAT}s measured. Paced: bench/paced.c, 64 connections,"
echo "${WARM}s unrecorded + ${DUR}s recorded at half the saturated rate; blocking SendMessage, fresh IDs; loopback."
echo "Load average (1, 5, 15 min): start $(sed -n 's/^load_start=//p' "$OUT/meta"); end $(loadavg)."
echo
echo "| store | saturated req/s (wrk p99 ms) | paced rate /s | achieved /s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | errors | onced CPU % | load1 start/end |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"
for st in $STORES; do
  label=$st
  [ "$st" = sqlite ] && label="sqlite (synchronous=FULL)"
  printf '| %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s/%s |\n' "$label" \
    "${R[$st.sat.rps]}" "${R[$st.sat.p99_ms]}" "${R[$st.rate]}" "${R[$st.achieved_rps]}" \
    "${R[$st.p50_ms]}" "${R[$st.p90_ms]}" "${R[$st.p99_ms]}" "${R[$st.p999_ms]}" \
    "${R[$st.max_ms]}" "${R[$st.errors]}" "${R[$st.cpu]}" "${R[$st.load0]}" "${R[$st.load1]}"
done
echo
echo "Raw output: $OUT"
