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
# BENCH_MODES="new replay" measures replays too: the saturated rate of
# wrk's send.lua "replay block" (one task sent once, then the same request
# again and again), then paced -m replay at half of it, each answer checked
# for Idempotent-Replayed: true.
#
# Environment (all optional): BENCH_DURATION (30), BENCH_SAT (10),
# BENCH_WARMUP (2), BENCH_STORES ("sqlite memory"; also pg, redis,
# dynamodb: the servers at BENCH_PG_URL, BENCH_REDIS_URL, BENCH_DYNAMO_URL,
# by default the test services', with a schema, key prefix or table "p99"
# of their own, reset for every onced), BENCH_MODES ("new"; "new replay"),
# BENCH_AUTOGROUP (0 or 1, lib.sh), BENCH_ONCED / BENCH_SKIP_BUILD /
# BENCH_BUILD as in rss.sh.
TAG=p99
source "$(dirname "$0")/lib.sh"
DUR="${BENCH_DURATION:-30}"
SAT="${BENCH_SAT:-10}"
WARM="${BENCH_WARMUP:-2}"
STORES="${BENCH_STORES:-sqlite memory}"
MODES="${BENCH_MODES:-new}"
PG_URL="${BENCH_PG_URL:-postgres://postgres@127.0.0.1:25432/once}"
REDIS_URL="${BENCH_REDIS_URL:-redis://127.0.0.1:26379/9}"
DYNAMO_URL="${BENCH_DYNAMO_URL:-dynamodb://p99?region=us-east-1&endpoint=http://127.0.0.1:27432&create=1}"
# dynalite checks no signature; onced signs with these.
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-bench}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-bench}"
LUA="$root/bench/send.lua"
TCK="$(getconf CLK_TCK)"
DATA="$OUT/data"
mkdir -p "$DATA"

gcc -std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
  -Wvla -Wformat=2 -o "$B/bench/paced" "$root/bench/paced.c" 2>>"$OUT/build.log" ||
  die "paced build failed (log: $OUT/build.log)"

cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}'; }
store_url() { # store_url STORE RUN: a fresh store for each onced
  case $1 in
    sqlite) echo "sqlite:$DATA/$2.db" ;;
    memory) echo "memory:" ;;
    pg) echo "$PG_URL?schema=p99&reset=1" ;;
    redis) echo "$REDIS_URL?prefix=p99&reset=1" ;;
    dynamodb) echo "$DYNAMO_URL&reset=1" ;;
  esac
}
# first_send PREFIX: the task a replay run replays, sent once and completed.
first_send() {
  curl -s --max-time 30 "http://127.0.0.1:$PORT/" -H 'Content-Type: application/json' \
    -H 'A2A-Version: 1.0' -H 'A2A-Extensions: urn:once:a2a:idempotency:v1' -d \
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":{\"messageId\":\"$1\",\"taskId\":\"$1\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hello\"}]}}}" |
    grep -q TASK_STATE_COMPLETED || die "the first send of $1 did not complete"
}
declare -A R
ROWS=()

for st in $STORES; do
  case $st in sqlite | memory | pg | redis | dynamodb) ;; *) die "BENCH_STORES: unknown store $st" ;; esac
  for mode in $MODES; do
    case $mode in new | replay) ;; *) die "BENCH_MODES: unknown mode $mode" ;; esac
    row=$st
    [ "$mode" = new ] || row="$st-$mode"
    ROWS+=("$row")
    start_onced "$row-sat" --store "$(store_url "$st" "$mode-sat")"
    log "$row: saturate, ${WARM}s warm-up + ${SAT}s (load1 $(load1))"
    if [ "$mode" = replay ]; then
      wpfx="s$st$RANDOM$RANDOM"
      first_send "$wpfx"
      tpfx=$wpfx
    else
      wpfx="s$st$RANDOM$RANDOM" tpfx="t$st$RANDOM$RANDOM"
    fi
    wsend=$mode
    [ "$mode" = replay ] || wsend=new
    wrk -t2 -c64 -d"${WARM}s" -s "$LUA" "http://127.0.0.1:$PORT/" -- "$wsend" block "$wpfx" \
      >"$OUT/$row-sat.warmup.wrk" 2>&1
    wrk -t2 -c64 -d"${SAT}s" --timeout 5s -s "$LUA" "http://127.0.0.1:$PORT/" -- "$wsend" block \
      "$tpfx" >"$OUT/$row-sat.wrk" 2>&1
    stop "$PID" "$row-sat"
    read_result "$OUT/$row-sat.wrk" "$row.sat" || die "$row: wrk printed no RESULT (see $OUT/$row-sat.wrk)"
    rate=$(( ${R[$row.sat.rps]} / 2 ))
    R[$row.rate]=$rate

    start_onced "$row-paced" --store "$(store_url "$st" "$mode-paced")"
    ppfx="p$st$RANDOM$RANDOM" pmode=block
    [ "$mode" = replay ] && { first_send "$ppfx"; pmode=replay; }
    log "$row: paced at $rate/s, ${WARM}s unrecorded + ${DUR}s (load1 $(load1))"
    R[$row.load0]=$(load1)
    c0=$(cpu_ticks "$PID"); t0=$(date +%s%N)
    "$B/bench/paced" -p "$PORT" -r "$rate" -d "$DUR" -w "$WARM" -c 64 -m "$pmode" \
      -x "$ppfx" -o "$OUT/$row-cdf.dat" >"$OUT/$row-paced.out" 2>&1
    c1=$(cpu_ticks "$PID"); t1=$(date +%s%N)
    R[$row.load1]=$(load1)
    R[$row.cpu]=$(awk -v a="$c0" -v b="$c1" -v t="$TCK" -v s="$t0" -v e="$t1" \
      'BEGIN{printf "%.0f", 100 * (b - a) / t / ((e - s) / 1e9)}')
    stop "$PID" "$row-paced"
    read_result "$OUT/$row-paced.out" "$row" || die "$row: paced printed no RESULT (see $OUT/$row-paced.out)"
    meta "$row.rate" "${R[$row.rate]}"
    meta "$row.saturated" "${R[$row.sat.rps]}"
  done
done
rm -rf "$DATA"
meta load_end "$(loadavg)"

echo
echo "## bench/p99.sh $(date -u +%Y-%m-%dT%H:%MZ) — $ONCED"
echo
echo "Saturation: wrk -t2 -c64, ${WARM}s warm-up discarded, ${SAT}s measured. Paced: bench/paced.c, 64 connections,"
echo "${WARM}s unrecorded + ${DUR}s recorded at half the saturated rate; blocking SendMessage, fresh IDs (a \"replay\" row: one task's request again and again, each answer checked for Idempotent-Replayed); loopback. kernel.sched_autogroup_enabled=$(autogroup_state)."
echo "Load average (1, 5, 15 min): start $(sed -n 's/^load_start=//p' "$OUT/meta"); end $(loadavg)."
echo
echo "| store | saturated req/s (wrk p99 ms) | paced rate /s | achieved /s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | errors | onced CPU % | load1 start/end |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"
for row in "${ROWS[@]}"; do
  label=$row
  case $row in sqlite | sqlite-*) label="sqlite (synchronous=FULL)${row#sqlite}" ;; esac
  label=${label/-replay/, replays}
  printf '| %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s/%s |\n' "$label" \
    "${R[$row.sat.rps]}" "${R[$row.sat.p99_ms]}" "${R[$row.rate]}" "${R[$row.achieved_rps]}" \
    "${R[$row.p50_ms]}" "${R[$row.p90_ms]}" "${R[$row.p99_ms]}" "${R[$row.p999_ms]}" \
    "${R[$row.max_ms]}" "${R[$row.errors]}" "${R[$row.cpu]}" "${R[$row.load0]}" "${R[$row.load1]}"
done
echo
echo "Raw output: $OUT"
